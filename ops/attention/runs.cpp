// The library runs of attention and attention_backward: bf16 inputs made on the host, the
// kernels timed alone into outputs made once, and a double-precision reference of sampled
// rows (ops/attention/runs.h says which).
#include "ops/attention/runs.h"

#include <algorithm>
#include <cmath>
#include <random>

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
  std::optional<Tensor> tq, tk, tv, tdout;
  AttentionOptions options;

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
    RandomTensor made = random_tensor(device, kDtype, std::move(shape), rng);
    values = std::move(made.values), tensor = made.tensor;
  };
  input(p.q, run.tq, {p.B, p.T, p.N, p.H});
  input(p.k, run.tk, {p.B, p.S, p.K, p.H});
  input(p.v, run.tv, {p.B, p.S, p.K, p.H});
  input(p.dout, run.tdout, {p.B, p.T, p.N, p.H});
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
  const AttentionConfigs configs = backward_call_configs(problem, device);
  BackwardBuffers buffers =
      backward_buffers(problem, Tensor::empty(device, kDtype, problem.q_shape()),
                       contiguous_sequence_strides(problem.q_shape()), *run.tdout, problem.q,
                       Tensor::empty(device, DType::f32, problem.logsumexp_shape()), device.default_stream(),
                       configs.dkdv.fuse_dq);
  for (Tensor* t : {&buffers.dq, &buffers.dk, &buffers.dv}) t->fill_bytes(0xff);
  launch_forward(problem, forward_call_config(problem, device), buffers.out, &buffers.lse, device.default_stream());

  ExampleRun r = start_run("attention_backward", run, device);
  r.flops = 2.5 * run.forward_flops();
  time_launches(r, device, [&](Stream& s) { launch_backward(problem, configs, buffers, s); });

  const SampledBackward reference(p);
  ErrorTally tally = reference.check_dq(download_values(buffers.dq));
  tally.merge(reference.check_dkdv(download_values(buffers.dk), download_values(buffers.dv)));
  record(tally, r);
  return r;
}

}  // namespace tilejit::ops
