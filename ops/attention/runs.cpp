// The library runs of attention and attention_backward: bf16 inputs made on the host, the
// kernels timed alone into outputs made once, and a double-precision reference of sampled
// rows (ops/attention/runs.h says which).
#include "ops/attention/runs.h"

#include <algorithm>
#include <cmath>
#include <future>
#include <random>
#include <thread>

#include "ops/attention/kernel_arguments.h"
#include "ops/attention/launch.h"
#include "ops/common/host_values.h"
#include "ops/library_runs.h"

namespace tilejit::ops {

using namespace attention_detail;

namespace {

constexpr DType kDtype = DType::bf16;
constexpr double kRtol = 3e-2;  // bf16 operands of p · v and ds · k, against the terms' magnitude
constexpr double kAtol = 1e-3;

// A run's problem: the inputs on the host (as doubles) and on the device.
struct RunProblem {
  int64_t B = 0, T = 0, S = 0, N = 0, K = 0, H = 0;
  bool causal = false;
  double scale = 1;
  std::vector<double> q, k, v, dout;
  std::optional<Tensor> tq, tk, tv, tdout;
  AttentionOptions options;

  double q_at(int64_t b, int64_t t, int64_t n, int64_t h) const { return q[size_t(((b * T + t) * N + n) * H + h)]; }
  double k_at(int64_t b, int64_t s, int64_t n, int64_t h) const {
    return k[size_t(((b * S + s) * K + n / (N / K)) * H + h)];
  }
  double v_at(int64_t b, int64_t s, int64_t n, int64_t h) const {
    return v[size_t(((b * S + s) * K + n / (N / K)) * H + h)];
  }
  double dout_at(int64_t b, int64_t t, int64_t n, int64_t h) const {
    return dout[size_t(((b * T + t) * N + n) * H + h)];
  }
  std::string describe() const {
    return fmt::format("B={} T={} S={} N={} K={} H={}{} bf16", B, T, S, N, K, H, causal ? " causal" : "");
  }
  double forward_flops() const {
    return 4.0 * double(B * N) * double(T) * double(S) * double(H) / (causal ? 2 : 1);
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
  RunProblem p;
  p.B = dimension(dims, "B"), p.T = dimension(dims, "T"), p.S = dimension(dims, "S");
  p.N = dimension(dims, "N"), p.K = dimension(dims, "K"), p.H = dimension(dims, "H");
  p.causal = dimension(dims, "CAUSAL") != 0;
  p.scale = 1 / std::sqrt(double(p.H));
  p.options.is_causal = p.causal;
  p.options.return_logsumexp = true;
  std::mt19937_64 rng(options.seed ? options.seed : std::random_device{}());
  auto input = [&](std::vector<double>& values, std::optional<Tensor>& tensor, std::vector<int64_t> shape) {
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    std::vector<uint8_t> bytes = random_elements(kDtype, count, rng);
    values = host_values(kDtype, bytes);
    tensor = Tensor::empty(device, kDtype, std::move(shape));
    tensor->copy_from_host(bytes.data(), bytes.size());
  };
  input(p.q, p.tq, {p.B, p.T, p.N, p.H});
  input(p.k, p.tk, {p.B, p.S, p.K, p.H});
  input(p.v, p.tv, {p.B, p.S, p.K, p.H});
  input(p.dout, p.tdout, {p.B, p.T, p.N, p.H});
  return p;
}

// The softmax weights of row (b, n, t) over every key, and its logsumexp.
double softmax_row(const RunProblem& p, int64_t b, int64_t n, int64_t t, std::vector<double>& weights) {
  weights.assign(size_t(p.S), 0);
  for (int64_t s = 0; s < p.S; ++s) {
    double dot = 0;
    for (int64_t h = 0; h < p.H; ++h) dot += p.q_at(b, t, n, h) * p.k_at(b, s, n, h);
    weights[size_t(s)] = p.causal && s > t ? double{masked_logit(kDtype)} : dot * p.scale;
  }
  double m = *std::max_element(weights.begin(), weights.end()), z = 0;
  for (double& w : weights) z += w = std::exp(w - m);
  for (double& w : weights) w /= z;
  return m + std::log(z);
}

// Up to `count` distinct indices spread over [0, n).
std::vector<int64_t> spread(int64_t n, int64_t count) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < std::min(n, count); ++i) out.push_back(i * n / std::min(n, count));
  if (n > count) out.back() = n - 1;
  return out;
}

// Whether `got` is within kAtol + kRtol * terms of `want` (never for NaN); tracks the largest error.
void check(double got, double want, double terms, ExampleRun& r) {
  double e = std::isnan(got) ? INFINITY : std::fabs(got - want);
  r.max_abs_error = std::max(r.max_abs_error, e);
  r.ok = r.ok && e <= kAtol + kRtol * terms;
}

std::vector<double> download(const Tensor& t) {
  std::vector<uint8_t> bytes(size_t(t.bytes()));
  t.copy_to_host(bytes.data(), bytes.size());
  return host_values(t.dtype(), bytes);
}

ExampleRun start_run(const char* op, const RunProblem& p, Device& device) {
  ExampleRun r;
  r.kernel = op;
  r.device = device.info().name;
  r.problem = p.describe();
  r.atol = kAtol;
  r.rtol = kRtol;
  r.ok = true;
  r.bytes = 2.0 * double(p.q.size() * 2 + p.k.size() * 2);
  return r;
}

}  // namespace

ExampleRun run_attention(Device& device, const ExampleOptions& options) {
  RunProblem p = make_problem("attention", device, options);
  AttentionProblem problem = check_attention(OpArguments("attention"), *p.tq, *p.tk, *p.tv, p.options);
  Tensor out = Tensor::empty(device, kDtype, problem.q_shape());
  Tensor lse = Tensor::empty(device, DType::f32, problem.logsumexp_shape());
  out.fill_bytes(0xff);
  lse.fill_bytes(0xff);
  const KernelConfig config = choose_configs(kDtype, p.H).forward;

  ExampleRun r = start_run("attention", p, device);
  r.flops = p.forward_flops();
  time_launches(r, device, [&](Stream& s) { launch_forward(problem, config, out, &lse, s); });

  std::vector<double> got = download(out), got_lse = download(lse), weights;
  for (int64_t pair : spread(p.B * p.N, 4))
    for (int64_t t : spread(p.T, 32)) {
      const int64_t b = pair / p.N, n = pair % p.N;
      double want_lse = softmax_row(p, b, n, t, weights);
      check(got_lse[size_t((b * p.N + n) * p.T + t)], want_lse, std::fabs(want_lse) * 1e-4 / kRtol, r);
      for (int64_t h = 0; h < p.H; ++h) {
        double sum = 0, terms = 0;
        for (int64_t s = 0; s < p.S; ++s) {
          double x = weights[size_t(s)] * p.v_at(b, s, n, h);
          sum += x, terms += std::fabs(x);
        }
        check(got[size_t(((b * p.T + t) * p.N + n) * p.H + h)], sum, terms, r);
      }
    }
  return r;
}

ExampleRun run_attention_backward(Device& device, const ExampleOptions& options) {
  RunProblem p = make_problem("attention_backward", device, options);
  AttentionProblem problem = check_attention(OpArguments("attention_backward"), *p.tq, *p.tk, *p.tv, p.options);
  const AttentionConfigs configs = choose_configs(kDtype, p.H);
  auto rows = [&] { return Tensor::empty(device, DType::f32, problem.logsumexp_shape()); };
  BackwardBuffers buffers{Tensor::empty(device, kDtype, problem.q_shape()),
                          *p.tdout,
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

  ExampleRun r = start_run("attention_backward", p, device);
  r.flops = 2.5 * p.forward_flops();
  time_launches(r, device, [&](Stream& s) { launch_backward(problem, configs, buffers, s); });

  const std::vector<double> dq = download(buffers.dq), dk = download(buffers.dk), dv = download(buffers.dv);
  const int64_t G = p.N / p.K;
  const std::vector<int64_t> checked_rows = spread(p.T, 32), checked_keys = spread(p.S, 32);
  for (int64_t pair : spread(p.B * p.K, 2)) {
    const int64_t b = pair / p.K, kv_head = pair % p.K;
    // Every row of the group's heads: its weights at the checked keys, dp there, delta.
    struct Row {
      std::vector<double> p, dp;  // over the checked keys (every key for the checked rows)
      double delta = 0, delta_terms = 0;
    };
    std::vector<Row> all(size_t(G * p.T));
    auto work = [&](int64_t first, int64_t end) {
      std::vector<double> weights;
      for (int64_t i = first; i < end; ++i) {
        const int64_t n = kv_head * G + i / p.T, t = i % p.T;
        softmax_row(p, b, n, t, weights);
        Row& row = all[size_t(i)];
        bool every_key = std::binary_search(checked_rows.begin(), checked_rows.end(), t);
        for (int64_t h = 0; h < p.H; ++h) {
          double o = 0;
          for (int64_t s = 0; s < p.S; ++s) o += weights[size_t(s)] * p.v_at(b, s, n, h);
          row.delta += p.dout_at(b, t, n, h) * o, row.delta_terms += std::fabs(p.dout_at(b, t, n, h) * o);
        }
        for (int64_t s = 0; s < p.S; ++s) {
          if (!every_key && !std::binary_search(checked_keys.begin(), checked_keys.end(), s)) continue;
          double dp = 0;
          for (int64_t h = 0; h < p.H; ++h) dp += p.dout_at(b, t, n, h) * p.v_at(b, s, n, h);
          row.p.push_back(weights[size_t(s)]), row.dp.push_back(dp);
        }
      }
    };
    const int64_t total = G * p.T, threads = std::max<int64_t>(1, std::thread::hardware_concurrency());
    std::vector<std::future<void>> jobs;
    for (int64_t i = 0; i < threads; ++i)
      jobs.push_back(std::async(std::launch::async, work, i * total / threads, (i + 1) * total / threads));
    for (auto& j : jobs) j.get();

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
          check(dq[size_t(((b * p.T + t) * p.N + n) * p.H + h)], sum, terms, r);
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
            double x = row.p[i] * p.dout_at(b, t, n, h);
            dv_sum += x, dv_terms += std::fabs(x);
          }
        size_t at = size_t(((b * p.S + s) * p.K + kv_head) * p.H + h);
        check(dk[at], dk_sum, dk_terms, r);
        check(dv[at], dv_sum, dv_terms, r);
      }
    }
  }
  return r;
}

}  // namespace tilejit::ops
