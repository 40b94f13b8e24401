#include "ops/gemm/gemm_runs.h"

#include <random>

#include "ops/common/host_values.h"
#include "ops/gemm.h"
#include "ops/gemm/gemm_row_check.h"
#include "ops/int8.h"
#include "ops/library_runs.h"

namespace tilejit::ops {
namespace {

struct GemmRunSpec {
  std::string op;
  DType a, out;
  double accumulation_error;  // relative to the sum of |products|
  double output_rounding;     // relative to the result
  std::function<void(const Tensor& a, const Tensor& b, const Tensor& out, Stream& s)> call;
};

ExampleRun run_gemm_spec(const GemmRunSpec& spec, Device& device, const ExampleOptions& options) {
  bool small = options.small || device.info().kind == DeviceKind::emu;
  int64_t size = small ? 256 : 4096;
  auto dims = run_dimensions(spec.op, {{"M", size}, {"N", size}, {"K", size}}, options);
  int64_t m = dimension(dims, "M"), n = dimension(dims, "N"), k = dimension(dims, "K");
  std::mt19937_64 rng(options.seed ? options.seed : std::random_device{}());
  std::vector<uint8_t> a_bytes = random_elements(spec.a, m * k, rng), b_bytes = random_elements(spec.a, k * n, rng);
  Tensor a = upload_elements(device, spec.a, {m, k}, a_bytes.data());
  Tensor b = upload_elements(device, spec.a, {k, n}, b_bytes.data());
  Tensor out = Tensor::empty(device, spec.out, {m, n});
  out.fill_bytes(0xff);

  ExampleRun r;
  r.kernel = spec.op;
  r.device = device.info().name;
  r.problem = fmt::format("M={} N={} K={}", m, n, k);
  r.flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  r.bytes = static_cast<double>(a.bytes() + b.bytes() + out.bytes());
  time_launches(r, device, [&](Stream& s) { spec.call(a, b, out, s); });

  gemm_detail::RowCheck check = gemm_detail::SampledRows({spec.a, a_bytes.data(), m, k}, {spec.a, b_bytes.data(), k, n})
                                     .check(out, spec.accumulation_error, spec.output_rounding);
  r.ok = check.ok, r.max_abs_error = check.max_abs_error, r.atol = check.atol, r.rtol = spec.output_rounding;
  return r;
}

void plain_gemm(const Tensor& a, const Tensor& b, const Tensor& out, Stream& s) { gemm(a, b, out, {}, &s); }

}  // namespace

ExampleRun run_bf16_gemm(Device& device, const ExampleOptions& options) {
  return run_gemm_spec({"bf16_gemm", DType::bf16, DType::bf16, 1e-5, gemm_detail::output_rounding(DType::bf16), plain_gemm},
                       device, options);
}

ExampleRun run_f16_gemm(Device& device, const ExampleOptions& options) {
  return run_gemm_spec({"f16_gemm", DType::f16, DType::f16, 1e-5, gemm_detail::output_rounding(DType::f16), plain_gemm},
                       device, options);
}

ExampleRun run_tf32_gemm(Device& device, const ExampleOptions& options) {
  // The random inputs carry 3 mantissa bits: tf32 holds them exactly.
  return run_gemm_spec({"tf32_gemm", DType::f32, DType::f32, 1e-5, gemm_detail::output_rounding(DType::f32), plain_gemm},
                       device, options);
}

ExampleRun run_fp8_gemm(Device& device, const ExampleOptions& options) {
  Tensor one = Tensor::empty(device, DType::f32, {1});
  const float value = 1;
  one.copy_from_host(&value, sizeof value);
  // Each K block's product added in f32: the error does not grow with K.
  gemm_detail::GemmFeatures features;
  features.a = features.b = DType::f8e4m3;
  const double accumulation = gemm_detail::accumulation_error(features, 0);
  return run_gemm_spec({"fp8_gemm", DType::f8e4m3, DType::bf16, accumulation, gemm_detail::output_rounding(DType::bf16),
                        [one](const Tensor& a, const Tensor& b, const Tensor& out, Stream& s) {
                          GemmOptions o;
                          o.a_scale_inv = one, o.b_scale_inv = one;
                          gemm(a, b, out, o, &s);
                        }},
                       device, options);
}

ExampleRun run_int8_gemm(Device& device, const ExampleOptions& options) {
  return run_gemm_spec({"int8_gemm", DType::i8, DType::i32, 0, gemm_detail::output_rounding(DType::i32), plain_gemm},
                       device, options);
}

ExampleRun run_q_matmul_int8(Device& device, const ExampleOptions& options) {
  // Quantization to 8 bits loses about 1/127 of each row's and column's largest value.
  return run_gemm_spec({"q_matmul_int8", DType::bf16, DType::bf16, 2.0 / 127, 1.0 / 128,
                        [](const Tensor& a, const Tensor& b, const Tensor& out, Stream& s) {
                          q_matmul_int8(a, b, out, &s);
                        }},
                       device, options);
}

}  // namespace tilejit::ops
