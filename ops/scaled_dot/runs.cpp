// The library runs of scaled_dot and mx_quantize: random inputs made on the host, the kernel
// timed alone (views and outputs made once), and every checked output against a double
// reference.
#include "ops/scaled_dot/runs.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "ops/common/host_values.h"
#include "ops/library_runs.h"
#include "ops/scaled_dot/kernel.h"
#include "ops/scaled_dot/mx_quantize.h"

namespace tilejit::ops {

using namespace scaled_dot_detail;

namespace {

// Whether `got` is within atol + rtol * |want| (never for NaN); tracks the largest error.
bool within(double got, double want, double atol, double rtol, ExampleRun& r) {
  double e = std::fabs(got - want);
  if (std::isnan(got)) e = INFINITY;
  r.max_abs_error = std::max(r.max_abs_error, e);
  return e <= atol + rtol * std::fabs(want);
}

}  // namespace

ExampleRun run_scaled_dot(Device& device, const ExampleOptions& options) {
  const bool small = options.small || device.info().kind == DeviceKind::emu;
  auto dims = run_dimensions("scaled_dot",
                             small ? std::vector<std::pair<std::string, int64_t>>{{"B", 2}, {"M", 100}, {"N", 72},
                                                                                 {"K", 256}, {"BLOCK", 32},
                                                                                 {"RHS_NK", 0}}
                                   : std::vector<std::pair<std::string, int64_t>>{{"B", 1}, {"M", 8192}, {"N", 8192},
                                                                                 {"K", 8192}, {"BLOCK", 32},
                                                                                 {"RHS_NK", 0}},
                             options);
  const int64_t batch = dimension(dims, "B"), m = dimension(dims, "M"), n = dimension(dims, "N"),
                k = dimension(dims, "K"), block = dimension(dims, "BLOCK");
  const bool rhs_nk = dimension(dims, "RHS_NK") != 0;  // rhs stored (N, K) instead of jax's default (K, N)
  if (k % block != 0 || block < 2) fail("run scaled_dot: K ({}) must be a multiple of BLOCK ({}) >= 2", k, block);
  const int64_t kb = k / block;
  std::mt19937_64 rng(options.seed ? options.seed : std::random_device{}());
  // e4m3 values up to 7.5 in magnitude (exponent field at most 9), scales 2^-3 to 2^3.
  auto fp8 = [&](int64_t count) {
    std::vector<uint8_t> v(static_cast<size_t>(count));
    for (auto& b : v) b = static_cast<uint8_t>((rng() & 0x80) | (rng() % 10) << 3 | (rng() & 7));
    return v;
  };
  auto scales = [&](int64_t count) {
    std::vector<uint8_t> v(static_cast<size_t>(count));
    for (auto& b : v) b = static_cast<uint8_t>(124 + rng() % 7);
    return v;
  };
  std::vector<uint8_t> a = fp8(batch * m * k), b = fp8(batch * k * n), sa = scales(batch * m * kb),
                       sb = scales(batch * kb * n);
  Tensor ta = upload_elements(device, DType::f8e4m3, {batch, m, k}, a.data());
  // b[(bi * k + t) * n + j] holds rhs element (t, j) either way; stored (N, K), a transposed copy goes up.
  std::vector<uint8_t> b_nk(rhs_nk ? b.size() : 0);
  if (rhs_nk)
    for (int64_t bi = 0; bi < batch; ++bi)
      for (int64_t t = 0; t < k; ++t)
        for (int64_t j = 0; j < n; ++j)
          b_nk[static_cast<size_t>((bi * n + j) * k + t)] = b[static_cast<size_t>((bi * k + t) * n + j)];
  Tensor tb = rhs_nk ? upload_elements(device, DType::f8e4m3, {batch, n, k}, b_nk.data())
                     : upload_elements(device, DType::f8e4m3, {batch, k, n}, b.data());
  Tensor tsa = upload_elements(device, DType::e8m0, {batch, m, kb}, sa.data());
  Tensor tsb = upload_elements(device, DType::e8m0, {batch, kb, n}, sb.data());
  Tensor out = Tensor::empty(device, DType::bf16, {batch, m, n});
  out.fill_bytes(0xff);

  ExampleRun r;
  r.kernel = "scaled_dot";
  r.device = device.info().name;
  r.problem = fmt::format("B={} M={} N={} K={} BLOCK={} e4m3 x e4m3, e8m0 scales, rhs stored {}", batch, m, n, k, block,
                          rhs_nk ? "(N, K)" : "(K, N)");
  r.flops = 2.0 * static_cast<double>(batch * m * n * k);
  r.bytes = static_cast<double>(a.size() + b.size() + sa.size() + sb.size() + 2 * batch * m * n);
  Stream& stream = device.default_stream();
  ScaledOperandView lhs{grouped_view(ta, {{{0}, {1}, {2}}}, {}, stream), grouped_view(tsa, {{{0}, {1}, {2}}}, {}, stream),
                        block};
  ScaledOperandView rhs{grouped_view(tb, rhs_nk ? std::array<std::vector<int>, 3>{{{0}, {2}, {1}}}
                                                 : std::array<std::vector<int>, 3>{{{0}, {1}, {2}}},
                                     {}, stream),
                        grouped_view(tsb, {{{0}, {1}, {2}}}, {}, stream), block};
  time_launches(r, device, [&](Stream& s) { run_scaled_dot_kernel(lhs, rhs, out, s); });

  std::vector<uint16_t> got(static_cast<size_t>(batch * m * n));
  out.copy_to_host(got.data(), got.size() * 2);
  // bf16 rounding of the result, plus f32 accumulation against the terms' magnitude, with the
  // tensor cores' own sum within each K block of fp8 products (ops/common/f32_dot.h; two k32
  // instructions at most, each losing less than 33 * 2^-13 of the sum so far).
  r.rtol = 1.0 / 256;
  r.ok = true;
  const int64_t rows = std::min<int64_t>(m, 64);
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t ri = 0; ri < rows; ++ri) {
      const int64_t i = ri * m / rows;
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0, magnitude = 0;
        for (int64_t t = 0; t < k; ++t) {
          double p = host_value(DType::f8e4m3, &a[static_cast<size_t>((bi * m + i) * k + t)]) *
                     host_value(DType::e8m0, &sa[static_cast<size_t>((bi * m + i) * kb + t / block)]) *
                     host_value(DType::f8e4m3, &b[static_cast<size_t>((bi * k + t) * n + j)]) *
                     host_value(DType::e8m0, &sb[static_cast<size_t>((bi * kb + t / block) * n + j)]);
          sum += p, magnitude += std::fabs(p);
        }
        double atol = (1e-5 + 2 * 33 * std::ldexp(1.0, -13)) * magnitude;
        r.atol = std::max(r.atol, atol);
        const auto* out_element = reinterpret_cast<const uint8_t*>(&got[static_cast<size_t>((bi * m + i) * n + j)]);
        r.ok = within(host_value(DType::bf16, out_element), sum, atol, r.rtol, r) && r.ok;
      }
    }
  return r;
}

ExampleRun run_mx_quantize(Device& device, const ExampleOptions& options) {
  const bool small = options.small || device.info().kind == DeviceKind::emu;
  auto dims = run_dimensions("mx_quantize",
                             small ? std::vector<std::pair<std::string, int64_t>>{{"ROWS", 100}, {"COLS", 512}}
                                   : std::vector<std::pair<std::string, int64_t>>{{"ROWS", 16384}, {"COLS", 8192}},
                             options);
  const int64_t rows = dimension(dims, "ROWS"), cols = dimension(dims, "COLS");
  if (cols % 32 != 0) fail("run mx_quantize: COLS ({}) must be a multiple of 32", cols);
  std::mt19937_64 rng(options.seed ? options.seed : std::random_device{}());
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < x.size(); i += 32) {
    const int exponent = static_cast<int>(rng() % 41) - 20;  // a magnitude per block
    for (size_t j = i; j < i + 32; ++j) x[j] = std::ldexp(uniform(rng), exponent);
  }
  Tensor tx = upload_elements(device, DType::f32, {rows, cols}, x.data());
  Tensor data = Tensor::empty(device, DType::f8e4m3, {rows, cols});
  Tensor scales = Tensor::empty(device, DType::e8m0, {rows, cols / 32});
  data.fill_bytes(0xff);
  scales.fill_bytes(0xff);

  ExampleRun r;
  r.kernel = "mx_quantize";
  r.device = device.info().name;
  r.problem = fmt::format("ROWS={} COLS={} f32", rows, cols);
  r.bytes = static_cast<double>(x.size() * 5 + x.size() / 32);
  time_launches(r, device, [&](Stream& s) { launch_mx_quantize(tx, data, scales, s); });

  std::vector<uint8_t> q(x.size()), s(x.size() / 32);
  data.copy_to_host(q.data(), q.size());
  scales.copy_to_host(s.data(), s.size());
  r.rtol = 1.0 / 16;  // half an e4m3 step at 3 mantissa bits
  r.ok = true;
  for (size_t blk = 0; blk < s.size(); ++blk) {
    const double scale = host_value(DType::e8m0, &s[blk]);
    double amax = 0;
    for (size_t j = blk * 32; j < blk * 32 + 32; ++j) amax = std::max(amax, std::fabs(double{x[j]}));
    // The smallest power of two that holds the block: 224 < amax / scale <= 448.
    r.ok = r.ok && s[blk] != 0xff && (amax == 0 || (amax / scale > 224 && amax / scale <= 448));
    const double atol = scale * std::ldexp(1.0, -10);  // half the e4m3 subnormal step, scaled
    r.atol = std::max(r.atol, atol);
    for (size_t j = blk * 32; j < blk * 32 + 32; ++j)
      r.ok = within(host_value(DType::f8e4m3, &q[j]) * scale, x[j], atol, r.rtol, r) && r.ok;
  }
  return r;
}

}  // namespace tilejit::ops
