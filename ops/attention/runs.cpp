// The library runs of attention and attention_backward: bf16 inputs made on the host, the
// kernels timed alone into outputs made once, and a double-precision reference of sampled
// rows (ops/attention/runs.h says which).
#include "ops/attention/runs.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "autotune/parallel.h"
#include "ops/attention/host_reference.h"
#include "ops/attention/kernel_arguments.h"
#include "ops/attention/launch.h"
#include "ops/attention/tuning.h"
#include "ops/common/host_values.h"
#include "ops/library_runs.h"

namespace tilejit::ops {

using namespace attention_detail;

namespace {

constexpr DType kDtype = DType::bf16;

// A run's problem: the inputs on the host (as doubles) and on the device.
struct RunProblem {
  HostAttention host;
  std::vector<double> dout;
  std::optional<Tensor> tq, tk, tv, tdout;
  AttentionOptions options;

  double dout_at(int64_t b, int64_t t, int64_t n, int64_t h) const {
    return dout[size_t(((b * host.T + t) * host.N + n) * host.H + h)];
  }
  std::string describe() const {
    return fmt::format("B={} T={} S={} N={} K={} H={}{} bf16", host.B, host.T, host.S, host.N, host.K, host.H,
                       host.causal ? " causal" : "");
  }
  double forward_flops() const {
    return 4.0 * double(host.B * host.N) * double(host.T) * double(host.S) * double(host.H) / (host.causal ? 2 : 1);
  }
};

RunProblem make_problem(const std::string& op, Device& device, const ExampleOptions& options) {
  const bool small = options.small || device.info().kind == DeviceKind::emu;
  auto dims = run_dimensions(op,
                             small ? std::vector<std::pair<std::string, int64_t>>{{"B", 1}, {"T", 100}, {"S", 120},
                                                                                 {"N", 4}, {"K", 2}, {"H", 64},
                                                                                 {"CAUSAL", 0}}
                                   : std::vector<std::pair<std::string, int64_t>>{{"B", 2}, {"T", 4096}, {"S", 4096},
                                                                                 {"N", 32}, {"K", 8}, {"H", 128},
                                                                                 {"CAUSAL", 0}},
                             options);
  RunProblem run;
  HostAttention& p = run.host;
  p.B = dimension(dims, "B"), p.T = dimension(dims, "T"), p.S = dimension(dims, "S");
  p.N = dimension(dims, "N"), p.K = dimension(dims, "K"), p.H = dimension(dims, "H");
  p.causal = dimension(dims, "CAUSAL") != 0;
  p.scale = 1 / std::sqrt(double(p.H));
  p.dtype = kDtype;
  run.options.is_causal = p.causal;
  run.options.return_logsumexp = true;
  std::mt19937_64 rng(options.seed ? options.seed : std::random_device{}());
  auto input = [&](std::vector<double>& values, std::optional<Tensor>& tensor, std::vector<int64_t> shape) {
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    std::vector<uint8_t> bytes = random_elements(kDtype, count, rng);
    values = host_values(kDtype, bytes);
    tensor = Tensor::empty(device, kDtype, std::move(shape));
    tensor->copy_from_host(bytes.data(), bytes.size());
  };
  input(p.q, run.tq, {p.B, p.T, p.N, p.H});
  input(p.k, run.tk, {p.B, p.S, p.K, p.H});
  input(p.v, run.tv, {p.B, p.S, p.K, p.H});
  input(run.dout, run.tdout, {p.B, p.T, p.N, p.H});
  return run;
}

ExampleRun start_run(const char* op, const RunProblem& run, Device& device) {
  ExampleRun r;
  r.kernel = op;
  r.device = device.info().name;
  r.problem = run.describe();
  r.atol = attention_tolerance(kDtype).atol;
  r.rtol = attention_tolerance(kDtype).rtol;
  r.bytes = 2.0 * double(run.host.q.size() * 2 + run.host.k.size() * 2);
  return r;
}

void record(const ErrorTally& tally, ExampleRun& r) {
  r.ok = tally.ok;
  r.max_abs_error = tally.max_abs_error;
}

}  // namespace

ExampleRun run_attention(Device& device, const ExampleOptions& options) {
  RunProblem run = make_problem("attention", device, options);
  AttentionProblem problem = check_attention(OpArguments("attention"), *run.tq, *run.tk, *run.tv, run.options);
  Tensor out = Tensor::empty(device, kDtype, problem.q_shape());
  Tensor lse = Tensor::empty(device, DType::f32, problem.logsumexp_shape());
  out.fill_bytes(0xff);
  lse.fill_bytes(0xff);
  const KernelConfig config = forward_call_config(problem, device);

  ExampleRun r = start_run("attention", run, device);
  r.flops = run.forward_flops();
  time_launches(r, device, [&](Stream& s) { launch_forward(problem, config, out, &lse, s); });
  record(SampledForward(run.host).check(download_values(out), download_values(lse)), r);
  return r;
}

ExampleRun run_attention_backward(Device& device, const ExampleOptions& options) {
  RunProblem run = make_problem("attention_backward", device, options);
  AttentionProblem problem =
      check_attention(OpArguments("attention_backward"), *run.tq, *run.tk, *run.tv, run.options);
  const HostAttention& p = run.host;
  const AttentionConfigs configs = choose_configs(kDtype, p.H);
  auto rows = [&] { return Tensor::empty(device, DType::f32, problem.logsumexp_shape()); };
  BackwardBuffers buffers{Tensor::empty(device, kDtype, problem.q_shape()),
                          *run.tdout,
                          rows(),
                          contiguous_sequence_strides(problem.q_shape()),
                          problem.q,
                          rows(),
                          rows(),
                          rows(),
                          Tensor::empty(device, DType::i32, {p.B, p.N}),
                          Tensor::empty(device, kDtype, problem.q_shape()),
                          Tensor::empty(device, kDtype, problem.kv_shape()),
                          Tensor::empty(device, kDtype, problem.kv_shape())};
  for (Tensor* t : {&buffers.dq, &buffers.dk, &buffers.dv}) t->fill_bytes(0xff);
  launch_forward(problem, configs.forward, buffers.out, &buffers.lse, device.default_stream());

  ExampleRun r = start_run("attention_backward", run, device);
  r.flops = 2.5 * run.forward_flops();
  time_launches(r, device, [&](Stream& s) { launch_backward(problem, configs, buffers, s); });

  const std::vector<double> dq = download_values(buffers.dq), dk = download_values(buffers.dk);
  const std::vector<double> dv = download_values(buffers.dv);
  const int64_t G = p.N / p.K;
  const Tolerance tolerance = attention_tolerance(kDtype);
  ErrorTally tally;
  const std::vector<int64_t> checked_rows = spread(p.T, 32), checked_keys = spread(p.S, 32);
  for (int64_t pair : spread(p.B * p.K, 2)) {
    const int64_t b = pair / p.K, kv_head = pair % p.K;
    // Every row of the group's heads: its weights at the checked keys, dp there, delta.
    struct Row {
      std::vector<double> p, dp;  // over the checked keys (every key for the checked rows)
      double delta = 0, delta_terms = 0;
    };
    std::vector<Row> all(size_t(G * p.T));
    autotune::run_in_parallel(all.size(), 0, [&](size_t i) {
      std::vector<double> weights;
      const int64_t n = kv_head * G + int64_t(i) / p.T, t = int64_t(i) % p.T;
      p.softmax_row(b, n, t, weights);
      Row& row = all[i];
      bool every_key = std::binary_search(checked_rows.begin(), checked_rows.end(), t);
      for (int64_t h = 0; h < p.H; ++h) {
        double o = 0;
        for (int64_t s = 0; s < p.S; ++s) o += weights[size_t(s)] * p.v_at(b, s, n, h);
        row.delta += run.dout_at(b, t, n, h) * o, row.delta_terms += std::fabs(run.dout_at(b, t, n, h) * o);
      }
      for (int64_t s = 0; s < p.S; ++s) {
        if (!every_key && !std::binary_search(checked_keys.begin(), checked_keys.end(), s)) continue;
        double dp = 0;
        for (int64_t h = 0; h < p.H; ++h) dp += run.dout_at(b, t, n, h) * p.v_at(b, s, n, h);
        row.p.push_back(weights[size_t(s)]), row.dp.push_back(dp);
      }
    });

    // ds = p (dp - delta) at kept keys; a causally masked logit passes no gradient.
    auto gradient = [&](const Row& row, size_t i, int64_t t, int64_t s, double& terms) {
      terms = row.p[i] * (std::fabs(row.dp[i]) + row.delta_terms) * p.scale;
      return p.causal && s > t ? 0.0 : row.p[i] * (row.dp[i] - row.delta) * p.scale;
    };
    for (int64_t g = 0; g < G; ++g)
      for (int64_t t : checked_rows) {
        const int64_t n = kv_head * G + g;
        const Row& row = all[size_t(g * p.T + t)];
        for (int64_t h = 0; h < p.H; ++h) {
          double sum = 0, terms = 0, ds_terms = 0;
          for (int64_t s = 0; s < p.S; ++s) {
            double ds = gradient(row, size_t(s), t, s, ds_terms);
            sum += ds * p.k_at(b, s, n, h), terms += ds_terms * std::fabs(p.k_at(b, s, n, h));
          }
          tally.add(dq[size_t(((b * p.T + t) * p.N + n) * p.H + h)], sum, terms, tolerance);
        }
      }
    for (size_t key = 0; key < checked_keys.size(); ++key) {
      const int64_t s = checked_keys[key];
      for (int64_t h = 0; h < p.H; ++h) {
        double dk_sum = 0, dk_terms = 0, dv_sum = 0, dv_terms = 0, ds_terms = 0;
        for (int64_t g = 0; g < G; ++g)
          for (int64_t t = 0; t < p.T; ++t) {
            const int64_t n = kv_head * G + g;
            const Row& row = all[size_t(g * p.T + t)];
            bool every_key = std::binary_search(checked_rows.begin(), checked_rows.end(), t);
            size_t i = every_key ? size_t(s) : key;
            double ds = gradient(row, i, t, s, ds_terms);
            dk_sum += ds * p.q_at(b, t, n, h), dk_terms += ds_terms * std::fabs(p.q_at(b, t, n, h));
            double x = row.p[i] * run.dout_at(b, t, n, h);
            dv_sum += x, dv_terms += std::fabs(x);
          }
        size_t at = size_t(((b * p.S + s) * p.K + kv_head) * p.H + h);
        tally.add(dk[at], dk_sum, dk_terms, tolerance);
        tally.add(dv[at], dv_sum, dv_terms, tolerance);
      }
    }
  }
  record(tally, r);
  return r;
}

}  // namespace tilejit::ops
