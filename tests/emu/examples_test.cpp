// Every registered example kernel in the emulator against its double-precision reference,
// with fresh random inputs, poisoned outputs and problem sizes that are not tile multiples.
#include <gtest/gtest.h>

#include "ops/kernels/example_runs.h"
#include "ops/kernels/registry.h"

namespace tilejit {
namespace {

class ExampleKernel : public ::testing::TestWithParam<std::string> {};

TEST_P(ExampleKernel, MatchesReferenceInEmulator) {
  ops::ExampleRun run = ops::run_example(GetParam(), Device::emu());
  EXPECT_TRUE(run.ok) << GetParam() << " " << run.problem << ": max error " << run.max_abs_error;
}

INSTANTIATE_TEST_SUITE_P(Registered, ExampleKernel, ::testing::ValuesIn(ops::registered_kernel_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tilejit
