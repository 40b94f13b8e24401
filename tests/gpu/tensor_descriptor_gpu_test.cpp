// Tensor descriptors on a GPU: the emulator's block-copy and block-store cases and the descriptor GEMM cases,
// on the GPU's own lowering (TMA and mbarriers on sm_90, global loads before). Each test
// skips, saying why, when there is no GPU.
#include <gtest/gtest.h>

#include "tests/emu/descriptor_copy_check.h"
#include "tests/emu/tensor_core_check.h"

namespace tjops {
namespace {

#define REQUIRE_GPU()                                                                                \
  do {                                                                                               \
    if (Device::cuda_device_count() == 0) GTEST_SKIP() << "no GPU: " << tilejit::cuda_driver_status(); \
  } while (0)

// One test per case, so that a case that faults is named (run each test in its own process,
// as scripts/device/each_test.sh does, and a fault fails only its own case).
class DescriptorCopyOnGpu : public ::testing::TestWithParam<CopyCase> {};

TEST_P(DescriptorCopyOnGpu, BlocksMatchTheTensorBitForBit) {
  REQUIRE_GPU();
  check_descriptor_copy(GetParam(), Device::cuda(0));
}

TEST_P(DescriptorCopyOnGpu, StoredBlocksLandInTheTensorBitForBit) {
  REQUIRE_GPU();
  check_descriptor_store(GetParam(), Device::cuda(0));
}

INSTANTIATE_TEST_SUITE_P(Gpu, DescriptorCopyOnGpu, ::testing::ValuesIn(copy_cases({"cuda"})),
                         [](const auto& info) { return case_name(info.param); });

TEST(DescriptorsOnGpu, GemmMatchesTheReference) {
  REQUIRE_GPU();
  const TensorCoreCase cases[] = {
      {DType::bf16, DType::bf16, "cuda", 0, 128, 128, 64, 8, 1000, 520, 776, 4, false, false, true},
      {DType::f16, DType::f16, "cuda", 0, 64, 64, 32, 4, 70, 72, 96, 3, true, false, true},
      {DType::i8, DType::i8, "cuda", 0, 128, 64, 64, 4, 130, 70, 144, 2, true, false, true},
      {DType::f8e4m3, DType::f8e5m2, "cuda", 0, 64, 128, 128, 8, 64, 128, 256, 3, true, false, true},
  };
  for (const TensorCoreCase& c : cases) {
    SCOPED_TRACE(tensor_core_case_name(c));
    check_tensor_core_gemm(c, Device::cuda(0));
  }
}

}  // namespace
}  // namespace tjops
