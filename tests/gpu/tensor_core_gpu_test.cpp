// The emulator's model of the tensor cores' numerics checked against a GPU's. Each test skips,
// saying why, when there is no GPU.
#include <gtest/gtest.h>

#include "tests/emu/fp8_accumulator_probe.h"

namespace tjops {
namespace {

// fp8 instructions cut every addend to 13 fraction bits of the largest, toward zero, as
// runtime/emu/tensor_core_numerics.h models it (fp8_accumulator_probe.h). A failure here
// means the model is wrong for this GPU: which of the probe's groups differ says how.
TEST(TensorCoresOnGpu, Fp8ChainsKeepWhatTheEmulatorModels) {
  if (Device::cuda_device_count() == 0) GTEST_SKIP() << "no GPU: " << tilejit::cuda_driver_status();
  Device& gpu = Device::cuda(0);
  const int cc = gpu.info().cc_major * 10 + gpu.info().cc_minor;
  if (cc != 89 && cc != 90) GTEST_SKIP() << "the model is of sm_89's and sm_90's fp8 tensor cores, not sm_" << cc << "'s";
  expect_fp8_accumulator_model(fp8_accumulator_probe("cuda", gpu));
}

}  // namespace
}  // namespace tjops
