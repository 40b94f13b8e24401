// Every op takes an optional stream; one of another device than its tensors is refused before
// any device work, with an error that names the op and both devices (the kernel would get
// pointers it cannot reach).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ops/attention.h"
#include "ops/fp8.h"
#include "ops/gemm.h"
#include "ops/int8.h"
#include "ops/norms.h"
#include "ops/scaled_dot.h"
#include "tests/emu/ops_test_util.h"
#include "tests/error_message.h"

namespace {

using namespace tjops;
using namespace tilejit::ops;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using tilejit::testing_util::error_of;

Tensor zeros_on_emu(DType d, std::vector<int64_t> shape) {
  Tensor t = Tensor::empty(emu(), d, std::move(shape));
  t.fill_bytes(0);
  return t;
}

TEST(OpStreams, AStreamOfAnotherDeviceIsRefused) {
  Stream& other = Device::by_name("emu:sm_80").default_stream();
  ASSERT_NE(&other.device(), &emu());
  const std::string refused = "the stream is on " + other.device().info().name + ", but ";
  auto expect_refused = [&](const std::string& op, const std::function<void()>& call) {
    EXPECT_THAT(error_of(call), testing::AllOf(StartsWith(op + ": "), HasSubstr(refused), HasSubstr("on emu")));
  };

  Tensor a = zeros_on_emu(DType::bf16, {8, 32}), b = zeros_on_emu(DType::bf16, {32, 16});
  expect_refused("gemm", [&] { gemm(a, b, {}, &other); });
  expect_refused("gemm", [&] { matmul(a, b, {}, &other); });
  expect_refused("scaled_dot", [&] { scaled_dot(a, b, std::nullopt, std::nullopt, {}, &other); });

  Tensor x = zeros_on_emu(DType::f32, {4, 64});
  expect_refused("mx_quantize", [&] { mx_quantize(x, &other); });
  expect_refused("quant_int8", [&] { quant_int8(x, &other); });
  expect_refused("quantize_rows_int8", [&] { quantize_rows_int8(x, &other); });
  expect_refused("q_matmul_int8", [&] { q_matmul_int8(x, zeros_on_emu(DType::f32, {64, 8}), &other); });

  Fp8ScalingState state(emu());
  expect_refused("fp8_quantize", [&] { fp8_quantize(x, state, {}, &other); });
  expect_refused("fp8_update_scale", [&] { fp8_update_scale(state, &other); });

  Tensor gamma = zeros_on_emu(DType::f32, {64}), beta = zeros_on_emu(DType::f32, {64});
  NormOptions keep;
  keep.store_statistics = true;
  expect_refused("layer_norm", [&] { layer_norm(x, gamma, beta, {}, &other); });
  expect_refused("rms_norm", [&] { rms_norm(x, gamma, {}, &other); });
  NormOutput layer = layer_norm(x, gamma, beta, keep), rms = rms_norm(x, gamma, keep);
  expect_refused("layer_norm_backward",
                 [&] { layer_norm_backward(x, x, *layer.mean, *layer.rsigma, gamma, {}, &other); });
  expect_refused("rms_norm_backward", [&] { rms_norm_backward(x, x, *rms.rsigma, gamma, {}, &other); });

  Tensor q = zeros_on_emu(DType::bf16, {1, 8, 2, 16}), kv = zeros_on_emu(DType::bf16, {1, 8, 2, 16});
  expect_refused("attention", [&] { attention(q, kv, kv, {}, &other); });
  AttentionOptions with_lse;
  with_lse.return_logsumexp = true;
  AttentionResult r = attention(q, kv, kv, with_lse);
  expect_refused("attention_backward",
                 [&] { attention_backward(q, kv, kv, r.out, r.out, *r.logsumexp, with_lse, &other); });
}

}  // namespace
