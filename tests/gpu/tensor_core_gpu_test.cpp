// The emulator's model of the tensor cores' numerics checked against a GPU's. Each test skips,
// saying why, when there is no GPU.
#include <gtest/gtest.h>

#include "tests/emu/fp8_accumulator_probe.h"

namespace tjops {
namespace {

// fp8 instructions chained into one accumulator keep 13 fraction bits of the sum between
// them, cut toward zero, as runtime/emu/tensor_core_numerics.h models it (the probe's exact
// sums need 14). A failure here means the model is wrong for this GPU.
TEST(TensorCoresOnGpu, Fp8ChainsKeepWhatTheEmulatorModels) {
  if (Device::cuda_device_count() == 0) GTEST_SKIP() << "no GPU: " << tilejit::cuda_driver_status();
  Device& gpu = Device::cuda(0);
  if (gpu.info().cc_major * 10 + gpu.info().cc_minor < 89) GTEST_SKIP() << "fp8 tensor cores need sm_89";
  expect_fp8_accumulator_model(fp8_accumulator_probe("cuda", gpu));
}

}  // namespace
}  // namespace tjops
