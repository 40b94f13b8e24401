// The library runs of the norm ops (norm_runs.h). The timed calls launch into outputs made
// once, as the ops' own launches do, so the time is the kernels'.
#include "ops/norms/norm_runs.h"

#include <cmath>
#include <limits>
#include <random>

#include "ops/common/host_values.h"
#include "ops/library_runs.h"
#include "ops/norms/norm_launch.h"

namespace tilejit::ops {
namespace {

constexpr DType kDType = DType::bf16;   // x, dy, gamma and beta
constexpr double kComputeError = 1e-5;  // f32 arithmetic, relative to the magnitude of the terms


// The run's inputs and its result so far.
struct NormRun {
  NormKind kind;
  RowShape shape;
  RandomTensor x, gamma, beta, dy;
  ExampleRun result;

  // Checks got against want within bf16's rounding of want plus kComputeError * magnitude.
  void expect(double got, double want, double magnitude) {
    const double atol = kComputeError * magnitude, error = std::isnan(got) ? INFINITY : std::fabs(got - want);
    result.atol = std::max(result.atol, atol);
    result.max_abs_error = std::max(result.max_abs_error, error);
    result.ok = result.ok && error <= atol + result.rtol * std::fabs(want);
  }
  size_t at(int64_t row, int64_t column) const { return static_cast<size_t>(row * shape.hidden + column); }
  // The row's mean (0 for RMSNorm) and rsigma in double.
  std::pair<double, double> statistics(int64_t row) const {
    double sum = 0, squares = 0;
    for (int64_t j = 0; j < shape.hidden; ++j) sum += x.values[at(row, j)];
    const double mean = kind == NormKind::layer ? sum / shape.hidden : 0;
    for (int64_t j = 0; j < shape.hidden; ++j) squares += (x.values[at(row, j)] - mean) * (x.values[at(row, j)] - mean);
    return {mean, 1 / std::sqrt(squares / shape.hidden + NormOptions{}.eps)};
  }
  double element_bytes() const { return static_cast<double>(shape.rows * shape.hidden * dtype_storage_bytes(kDType)); }
  double vector_bytes() const { return static_cast<double>(shape.hidden * dtype_storage_bytes(kDType)); }
  double statistics_bytes() const { return static_cast<double>(shape.rows * 4 * (kind == NormKind::layer ? 2 : 1)); }
};

NormRun start_run(const std::string& op, NormKind kind, Device& device, const ExampleOptions& options) {
  const bool small = options.small || device.info().kind == DeviceKind::emu;
  auto dims = run_dimensions(op, {{"ROWS", small ? 64 : 16384}, {"HIDDEN", small ? 1000 : 4096}}, options);
  const int64_t rows = dimension(dims, "ROWS"), hidden = dimension(dims, "HIDDEN");
  if (hidden > kMaxHidden) fail("run {}: HIDDEN {} is larger than {}", op, hidden, kMaxHidden);
  std::mt19937_64 rng(options.seed ? options.seed : std::random_device{}());
  NormRun run{kind,
              RowShape{rows, static_cast<int32_t>(hidden), {rows}},
              random_tensor(device, kDType, {rows, hidden}, rng),
              random_tensor(device, kDType, {hidden}, rng),
              random_tensor(device, kDType, {hidden}, rng),
              random_tensor(device, kDType, {rows, hidden}, rng),
              {}};
  run.result.kernel = op;
  run.result.device = device.info().name;
  run.result.problem = fmt::format("ROWS={} HIDDEN={} bf16", rows, hidden);
  run.result.rtol = 1.0 / 256;  // bf16 outputs
  run.result.ok = true;
  return run;
}

NormOptions run_options() {
  NormOptions o;
  o.store_statistics = true;
  return o;
}

ExampleRun run_forward(const std::string& op, NormKind kind, Device& device, const ExampleOptions& options) {
  NormRun run = start_run(op, kind, device, options);
  const bool layer = kind == NormKind::layer;
  const NormOptions o = run_options();
  NormOutput out = make_norm_output(kind, run.x.tensor, run.shape, o);
  out.y.fill_bytes(0xff);
  time_launches(run.result, device, [&](Stream& s) {
    launch_norm_forward(kind, run.x.tensor, run.gamma.tensor, layer ? &run.beta.tensor : nullptr, o, run.shape, out, s);
  });
  run.result.bytes = 2 * run.element_bytes() + (layer ? 2 : 1) * run.vector_bytes() + run.statistics_bytes();

  const std::vector<double> y = download_values(out.y), rsigma = download_values(*out.rsigma);
  const std::vector<double> mean = layer ? download_values(*out.mean) : std::vector<double>{};
  for (int64_t r = 0; r < run.shape.rows; ++r) {
    const auto [m, rs] = run.statistics(r);
    double magnitude = 0;
    for (int64_t j = 0; j < run.shape.hidden; ++j) {
      const double xj = run.x.values[run.at(r, j)], g = run.gamma.values[size_t(j)],
                   b = layer ? run.beta.values[size_t(j)] : 0;
      run.expect(y[run.at(r, j)], (xj - m) * rs * g + b,
                 (std::fabs(xj) + std::fabs(m)) * rs * std::fabs(g) + std::fabs(b));
      magnitude += std::fabs(xj);
    }
    run.expect(rsigma[size_t(r)], rs, rs);
    if (layer) run.expect(mean[size_t(r)], m, magnitude / run.shape.hidden);
  }
  return run.result;
}

ExampleRun run_backward(const std::string& op, NormKind kind, Device& device, const ExampleOptions& options) {
  NormRun run = start_run(op, kind, device, options);
  const bool layer = kind == NormKind::layer;
  const Tensor* beta = layer ? &run.beta.tensor : nullptr;
  const NormOptions o = run_options();
  const NormOutput forward = make_norm_output(kind, run.x.tensor, run.shape, o);
  Stream& stream = device.default_stream();
  launch_norm_forward(kind, run.x.tensor, run.gamma.tensor, beta, o, run.shape, forward, stream);
  const NormBackwardPlan plan = plan_norm_backward(kind, stream, run.shape);
  NormGradients out = make_norm_gradients(kind, run.x.tensor, run.gamma.tensor);
  out.dx.fill_bytes(0xff);
  time_launches(run.result, device, [&](Stream& s) {
    launch_norm_backward(kind, run.dy.tensor, run.x.tensor, forward.mean ? &*forward.mean : nullptr, *forward.rsigma,
                         run.gamma.tensor, {}, run.shape, plan, out, s);
  });
  run.result.bytes = 3 * run.element_bytes() + (layer ? 3 : 2) * run.vector_bytes() + run.statistics_bytes();

  const std::vector<double> dx = download_values(out.dx), dgamma = download_values(out.dgamma);
  const std::vector<double> dbeta = layer ? download_values(*out.dbeta) : std::vector<double>{};
  const auto h = static_cast<size_t>(run.shape.hidden);
  std::vector<double> dgamma_ref(h), dgamma_magnitude(h), dbeta_ref(h), dbeta_magnitude(h), xhat(h), dy_g(h);
  for (int64_t r = 0; r < run.shape.rows; ++r) {
    const auto [m, rs] = run.statistics(r);
    double mean_dy_g = 0, mean_dy_g_xhat = 0, magnitude_dy_g = 0, magnitude_dy_g_xhat = 0;
    for (size_t j = 0; j < h; ++j) {
      const double xj = run.x.values[run.at(r, int64_t(j))], dyj = run.dy.values[run.at(r, int64_t(j))];
      const double xhat_magnitude = (std::fabs(xj) + std::fabs(m)) * rs;
      xhat[j] = (xj - m) * rs;
      dy_g[j] = dyj * run.gamma.values[j];
      mean_dy_g += dy_g[j] / double(h), mean_dy_g_xhat += dy_g[j] * xhat[j] / double(h);
      magnitude_dy_g += std::fabs(dy_g[j]) / double(h),
          magnitude_dy_g_xhat += std::fabs(dy_g[j]) * xhat_magnitude / double(h);
      dgamma_ref[j] += dyj * xhat[j], dgamma_magnitude[j] += std::fabs(dyj) * xhat_magnitude;
      dbeta_ref[j] += dyj, dbeta_magnitude[j] += std::fabs(dyj);
    }
    if (!layer) mean_dy_g = magnitude_dy_g = 0;
    for (size_t j = 0; j < h; ++j) {
      const double xhat_magnitude = (std::fabs(run.x.values[run.at(r, int64_t(j))]) + std::fabs(m)) * rs;
      run.expect(dx[run.at(r, int64_t(j))], rs * (dy_g[j] - mean_dy_g - xhat[j] * mean_dy_g_xhat),
                 rs * (std::fabs(dy_g[j]) + magnitude_dy_g + xhat_magnitude * magnitude_dy_g_xhat));
    }
  }
  for (size_t j = 0; j < h; ++j) {
    run.expect(dgamma[j], dgamma_ref[j], dgamma_magnitude[j]);
    if (layer) run.expect(dbeta[j], dbeta_ref[j], dbeta_magnitude[j]);
  }
  return run.result;
}

}  // namespace

ExampleRun run_layer_norm(Device& device, const ExampleOptions& options) {
  return run_forward("layer_norm", NormKind::layer, device, options);
}
ExampleRun run_rms_norm(Device& device, const ExampleOptions& options) {
  return run_forward("rms_norm", NormKind::rms, device, options);
}
ExampleRun run_layer_norm_backward(Device& device, const ExampleOptions& options) {
  return run_backward("layer_norm_backward", NormKind::layer, device, options);
}
ExampleRun run_rms_norm_backward(Device& device, const ExampleOptions& options) {
  return run_backward("rms_norm_backward", NormKind::rms, device, options);
}

}  // namespace tilejit::ops
