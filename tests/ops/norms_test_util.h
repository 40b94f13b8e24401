// Helpers for the norm tests: LayerNorm / RMSNorm references in long double straight from
// SEMANTICS.md ("Normalization"), the backward as the analytic Jacobian of that definition
// (dx_j = sum_i dy_i dy_i/dx_j, no simplification shared with the kernels), and one check of
// an op call's every output, fp8 copy included, against them.
#pragma once

#include <fmt/ranges.h>

#include <optional>

#include "ops/norms.h"
#include "tests/ops/fp8_test_util.h"

namespace tjnorms {

using namespace tjfp8;

struct NormCase {
  bool layer = true;
  std::vector<int64_t> shape;
  DType x = DType::f32, gamma = DType::f32;
  bool zero_centered = false;
  float eps = 1e-6f;
  std::string describe() const {
    return fmt::format("{} x {}{} gamma {}{} eps {}", layer ? "layer_norm" : "rms_norm", name_of(x), shape_text(),
                       name_of(gamma), zero_centered ? " zero-centered" : "", eps);
  }
  std::string shape_text() const { return fmt::format("[{}]", fmt::join(shape, ", ")); }
  int64_t hidden() const { return shape.back(); }
  int64_t rows() const {
    int64_t r = 1;
    for (size_t i = 0; i + 1 < shape.size(); ++i) r *= shape[i];
    return r;
  }
  std::vector<int64_t> leading() const { return {shape.begin(), shape.end() - 1}; }
};

// Every (x, gamma) dtype pair the ops take.
inline constexpr std::pair<DType, DType> kNormDTypes[] = {{DType::f32, DType::f32},
                                                          {DType::f16, DType::f32},
                                                          {DType::f16, DType::f16},
                                                          {DType::bf16, DType::f32},
                                                          {DType::bf16, DType::bf16}};

// A test name for the case: norm, dtypes, shape.
inline std::string case_name(const NormCase& c) {
  std::string shape;
  for (int64_t d : c.shape) shape += (shape.empty() ? "" : "x") + std::to_string(d);
  return fmt::format("{}_{}_gamma_{}_{}{}", c.layer ? "layer" : "rms", name_of(c.x), name_of(c.gamma), shape,
                     c.zero_centered ? "_zero_centered" : "");
}

// Relative tolerance of results stored in `d`, against the magnitude of their terms.
inline double norm_tol(DType d) {
  switch (d) {
    case DType::f32:
      return 2e-5;
    case DType::f16:
      return 2e-3;
    default:
      return 1e-2;
  }
}

// Expects got ~ want for results stored in `d`: within norm_tol(d) of `scale` (the magnitude
// of the terms), plus the spacing of d's subnormals (the rounding of results that small).
inline void expect_stored(const std::string& what, const Host& got, const std::vector<LD>& want,
                          const std::vector<LD>& scale, const std::function<std::string(size_t)>& context = {}) {
  const FloatFormat f = format_of(got.dtype);
  const LD floor = std::ldexp(1.0L, f.emin() - f.mant_bits) / norm_tol(got.dtype);
  std::vector<LD> widened(scale);
  for (LD& s : widened) s += floor;
  expect_scaled(what + " [" + name_of(got.dtype) + "]", got.values(), want, widened, norm_tol(got.dtype), context);
}

// The inputs of one case: x (rows offset from zero, one constant row when there are several),
// gamma, beta, dy.
struct NormInputs {
  Host x, gamma, beta, dy;
};
inline NormInputs norm_inputs(const NormCase& c, Rng& rng) {
  const auto n = static_cast<size_t>(c.rows() * c.hidden()), h = static_cast<size_t>(c.hidden());
  NormInputs in{Host(c.x, n), random_host(c.gamma, h, rng, -1.5, 1.5), random_host(c.gamma, h, rng, -1, 1),
                random_host(c.x, n, rng, -1, 1)};
  for (size_t r = 0; r < static_cast<size_t>(c.rows()); ++r) {
    const double offset = rng.uniform(-2, 2), spread = std::ldexp(1.0, static_cast<int>(rng.integer(-3, 3)));
    const bool constant = r == 1;  // exactly representable, so the variance is exactly 0
    for (size_t j = 0; j < h; ++j) in.x.set(r * h + j, constant ? 0.75 : offset + spread * rng.uniform(-1, 1));
  }
  return in;
}

inline LD effective_gamma(const NormCase& c, const Host& gamma, size_t j) {
  return gamma.get(j) + (c.zero_centered ? 1 : 0);
}

// One row's statistics: mean (0 for RMSNorm) and rsigma, and mean_magnitude, the mean |x| of
// the row (0 for RMSNorm), which the error of an f32 mean follows.
struct RowStats {
  LD mean = 0, rsigma = 0, mean_magnitude = 0;
};
inline RowStats row_stats(const NormCase& c, const std::vector<LD>& x) {
  RowStats s;
  LD sum = 0, magnitudes = 0, squares = 0;
  for (LD v : x) sum += v, magnitudes += std::fabs(v);
  if (c.layer) s.mean = sum / x.size(), s.mean_magnitude = magnitudes / x.size();
  for (LD v : x) squares += (v - s.mean) * (v - s.mean);
  s.rsigma = 1 / std::sqrt(squares / x.size() + static_cast<LD>(c.eps));
  return s;
}
// The magnitude of xhat's terms, which its error follows: (|x| + mean |x|) * rsigma. The f32
// mean is a sum of the row's terms, so its rounding error follows their mean magnitude, not
// |mean|: a row of large values of either sign has a small mean known only to about
// ulp(mean |x|), and x - mean near such a mean carries that error.
inline LD magnitude(LD x, const RowStats& s) { return (std::fabs(x) + s.mean_magnitude) * s.rsigma; }

inline std::vector<LD> row_of(const NormCase& c, const Host& x, size_t r) {
  const auto h = static_cast<size_t>(c.hidden());
  std::vector<LD> row(h);
  for (size_t j = 0; j < h; ++j) row[j] = x.get(r * h + j);
  return row;
}

// y of one row, and the magnitude its error follows: magnitude(x) * |g| + |beta| (x - mean
// cancels where x is near the mean, but the f32 mean's rounding error does not).
struct RowOutput {
  std::vector<LD> y, scale;
};
inline RowOutput norm_row(const NormCase& c, const std::vector<LD>& x, const NormInputs& in) {
  const RowStats s = row_stats(c, x);
  RowOutput out;
  for (size_t j = 0; j < x.size(); ++j) {
    const LD g = effective_gamma(c, in.gamma, j);
    const LD beta = c.layer ? in.beta.get(j) : 0;
    out.y.push_back((x[j] - s.mean) * s.rsigma * g + beta);
    out.scale.push_back(magnitude(x[j], s) * std::fabs(g) + std::fabs(beta));
  }
  return out;
}

struct ForwardReference {
  std::vector<LD> y, y_scale;
  std::vector<LD> mean, rsigma, mean_scale;  // mean_scale: mean |x| of the row
};
inline ForwardReference forward_reference(const NormCase& c, const NormInputs& in) {
  ForwardReference ref;
  for (size_t r = 0; r < static_cast<size_t>(c.rows()); ++r) {
    const std::vector<LD> x = row_of(c, in.x, r);
    const RowStats s = row_stats(c, x);
    const RowOutput out = norm_row(c, x, in);
    ref.y.insert(ref.y.end(), out.y.begin(), out.y.end());
    ref.y_scale.insert(ref.y_scale.end(), out.scale.begin(), out.scale.end());
    ref.mean.push_back(s.mean);
    ref.rsigma.push_back(s.rsigma);
    ref.mean_scale.push_back(s.mean_magnitude);
  }
  return ref;
}

// dy_i/dx_j of one row, from the definition: with xhat = (x - mean) * rsigma,
// LayerNorm: g_i * rsigma * (delta_ij - 1/H - xhat_i xhat_j / H); RMSNorm: the same without 1/H.
struct BackwardReference {
  std::vector<LD> dx, dx_scale, dgamma, dgamma_scale, dbeta, dbeta_scale;
};
inline BackwardReference backward_reference(const NormCase& c, const NormInputs& in) {
  const auto h = static_cast<size_t>(c.hidden());
  BackwardReference ref;
  ref.dgamma.assign(h, 0), ref.dgamma_scale.assign(h, 0), ref.dbeta.assign(h, 0), ref.dbeta_scale.assign(h, 0);
  std::vector<LD> xhat(h), dy_g(h), xhat_magnitude(h);
  for (size_t r = 0; r < static_cast<size_t>(c.rows()); ++r) {
    const std::vector<LD> x = row_of(c, in.x, r);
    const RowStats s = row_stats(c, x);
    LD sum_dy_g = 0, sum_dy_g_xhat = 0;
    for (size_t i = 0; i < h; ++i) {
      xhat[i] = (x[i] - s.mean) * s.rsigma;
      xhat_magnitude[i] = magnitude(x[i], s);
      dy_g[i] = in.dy.get(r * h + i) * effective_gamma(c, in.gamma, i);
      sum_dy_g += std::fabs(dy_g[i]);
      sum_dy_g_xhat += std::fabs(dy_g[i]) * xhat_magnitude[i];
      ref.dgamma[i] += in.dy.get(r * h + i) * xhat[i];
      ref.dgamma_scale[i] += std::fabs(in.dy.get(r * h + i)) * xhat_magnitude[i];
      ref.dbeta[i] += in.dy.get(r * h + i);
      ref.dbeta_scale[i] += std::fabs(in.dy.get(r * h + i));
    }
    const LD centering = c.layer ? LD(1) / h : 0;
    for (size_t j = 0; j < h; ++j) {
      LD dx = 0;
      for (size_t i = 0; i < h; ++i) dx += dy_g[i] * s.rsigma * ((i == j ? 1 : 0) - centering - xhat[i] * xhat[j] / h);
      ref.dx.push_back(dx);
      ref.dx_scale.push_back(s.rsigma *
                             (std::fabs(dy_g[j]) + centering * sum_dy_g + xhat_magnitude[j] * sum_dy_g_xhat / h));
    }
  }
  return ref;
}

inline NormOptions norm_options(const NormCase& c, bool statistics, Fp8ScalingState* fp8 = nullptr,
                                bool update_scale = true) {
  NormOptions o;
  o.eps = c.eps;
  o.zero_centered_gamma = c.zero_centered;
  o.store_statistics = statistics;
  o.fp8_state = fp8;
  o.fp8_options.update_scale = update_scale;
  return o;
}

inline NormOutput run_forward(const NormCase& c, const NormInputs& in, const NormOptions& options) {
  Tensor x = upload(in.x, c.shape), gamma = upload(in.gamma);
  return c.layer ? layer_norm(x, gamma, upload(in.beta), options) : rms_norm(x, gamma, options);
}

// Checks a forward call's outputs: y against the reference; mean / rsigma when asked for; the
// fp8 copy bit for bit against the host quantization of the y the call returned, and the
// state after it (`host` holds the state as it was before the call).
inline void check_forward(const NormCase& c, const NormInputs& in, const NormOutput& out, const NormOptions& options,
                          HostScaling* host) {
  const ForwardReference ref = forward_reference(c, in);
  const Host y = download(out.y);
  EXPECT_EQ(out.y.shape(), c.shape);
  EXPECT_EQ(y.dtype, c.x);
  auto at = [&](size_t i) {
    return "row " + std::to_string(i / size_t(c.hidden())) + " column " + std::to_string(i % size_t(c.hidden()));
  };
  expect_stored("y", y, ref.y, ref.y_scale, at);
  EXPECT_EQ(out.mean.has_value(), options.store_statistics && c.layer);
  EXPECT_EQ(out.rsigma.has_value(), options.store_statistics);
  if (out.mean) {
    EXPECT_EQ(out.mean->shape(), c.leading());
    expect_scaled("mean", download(*out.mean).values(), ref.mean, ref.mean_scale, 1e-5);
  }
  if (out.rsigma) {
    EXPECT_EQ(out.rsigma->shape(), c.leading());
    expect_values("rsigma", download(*out.rsigma), ref.rsigma, Tol{1e-5, 0});
  }
  EXPECT_EQ(out.y_fp8.has_value(), options.fp8_state != nullptr);
  if (!out.y_fp8) return;
  EXPECT_EQ(out.y_fp8->data.shape(), c.shape);
  const std::vector<LD> y_values = y.values();
  expect_fp8_bits("fp8 copy of y", download(out.y_fp8->data), host->quantize(y_values));
  expect_same("fp8 copy's scale_inv", download(out.y_fp8->scale_inv).values(), {host->scale_inv});
  if (options.fp8_options.update_scale) host->update();
  expect_state("fp8 state after the norm", *options.fp8_state, *host);
}

// Checks a backward call's gradients against the Jacobian reference.
inline void check_backward(const NormCase& c, const NormInputs& in, const NormGradients& g) {
  const BackwardReference ref = backward_reference(c, in);
  EXPECT_EQ(g.dx.shape(), c.shape);
  EXPECT_EQ(g.dx.dtype(), c.x);
  EXPECT_EQ(g.dgamma.dtype(), c.gamma);
  expect_stored("dx", download(g.dx), ref.dx, ref.dx_scale);
  expect_stored("dgamma", download(g.dgamma), ref.dgamma, ref.dgamma_scale);
  EXPECT_EQ(g.dbeta.has_value(), c.layer);
  if (g.dbeta) {
    EXPECT_EQ(g.dbeta->dtype(), c.gamma);
    expect_stored("dbeta", download(*g.dbeta), ref.dbeta, ref.dbeta_scale);
  }
}

inline NormGradients run_backward(const NormCase& c, const NormInputs& in, const NormOutput& forward) {
  Tensor dy = upload(in.dy, c.shape), x = upload(in.x, c.shape), gamma = upload(in.gamma);
  NormBackwardOptions options;
  options.zero_centered_gamma = c.zero_centered;
  return c.layer ? layer_norm_backward(dy, x, *forward.mean, *forward.rsigma, gamma, options)
                 : rms_norm_backward(dy, x, *forward.rsigma, gamma, options);
}

// The forward with every output (statistics, and the fp8 copy through a new state whose scale,
// role and whether the call ends the step vary with the seed), checked; then the backward
// from its statistics, checked.
struct CheckedCase {
  NormOutput forward;
  NormGradients backward;
};
inline CheckedCase check_forward_and_backward(const NormCase& c, const NormInputs& in, Rng& rng) {
  DelayedScalingRecipe recipe;
  recipe.amax_history_len = 3;
  Fp8ScalingState state(emu(), recipe, rng.coin() ? Fp8TensorRole::forward : Fp8TensorRole::gradient);
  HostScaling host(recipe, state.dtype());
  host.scale = round_f32(std::ldexp(rng.uniform(0.5, 1), static_cast<int>(rng.integer(-2, 8))));
  set_scale(state, static_cast<float>(host.scale));
  const NormOptions options = norm_options(c, true, &state, rng.coin());
  NormOutput forward = run_forward(c, in, options);
  check_forward(c, in, forward, options, &host);
  NormGradients backward = run_backward(c, in, forward);
  check_backward(c, in, backward);
  return {std::move(forward), std::move(backward)};
}

}  // namespace tjnorms
