// On a GPU: every registered kernel against its reference, the same kernels on the GPU and
// in the emulator agreeing with each other, cubin and PTX (driver JIT) loading, and dynamic
// shared memory above 48 KiB. Each test skips, saying why, when there is no GPU.
#include <cstdlib>

#include <gtest/gtest.h>

#include "ops/kernels/example_runs.h"
#include "ops/kernels/examples.h"
#include "ops/kernels/registry.h"
#include "runtime/jit.h"
#include "runtime/tensor.h"
#include "tests/large_shared_kernel.h"

namespace tilejit {
namespace {

#define REQUIRE_GPU()                                                              \
  do {                                                                             \
    if (Device::cuda_device_count() == 0) GTEST_SKIP() << "no GPU: " << cuda_driver_status(); \
  } while (0)

class OnGpu : public ::testing::TestWithParam<std::string> {};

TEST_P(OnGpu, MatchesReference) {
  REQUIRE_GPU();
  ops::ExampleRun run = ops::run_example(GetParam(), Device::cuda(0));
  EXPECT_TRUE(run.ok) << ops::describe(run);
}

TEST_P(OnGpu, AgreesWithTheEmulator) {
  REQUIRE_GPU();
  ops::ExampleOptions options;
  options.seed = 12345;
  options.small = true;
  options.keep_outputs = true;
  ops::ExampleRun gpu = ops::run_example(GetParam(), Device::cuda(0), options);
  ops::ExampleRun emu = ops::run_example(GetParam(), Device::emu(), options);
  ASSERT_EQ(gpu.outputs.size(), emu.outputs.size());
  for (size_t o = 0; o < gpu.outputs.size(); ++o) {
    ASSERT_EQ(gpu.outputs[o].size(), emu.outputs[o].size());
    for (size_t i = 0; i < gpu.outputs[o].size(); ++i) {
      double g = gpu.outputs[o][i], e = emu.outputs[o][i];
      ASSERT_LE(std::fabs(g - e), 2 * (gpu.atol + gpu.rtol * std::fabs(e))) << "output " << o << " element " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registered, OnGpu, ::testing::ValuesIn(ops::registered_kernel_names()),
                         [](const auto& info) { return info.param; });

// vector_add built with the binary format TILEJIT_CUBIN_TOOL asks for.
std::string loaded_format(const char* tool) {
  setenv("TILEJIT_CUBIN_TOOL", tool, 1);
  JitKernel add(ops::vector_add_kernel());
  Device& gpu = Device::cuda(0);
  Tensor x = Tensor::empty(gpu, DType::f32, {1000}), out = Tensor::empty(gpu, DType::f32, {1000});
  std::vector<float> ones(1000, 1.0f);
  x.copy_from_host(std::span<const float>(ones));
  add.launch(gpu.default_stream(), {1}, x, x, out, int32_t{1000});
  for (float v : out.to_host<float>()) EXPECT_EQ(v, 2.0f);
  const KernelArg args[] = {x, x, out, int32_t{1000}};
  std::string format = add.with().prepare(gpu, args)->report().binary_format;
  unsetenv("TILEJIT_CUBIN_TOOL");
  return format;
}

TEST(GpuModules, LoadCubinFromPtxas) {
  REQUIRE_GPU();
  EXPECT_EQ(loaded_format("ptxas"), "cubin");
}

TEST(GpuModules, LoadPtxThroughTheDriverJit) {
  REQUIRE_GPU();
  EXPECT_EQ(loaded_format("driver"), "ptx");
}

TEST(GpuSharedMemory, TransposeThroughMoreThan48KiB) {
  REQUIRE_GPU();
  testing_kernels::check_transpose_through_large_shared_memory(Device::cuda(0));
}

}  // namespace
}  // namespace tilejit
