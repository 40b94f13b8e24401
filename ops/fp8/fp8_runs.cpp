// The library run of fp8_quantize (fp8_runs.h).
#include "ops/fp8/fp8_runs.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "ops/common/host_values.h"
#include "ops/fp8/fp8_tiles.h"
#include "ops/fp8/quantize.h"
#include "ops/library_runs.h"

namespace tilejit::ops {

ExampleRun run_fp8_quantize(Device& device, const ExampleOptions& options) {
  const bool small = options.small || device.info().kind == DeviceKind::emu;
  auto dims = run_dimensions("fp8_quantize", {{"N", small ? 100'003 : int64_t{1} << 27}}, options);
  const int64_t n = dimension(dims, "N");
  std::mt19937_64 rng(options.seed ? options.seed : std::random_device{}());
  const std::vector<uint8_t> bytes = random_elements(DType::bf16, n, rng);
  Tensor x = Tensor::empty(device, DType::bf16, {n});
  x.copy_from_host(bytes.data(), bytes.size());

  Fp8ScalingState state(device);
  const float scale = 100;
  Tensor scale_tensor = state.scale();
  scale_tensor.copy_from_host(&scale, sizeof scale);
  Fp8Tensor out = fp8_output(device, {n}, state);
  out.data.fill_bytes(0xff);

  ExampleRun r;
  r.kernel = "fp8_quantize";
  r.device = device.info().name;
  r.problem = fmt::format("N={} bf16 -> e4m3", n);
  r.bytes = 3.0 * static_cast<double>(n);
  time_launches(r, device, [&](Stream& s) { launch_fp8_quantize(x, state, out, s); });
  fp8_update_scale(state);

  std::vector<uint8_t> q(static_cast<size_t>(n));
  out.data.copy_to_host(q.data(), q.size());
  const std::vector<double> values = host_values(DType::bf16, bytes);
  r.rtol = 1.0 / 16;              // half an e4m3 step at 3 mantissa bits
  r.atol = std::ldexp(1.0, -10);  // half the e4m3 subnormal step
  r.ok = true;
  double amax = 0;
  for (size_t i = 0; i < q.size(); ++i) {
    const double want = std::clamp(values[i] * scale, -448.0, 448.0), got = host_value(DType::f8e4m3, &q[i]);
    const double error = std::isnan(got) ? INFINITY : std::fabs(got - want);
    r.max_abs_error = std::max(r.max_abs_error, error);
    r.ok = r.ok && error <= r.atol + r.rtol * std::fabs(want);
    amax = std::max(amax, std::fabs(values[i]));
  }
  // Exact: scale_inv is 1/100 in f32; the amax (a bf16 value) now ends the rolled history;
  // the new scale is 448 / amax in f32.
  const std::vector<float> scale_inv = out.scale_inv.to_host<float>(), history = state.amax_history().to_host<float>();
  const std::vector<float> new_scale = state.scale().to_host<float>();
  r.ok = r.ok && scale_inv[0] == 1 / scale && history.back() == static_cast<float>(amax) && history[0] == 0 &&
         new_scale[0] == 448.0f / static_cast<float>(amax);
  return r;
}

}  // namespace tilejit::ops
