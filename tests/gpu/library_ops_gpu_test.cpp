// Every library op on the GPU: each op's run (ops/library_runs.h) at its small size, with
// fresh random inputs and poisoned outputs, checked against its double-precision reference.
// The same runs pass in the emulator (the cli test); a difference is a bug in one of the two.
#include <gtest/gtest.h>

#include "ops/library_runs.h"

namespace {

using namespace tilejit;

class LibraryOpOnGpu : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (Device::cuda_device_count() == 0) GTEST_SKIP() << "no GPU: " << cuda_driver_status();
  }
};

TEST_P(LibraryOpOnGpu, MatchesItsReference) {
  const ops::LibraryRun* run = ops::find_library_run(GetParam());
  ASSERT_NE(run, nullptr);
  ops::ExampleOptions options;
  options.small = true;
  ops::ExampleRun r = run->run(Device::cuda(0), options);
  EXPECT_TRUE(r.ok) << ops::describe(r);
}

std::vector<std::string> op_names() {
  std::vector<std::string> names;
  for (const ops::LibraryRun& run : ops::library_runs()) names.push_back(run.op);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Ops, LibraryOpOnGpu, ::testing::ValuesIn(op_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
