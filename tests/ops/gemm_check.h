// gemm checked against a long-double reference of ops/gemm.h's definition: a problem in
// logical layout, run on fresh random inputs with a poisoned output, every element checked.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <numbers>
#include <optional>
#include <string>
#include <vector>

#include "tests/emu/ops_test_util.h"
#include "ops/gemm.h"

namespace tjops {

using tilejit::ops::Activation;
using tilejit::ops::BiasAxis;
using tilejit::ops::GemmOptions;

// A problem in logical layout: A (batch_a, M, K), B (batch_b, K, N), batch 1 broadcasts.
struct GemmCase {
  DType a = DType::bf16, b = DType::bf16;
  int64_t batch_a = 1, batch_b = 1, m = 37, n = 45, k = 40;
  bool rank3 = false;  // operands with a batch dim even when it is 1
  GemmOptions options = {};
  std::optional<DType> out_dtype = {};
  std::string device = "emu";
  // Operands drawn from [0, hi) instead of (-hi, hi): the sums grow with K, as a long dot's do
  // when its terms agree in sign.
  bool positive = false;
  // Operands drawn as integers in [-4, 4]. The tensor cores sum fp8 products of these exactly
  // (each K block, and a chain of fewer than 32 k32 instructions), so an fp8 product is held to
  // an f32 sum's error and a lost or doubled product shows.
  bool small_integers = false;
  // Called with the operands and options just before the call, to look at how gemm will run them.
  std::function<void(const Tensor& a, const Tensor& b, const tilejit::ops::GemmOptions& o)> before_launch = {};
  // How the case computes out; tilejit::ops::gemm when not set.
  std::function<void(const Tensor& a, const Tensor& b, const Tensor& out, const tilejit::ops::GemmOptions& o)> launch = {};
};

struct Inputs {
  Host a, b, c, bias, row_scale, col_scale, residual;
  float a_scale = 1, b_scale = 1;
};

inline LD activate(Activation act, LD x) {
  switch (act) {
    case Activation::none: return x;
    case Activation::relu: return std::max<LD>(x, 0);
    case Activation::gelu_tanh: {
      LD k = std::sqrt(2.0L / std::numbers::pi_v<LD>);
      return 0.5L * x * (1 + std::tanh(k * (x + 0.044715L * x * x * x)));
    }
    case Activation::gelu_erf: return 0.5L * x * (1 + std::erf(x / std::sqrt(2.0L)));
    case Activation::silu: return x / (1 + std::exp(-x));
  }
  return x;
}

// The relative error of the accumulator against the sum of |products|. fp8 on the tensor
// cores adds each K block's product (at most four k32 instructions) into f32, or chains all
// of K with fast accumulation.
inline double accumulation_error(const GemmCase& c) {
  if (c.a == DType::i8) return 0;
  if (c.a == DType::f32 && c.options.precision == dsl::Precision::tf32) return 2e-3;
  double f32_sum = 2e-6 + static_cast<double>(c.k) * 6e-8;
  if (!is_fp8(c.a)) return f32_sum;
  if (c.small_integers && (!c.options.fp8_fast_accumulation || c.k < 1024)) return f32_sum;
  return f32_sum + fp8_chain_error(c.options.fp8_fast_accumulation ? (c.k + 31) / 32 : 4);
}

// Half the spacing of the output format's subnormals: the rounding error of tiny values.
inline LD subnormal_rounding(DType out) {
  switch (out) {
    case DType::f16: return std::ldexp(1.0L, -25);
    case DType::f8e4m3: return std::ldexp(1.0L, -10);
    case DType::f8e5m2: return std::ldexp(1.0L, -17);
    default: return 0;
  }
}

// The relative rounding error of the output format.
inline double output_rounding(DType out) {
  switch (out) {
    case DType::f32: return 2e-7;
    case DType::f16: return 1e-3;
    case DType::bf16: return 8e-3;
    case DType::f8e4m3: return 0.07;
    case DType::f8e5m2: return 0.13;
    default: return 0;
  }
}

inline std::vector<int64_t> matrix_shape(bool batched, int64_t batch, int64_t rows, int64_t cols) {
  return batched ? std::vector<int64_t>{batch, rows, cols} : std::vector<int64_t>{rows, cols};
}

// Row-major host data of a (batch, rows, cols) matrix, transposed per batch when asked.
inline Host layout(const Host& h, int64_t batch, int64_t rows, int64_t cols, bool transpose) {
  if (!transpose) return h;
  Host t(h.dtype, h.size());
  for (int64_t z = 0; z < batch; ++z)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        t.set_raw(size_t(z * rows * cols + j * rows + i), h.raw(size_t(z * rows * cols + i * cols + j)));
  return t;
}

// Runs gemm on fresh random inputs and checks every output element. Returns the largest error
// of an element against the sum of its |products| (times the scales), which is the
// accumulator's where the output is f32 and the epilogue adds nothing.
inline double check_gemm(GemmCase c, Rng& rng) {
  Device& dev = Device::by_name(c.device);
  GemmOptions& o = c.options;
  bool batched = c.rank3 || c.batch_a > 1 || c.batch_b > 1;
  int64_t batch = std::max(c.batch_a, c.batch_b), m = c.m, n = c.n, k = c.k;
  double hi = c.a == DType::i8 ? 127 : c.a == DType::f8e4m3 || c.a == DType::f8e5m2 ? 8 : 2;
  Inputs in;
  double lo = c.positive ? 0 : -hi;
  auto operand = [&](DType d, int64_t count) {
    if (!c.small_integers) return random_host(d, size_t(count), rng, lo, hi);
    Host h(d, size_t(count));
    for (size_t i = 0; i < h.size(); ++i) h.set(i, static_cast<double>(rng.integer(-4, 4)));
    return h;
  };
  in.a = operand(c.a, c.batch_a * m * k);
  in.b = operand(c.b, c.batch_b * k * n);
  Tensor a = upload(layout(in.a, c.batch_a, m, k, o.transpose_a),
                    matrix_shape(batched, c.batch_a, o.transpose_a ? k : m, o.transpose_a ? m : k), dev);
  Tensor b = upload(layout(in.b, c.batch_b, k, n, o.transpose_b),
                    matrix_shape(batched, c.batch_b, o.transpose_b ? n : k, o.transpose_b ? k : n), dev);
  std::vector<int64_t> out_shape = matrix_shape(batched, batch, m, n);
  size_t outputs = size_t(batch * m * n);
  if (o.beta != 0) {
    in.c = random_host(DType::f32, outputs, rng, -2, 2);
    o.c = upload(in.c, out_shape, dev);
  }
  if (o.bias) {
    int64_t len = o.bias_axis == BiasAxis::row ? m : n;
    in.bias = random_host(o.bias->dtype(), size_t(len), rng, -1, 1);
    o.bias = upload(in.bias, {len}, dev);
  }
  if (o.row_scale) in.row_scale = random_host(DType::f32, size_t(m), rng, 0.1, 2), o.row_scale = upload(in.row_scale, {m}, dev);
  if (o.col_scale) in.col_scale = random_host(DType::f32, size_t(n), rng, 0.1, 2), o.col_scale = upload(in.col_scale, {n}, dev);
  if (o.residual) {
    in.residual = random_host(o.residual->dtype(), outputs, rng, -1, 1);
    o.residual = upload(in.residual, out_shape, dev);
  }
  if (o.a_scale_inv) {
    in.a_scale = 0.25f, in.b_scale = 3.0f;
    Host sa(DType::f32, 1), sb(DType::f32, 1);
    sa.set(0, in.a_scale), sb.set(0, in.b_scale);
    o.a_scale_inv = upload(sa, {1}, dev), o.b_scale_inv = upload(sb, {1}, dev);
  }
  if (c.out_dtype) o.out_dtype = c.out_dtype;
  DType out_dtype = o.out_dtype.value_or(c.a == DType::i8 ? DType::i32
                                         : c.a == DType::f8e4m3 || c.a == DType::f8e5m2 ? DType::bf16 : c.a);
  Tensor out = poisoned(out_dtype, out_shape, dev);
  if (c.before_launch) c.before_launch(a, b, o);
  if (c.launch) c.launch(a, b, out, o);
  else tilejit::ops::gemm(a, b, out, o);

  std::vector<LD> want(outputs), allowed(outputs), magnitudes(outputs);
  double acc_error = accumulation_error(c), rounding = output_rounding(out_dtype);
  for (int64_t z = 0; z < batch; ++z)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        LD sum = 0, magnitude = 0;
        for (int64_t t = 0; t < k; ++t) {
          LD p = in.a.get(size_t((c.batch_a > 1 ? z : 0) * m * k + i * k + t)) *
                 in.b.get(size_t((c.batch_b > 1 ? z : 0) * k * n + t * n + j));
          sum += p, magnitude += std::fabs(p);
        }
        size_t at = size_t(z * m * n + i * n + j);
        LD factor = static_cast<LD>(in.a_scale) * in.b_scale * o.alpha;
        if (o.row_scale) factor *= in.row_scale.get(size_t(i));
        if (o.col_scale) factor *= in.col_scale.get(size_t(j));
        LD v = sum * factor;
        if (o.beta != 0) v += static_cast<LD>(o.beta) * in.c.get(at);
        if (o.bias) v += in.bias.get(size_t(o.bias_axis == BiasAxis::row ? i : j));
        v = activate(o.activation, v);
        if (o.residual) v += in.residual.get(at);
        want[at] = v;
        magnitudes[at] = magnitude * std::fabs(factor);
        // The accumulator's error carried through the epilogue (every activation's slope is
        // below 1.2), then the output's rounding.
        allowed[at] = 1.2L * acc_error * magnitude * std::fabs(factor) + rounding * std::fabs(v) +
                      subnormal_rounding(out_dtype) + 1e-6L;
      }
  Host got = download(out);
  std::vector<LD> got_values = got.values();
  std::vector<LD> scale(outputs);
  for (size_t i = 0; i < outputs; ++i) scale[i] = allowed[i];
  expect_scaled("gemm " + name_of(c.a) + " x " + name_of(c.b) + " -> " + name_of(out_dtype), got_values, want, scale, 1.0,
                [&](size_t i) { return "output element " + std::to_string(i); });
  LD worst = 0;
  for (size_t i = 0; i < outputs; ++i)
    if (magnitudes[i] > 0) worst = std::max(worst, std::fabs(got_values[i] - want[i]) / magnitudes[i]);
  return static_cast<double>(worst);
}

}  // namespace tjops
