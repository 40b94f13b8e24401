// One gemm shape with every epilogue, one after another in one process, on the GPU: each runs
// its own kernel. The library builds them all from one lambda that captures the epilogue, and
// the GPU's kernel cache tells them apart by what op_kernel says was captured (dsl/kernel.h,
// BodyOrigin); the emulator does not use that cache, so only a GPU shows a kernel served for
// another epilogue.
#include <gtest/gtest.h>

#include "tests/ops/gemm_check.h"

namespace {

using namespace tjops;

TEST(GemmOnGpu, EachEpilogueOfOneShapeRunsItsOwnKernel) {
  if (Device::cuda_device_count() == 0) GTEST_SKIP() << "no GPU: " << tilejit::cuda_driver_status();
  TJ_SEEDED_RNG(rng);
  Tensor placeholder = Tensor::empty(Device::cuda(0), DType::f32, {1});
  for (int round = 0; round < 2; ++round) {  // the second round finds every kernel in the cache
    for (Activation act : {Activation::none, Activation::relu, Activation::gelu_tanh, Activation::gelu_erf,
                           Activation::silu}) {
      SCOPED_TRACE(std::string(tilejit::ops::activation_name(act)) + ", round " + std::to_string(round));
      GemmCase c{.device = "cuda:0"};
      c.options.activation = act;
      check_gemm(c, rng);
    }
    for (BiasAxis axis : {BiasAxis::row, BiasAxis::column}) {
      SCOPED_TRACE(std::string(axis == BiasAxis::row ? "bias per row" : "bias per column") + ", round " +
                   std::to_string(round));
      GemmCase c{.m = 40, .n = 40, .device = "cuda:0"};  // one bias length for both axes
      c.options.bias = placeholder, c.options.bias_axis = axis;
      check_gemm(c, rng);
    }
  }
}

}  // namespace
