// Every argument error of attention and attention_backward, with its message: each starts
// with the op's name and names the offending argument, dims or dtypes. Nothing runs on the
// device (the checks come first).
#include <gtest/gtest.h>

#include <gmock/gmock.h>
#include <dlpack/dlpack.h>
#include <fmt/format.h>

#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/error_message.h"
#include "tests/ops/attention_test_util.h"

namespace tjops {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using tilejit::testing_util::error_of;

Tensor empty(DType d, std::vector<int64_t> shape, Device& device = emu()) {
  return Tensor::empty(device, d, std::move(shape));
}

// q (2, 5, 4, 16), k and v (2, 7, 2, 16), bf16.
struct Args {
  Tensor q = empty(DType::bf16, {2, 5, 4, 16});
  Tensor k = empty(DType::bf16, {2, 7, 2, 16});
  Tensor v = empty(DType::bf16, {2, 7, 2, 16});
  AttentionOptions options;
  std::string forward() const {
    return error_of([&] { tilejit::ops::attention(q, k, v, options); });
  }
};

#define EXPECT_ATTENTION_ERROR(args, ...) \
  EXPECT_THAT((args).forward(), AllOf(StartsWith("attention: "), __VA_ARGS__))

TEST(AttentionErrors, Ranks) {
  Args a;
  a.q = empty(DType::bf16, {5, 64});
  EXPECT_ATTENTION_ERROR(a, HasSubstr("q must have rank 3 to 4"), HasSubstr("bf16[5, 64]"));
  Args b;
  b.k = empty(DType::bf16, {7, 2, 16});
  EXPECT_ATTENTION_ERROR(b, HasSubstr("k must have q's rank 4"), HasSubstr("bf16[7, 2, 16]"));
  Args c;
  c.v = empty(DType::bf16, {1, 2, 7, 2, 16});
  EXPECT_ATTENTION_ERROR(c, HasSubstr("v must have q's rank 4"));
}

TEST(AttentionErrors, Dtypes) {
  Args a;
  a.q = empty(DType::i32, {2, 5, 4, 16});
  a.k = empty(DType::i32, {2, 7, 2, 16});
  a.v = empty(DType::i32, {2, 7, 2, 16});
  EXPECT_ATTENTION_ERROR(a, HasSubstr("q must be f16, bf16 or f32, but is i32[2, 5, 4, 16]"));
  Args b;
  b.k = empty(DType::f16, {2, 7, 2, 16});
  EXPECT_ATTENTION_ERROR(b, HasSubstr("q and k must have one dtype"), HasSubstr("f16[2, 7, 2, 16]"));
  Args c;
  c.v = empty(DType::f32, {2, 7, 2, 16});
  EXPECT_ATTENTION_ERROR(c, HasSubstr("q and v must have one dtype"), HasSubstr("f32[2, 7, 2, 16]"));
}

TEST(AttentionErrors, Shapes) {
  Args a;
  a.v = empty(DType::bf16, {2, 6, 2, 16});
  EXPECT_ATTENTION_ERROR(a, HasSubstr("k and v must have one shape"), HasSubstr("bf16[2, 6, 2, 16]"));
  Args b;
  b.k = b.v = empty(DType::bf16, {3, 7, 2, 16});
  EXPECT_ATTENTION_ERROR(b, HasSubstr("one batch size"), HasSubstr("bf16[3, 7, 2, 16]"));
  Args c;
  c.k = c.v = empty(DType::bf16, {2, 7, 2, 24});
  EXPECT_ATTENTION_ERROR(c, HasSubstr("one head dim H"), HasSubstr("bf16[2, 7, 2, 24]"));
  Args d;
  d.k = d.v = empty(DType::bf16, {2, 7, 3, 16});
  EXPECT_ATTENTION_ERROR(d, HasSubstr("head count N = 4 must be a multiple of k's head count K = 3"));
  Args e;
  e.k = e.v = empty(DType::bf16, {2, 0, 2, 16});
  EXPECT_ATTENTION_ERROR(e, HasSubstr("at least one key (S = 0"));
  Args f;
  f.k = f.v = empty(DType::bf16, {2, 7, 0, 16});
  EXPECT_ATTENTION_ERROR(f, HasSubstr("k's head count K = 0"));
}

TEST(AttentionErrors, HeadDims) {
  for (int64_t h : {12, 4, 264, 512}) {
    Args a;
    a.q = empty(DType::bf16, {2, 5, 4, h});
    a.k = a.v = empty(DType::bf16, {2, 7, 2, h});
    EXPECT_ATTENTION_ERROR(a, HasSubstr("head dim H = " + std::to_string(h) + " "),
                           HasSubstr("must be a multiple of 8 from 8 to 256"));
  }
}

TEST(AttentionErrors, HeadDimMustBeContiguous) {
  Args a;
  a.q = empty(DType::bf16, {2, 5, 16, 4}).permute({0, 1, 3, 2});  // (2, 5, 4, 16), head stride 4
  EXPECT_ATTENTION_ERROR(a, HasSubstr("q (bf16[2, 5, 4, 16] on emu) must have stride 1 along its last (head) dim"),
                         HasSubstr("[320, 64, 1, 4]"));
  Args b;
  b.v = empty(DType::bf16, {2, 7, 32, 2}).permute({0, 1, 3, 2}).slice(3, 0, 16);
  EXPECT_ATTENTION_ERROR(b, HasSubstr("v (bf16[2, 7, 2, 16] on emu) must have stride 1"));
}

TEST(AttentionErrors, ScaleAndWindow) {
  Args a;
  a.options.scale = std::numeric_limits<double>::infinity();
  EXPECT_ATTENTION_ERROR(a, HasSubstr("scale must be a finite f32, but is inf"));
  a.options.scale = 1e39;  // finite as a double, not as the f32 the kernels scale by
  EXPECT_ATTENTION_ERROR(a, HasSubstr("scale must be a finite f32, but is 1e+39"));
  for (auto window : {std::pair<int64_t, int64_t>{-1, 3}, std::pair<int64_t, int64_t>{2, -5}}) {
    Args b;
    b.options.local_window = window;
    EXPECT_ATTENTION_ERROR(b, HasSubstr("local_window (left, right) = (" + std::to_string(window.first) + ", " +
                                        std::to_string(window.second) + ") must not be negative"));
  }
}

TEST(AttentionErrors, SequenceLengths) {
  Args a;
  a.options.q_seqlens = empty(DType::i64, {2});
  EXPECT_ATTENTION_ERROR(a, HasSubstr("q_seqlens must be i32, but is i64[2]"));
  Args b;
  b.options.kv_seqlens = empty(DType::i32, {3});
  EXPECT_ATTENTION_ERROR(b, HasSubstr("kv_seqlens must have shape [2], but is i32[3]"));
  Args c;
  c.options.kv_seqlens = empty(DType::i32, {2, 1});
  EXPECT_ATTENTION_ERROR(c, HasSubstr("kv_seqlens must have shape [2], but is i32[2, 1]"));
  Args d;
  d.options.q_seqlens = empty(DType::i32, {2, 2}).select(1, 0);  // stride 2
  EXPECT_ATTENTION_ERROR(d, HasSubstr("q_seqlens must be contiguous"));
}

TEST(AttentionErrors, BiasAndMask) {
  struct Case {
    std::optional<Tensor> AttentionOptions::*option;
    DType dtype;
    std::vector<int64_t> shape;
    std::string message;
  };
  const auto bias = &AttentionOptions::bias, mask = &AttentionOptions::mask;
  const Case cases[] = {
      {bias, DType::f32, {4, 5, 7}, "bias must have rank 4, but is f32[4, 5, 7]"},
      {bias, DType::f32, {1, 3, 5, 7},
       "bias (f32[1, 3, 5, 7] on emu) must be broadcastable to (B, N, T, S) = [2, 4, 5, 7]: its head dim 3 is "
       "neither 4 nor 1"},
      {bias, DType::f32, {2, 4, 5, 6}, "its key dim 6 is neither 7 nor 1"},
      {bias, DType::f32, {3, 1, 1, 7}, "its batch dim 3 is neither 2 nor 1"},
      {bias, DType::f32, {1, 1, 4, 7}, "its query dim 4 is neither 5 nor 1"},
      {bias, DType::i8, {1, 1, 5, 7}, "bias must be f16, bf16 or f32, but is i8[1, 1, 5, 7]"},
      {mask, DType::f32, {1, 1, 5, 7}, "mask must be i1, but is f32[1, 1, 5, 7]"},
      {mask, DType::i1, {5, 7}, "mask must have rank 4, but is i1[5, 7]"},
      {mask, DType::i1, {2, 2, 5, 7}, "mask (i1[2, 2, 5, 7] on emu) must be broadcastable"},
  };
  for (const Case& c : cases) {
    Args a;
    a.options.*c.option = empty(c.dtype, c.shape);
    EXPECT_ATTENTION_ERROR(a, HasSubstr(c.message));
  }
}

// T and S stay below 2^30, so the kernels' band arithmetic (up to T + S) fits 32 bits; B * N
// below 2^31. Views whose rows repeat one row (stride 0, as DLPack allows) make them cheaply.
TEST(AttentionErrors, LengthsBeyondTheKernelsIndexing) {
  auto repeated_rows = [](int64_t rows, int64_t heads) {
    DLManagedTensor* one = empty(DType::bf16, {16}).to_dlpack();
    int64_t shape[4] = {1, rows, heads, 16}, strides[4] = {0, 0, 0, 1};  // copied by from_dlpack
    one->dl_tensor.ndim = 4, one->dl_tensor.shape = shape, one->dl_tensor.strides = strides;
    return Tensor::from_dlpack(one);
  };
  for (auto [t, s] : {std::pair{int64_t{1} << 30, int64_t{16}}, std::pair{int64_t{16}, int64_t{1} << 30}}) {
    Args a;
    a.q = repeated_rows(t, 2), a.k = repeated_rows(s, 2), a.v = repeated_rows(s, 2);
    EXPECT_ATTENTION_ERROR(a, HasSubstr("T and S must be below 2^30 and B * N below 2^31"),
                           HasSubstr(fmt::format("T = {}, S = {}", t, s)));
  }
  Args heads;
  heads.q = repeated_rows(16, int64_t{1} << 31), heads.k = repeated_rows(16, 1), heads.v = repeated_rows(16, 1);
  EXPECT_ATTENTION_ERROR(heads, HasSubstr("B * N below 2^31"), HasSubstr("N = 2147483648"));
}

TEST(AttentionErrors, Devices) {
  Device& other = Device::by_name("emu:sm_80");
  const std::pair<std::function<void(Args&)>, const char*> cases[] = {
      {[&](Args& a) { a.k = empty(DType::bf16, {2, 7, 2, 16}, other); }, "q and k must be on one device"},
      {[&](Args& a) { a.v = empty(DType::bf16, {2, 7, 2, 16}, other); }, "q and v must be on one device"},
      {[&](Args& a) { a.options.bias = empty(DType::f32, {1, 1, 5, 7}, other); }, "bias and q must be on one device"},
      {[&](Args& a) { a.options.mask = empty(DType::i1, {1, 1, 5, 7}, other); }, "mask and q must be on one device"},
      {[&](Args& a) { a.options.q_seqlens = empty(DType::i32, {2}, other); }, "q_seqlens and q must be on one device"},
      {[&](Args& a) { a.options.kv_seqlens = empty(DType::i32, {2}, other); },
       "kv_seqlens and q must be on one device"},
  };
  for (const auto& [set, message] : cases) {
    Args a;
    set(a);
    EXPECT_ATTENTION_ERROR(a, HasSubstr(message));
  }
}

TEST(AttentionErrors, Backward) {
  Args a;
  Tensor out = empty(DType::bf16, {2, 5, 4, 16}), dout = out, lse = empty(DType::f32, {2, 4, 5});
  auto backward = [&](const Tensor& o, const Tensor& g, const Tensor& l) {
    return error_of([&] { tilejit::ops::attention_backward(a.q, a.k, a.v, o, g, l, a.options); });
  };
  auto expect = [](const std::string& message, const std::string& what) {
    EXPECT_THAT(message, AllOf(StartsWith("attention_backward: "), HasSubstr(what)));
  };
  expect(backward(empty(DType::bf16, {2, 5, 4, 8}), dout, lse), "out must have shape [2, 5, 4, 16]");
  expect(backward(out, empty(DType::f16, {2, 5, 4, 16}), lse), "dout must be bf16, but is f16[2, 5, 4, 16]");
  expect(backward(out, empty(DType::bf16, {2, 5, 16, 4}).permute({0, 1, 3, 2}), lse),
         "dout (bf16[2, 5, 4, 16] on emu) must have stride 1 along its last (head) dim");
  expect(backward(out, dout, empty(DType::f32, {2, 5, 4})), "logsumexp must have shape [2, 4, 5]");
  expect(backward(out, dout, empty(DType::bf16, {2, 4, 5})), "logsumexp must be f32, but is bf16[2, 4, 5]");
  expect(backward(out, dout, empty(DType::f32, {2, 5, 4}).permute({0, 2, 1})), "logsumexp must be contiguous");
  expect(backward(empty(DType::bf16, {2, 5, 4, 16}, Device::by_name("emu:sm_80")), dout, lse),
         "out and q must be on one device");
  expect(backward(out, dout, empty(DType::f32, {2, 4, 5}, Device::by_name("emu:sm_80"))),
         "logsumexp and q must be on one device");
  a.options.mask = empty(DType::i1, {1, 1, 5, 6});
  expect(backward(out, dout, lse), "its key dim 6 is neither 7 nor 1");
}

}  // namespace
}  // namespace tjops
