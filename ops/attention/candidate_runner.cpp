#include "ops/attention/candidate_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>

#include "ops/attention/host_reference.h"
#include "ops/attention/kernel_arguments.h"
#include "ops/attention/launch.h"
#include "ops/common/host_values.h"

namespace tilejit::ops::attention_detail {
namespace {

class AttentionCandidateRunner final : public autotune::CandidateRunner {
 public:
  AttentionCandidateRunner(const AttentionCandidateRunner&) = delete;  // problem_ points into it
  AttentionCandidateRunner& operator=(const AttentionCandidateRunner&) = delete;
  AttentionCandidateRunner(const AttentionTuningSpec& spec, TunedKernel kernel, Device& device,
                           const autotune::ProblemShape& shape, const autotune::TimingOptions& timing, uint64_t seed)
      : kernel_(kernel), device_(device), timer_(device, timing) {
    HostAttention host;
    if (shape["G"] < 1 || shape["BN"] % shape["G"] != 0)
      fail("attention tuning: BN = {} query heads do not make groups of G = {}", shape["BN"], shape["G"]);
    host.B = 1, host.T = shape["T"], host.S = shape["S"], host.N = shape["BN"], host.K = shape["BN"] / shape["G"];
    host.H = spec.head_dim;
    host.causal = spec.causal, host.dtype = spec.dtype, host.scale = 1 / std::sqrt(double(host.H));
    std::mt19937_64 rng(seed);
    auto input = [&](std::vector<double>& values, std::optional<Tensor>& tensor, int64_t rows, int64_t heads) {
      RandomTensor made = random_tensor(device, spec.dtype, {1, rows, heads, host.H}, rng);
      values = std::move(made.values), tensor = made.tensor;
    };
    input(host.q, q_, host.T, host.N);
    input(host.k, k_, host.S, host.K);
    input(host.v, v_, host.S, host.K);
    AttentionOptions options;
    options.is_causal = spec.causal;
    options.return_logsumexp = true;
    problem_ = check_attention(OpArguments("attention"), *q_, *k_, *v_, options);
    heuristic_ = choose_configs(spec.dtype, spec.head_dim, device.info());
    Tensor out = Tensor::empty(device, spec.dtype, problem_->q_shape());
    Tensor lse = Tensor::empty(device, DType::f32, problem_->logsumexp_shape());
    if (kernel == TunedKernel::forward) {
      forward_reference_.emplace(host);
    } else {
      std::optional<Tensor> dout;
      input(host.dout, dout, host.T, host.N);
      auto turn = timer_.take_turn();
      Stream& s = device.default_stream();
      launch_forward(*problem_, heuristic_.forward, out, &lse, s);
      SequenceStrides contiguous = contiguous_sequence_strides(problem_->q_shape());
      buffers_.emplace(
          backward_buffers(*problem_, out, contiguous, *dout, contiguous, lse, s, kernel == TunedKernel::dkdv));
      launch_backward_rows(*problem_, heuristic_.preprocess, *buffers_, s);
      s.synchronize();
      backward_reference_.emplace(host);
    }
    out_ = out, lse_ = lse;
  }

  const DeviceInfo& device() const override { return device_.info(); }

  // The candidate's kernel, and beside it what a call runs with it (its cache entries join the
  // report's, for a pack of tuned kernels): the forward without logsumexp; the backward's row
  // statistics.
  KernelReport prepare(const autotune::Config& config) override {
    const KernelConfig c = kernel_config_of(config);
    KernelReport report, beside;
    switch (kernel_) {
      case TunedKernel::forward:
        report = prepare_forward(*problem_, c, *out_, &*lse_, device_);
        beside = prepare_forward(*problem_, c, *out_, nullptr, device_);
        break;
      case TunedKernel::dkdv:
      case TunedKernel::dq:
        report = kernel_ == TunedKernel::dkdv ? prepare_dkdv(*problem_, c, *buffers_, device_)
                                              : prepare_dq(*problem_, c, *buffers_, device_);
        beside = prepare_backward_rows(*problem_, heuristic_.preprocess, *buffers_, device_);
        break;
    }
    report.cache_entries.insert(report.cache_entries.end(), beside.cache_entries.begin(), beside.cache_entries.end());
    return report;
  }

  autotune::Measurement measure(const autotune::Config& config) override {
    auto turn = timer_.take_turn();
    const KernelConfig c = kernel_config_of(config);
    auto launch = [&](Stream& s) {
      switch (kernel_) {
        case TunedKernel::forward: return launch_forward(*problem_, c, *out_, &*lse_, s);
        case TunedKernel::dkdv:
          // What a call runs for all three gradients: a dk / dv config that does not sum dq
          // leaves it to the dq kernel (at its heuristic config).
          launch_dkdv(*problem_, c, *buffers_, s);
          if (!c.fuse_dq) launch_dq(*problem_, heuristic_.dq, *buffers_, s);
          return;
        case TunedKernel::dq: return launch_dq(*problem_, c, *buffers_, s);
      }
    };
    Stream& s = device_.default_stream();
    for (Tensor* output : outputs()) output->fill_bytes(0xff);  // NaN in every float format
    launch(s);
    s.synchronize();
    ErrorTally tally = check();
    if (!tally.ok) return {false, fmt::format("max error {:.3g} on sampled rows", tally.max_abs_error), 0};
    return {true, "", timer_.median_ms(launch)};
  }

 private:
  std::vector<Tensor*> outputs() {
    switch (kernel_) {
      case TunedKernel::forward: return {&*out_, &*lse_};
      case TunedKernel::dkdv: return {&buffers_->dk, &buffers_->dv, &buffers_->dq};
      case TunedKernel::dq: return {&buffers_->dq};
    }
    return {};
  }

  ErrorTally check() const {
    switch (kernel_) {
      case TunedKernel::forward: return forward_reference_->check(download_values(*out_), download_values(*lse_));
      case TunedKernel::dkdv: {
        ErrorTally tally =
            backward_reference_->check_dkdv(download_values(buffers_->dk), download_values(buffers_->dv));
        tally.merge(backward_reference_->check_dq(download_values(buffers_->dq)));
        return tally;
      }
      case TunedKernel::dq: return backward_reference_->check_dq(download_values(buffers_->dq));
    }
    return {};
  }

  TunedKernel kernel_;
  AttentionConfigs heuristic_;  // the configs of the kernels not tuned here
  Device& device_;
  autotune::LaunchTimer timer_;
  std::optional<SampledForward> forward_reference_;
  std::optional<SampledBackward> backward_reference_;
  std::optional<Tensor> q_, k_, v_, out_, lse_;
  std::optional<AttentionProblem> problem_;  // refers to q_, k_ and v_
  std::optional<BackwardBuffers> buffers_;   // for a backward kernel: its inputs and outputs
};

}  // namespace

std::unique_ptr<autotune::CandidateRunner> make_attention_runner(const AttentionTuningSpec& spec, TunedKernel kernel,
                                                                 Device& device, const autotune::ProblemShape& shape,
                                                                 const autotune::TimingOptions& timing,
                                                                 uint64_t seed) {
  // q and out of T rows, k and v of S rows, each of BN (or BN / G) heads by H; the backward
  // adds dout and the three gradients, as many again. The host holds q, k and v (and dout).
  const long double kv_heads = shape["BN"] / std::max<long double>(shape["G"], 1);  // G < 1 is refused below
  const long double q_rows = shape["T"] * static_cast<long double>(shape["BN"]), kv_rows = shape["S"] * kv_heads;
  const long double forward = (2 * q_rows + 2 * kv_rows) * spec.head_dim;
  const bool backward = kernel != TunedKernel::forward;
  autotune::check_problem_fits("attention tuning", shape, (backward ? 2 : 1) * forward * dtype_storage_bytes(spec.dtype),
                               ((backward ? 2 : 1) * q_rows + 2 * kv_rows) * spec.head_dim * sizeof(double),
                               device.info());
  return std::make_unique<AttentionCandidateRunner>(spec, kernel, device, shape, timing, seed);
}

}  // namespace tilejit::ops::attention_detail
