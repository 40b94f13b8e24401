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

std::vector<std::string> registered_names() {
  std::vector<std::string> names;
  for (auto& k : ops::registered_kernels()) names.push_back(k.kernel.name());
  return names;
}

INSTANTIATE_TEST_SUITE_P(Registered, ExampleKernel, ::testing::ValuesIn(registered_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tilejit
