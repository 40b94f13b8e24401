#include "ops/attention/candidate_runner.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>
#include <random>

#include "ops/attention/host_reference.h"
#include "ops/attention/launch.h"
#include "ops/common/host_values.h"

namespace tilejit::ops::attention_detail {
namespace {

class AttentionCandidateRunner final : public autotune::CandidateRunner {
 public:
  AttentionCandidateRunner(const AttentionCandidateRunner&) = delete;  // problem_ points into it
  AttentionCandidateRunner& operator=(const AttentionCandidateRunner&) = delete;
  AttentionCandidateRunner(const AttentionTuningSpec& spec, Device& device, const autotune::ProblemShape& shape,
                           const autotune::TimingOptions& timing, uint64_t seed)
      : device_(device), timer_(device, timing) {
    HostAttention host;
    host.B = 1, host.T = shape["T"], host.S = shape["S"], host.N = host.K = shape["BN"], host.H = spec.head_dim;
    host.causal = spec.causal, host.dtype = spec.dtype, host.scale = 1 / std::sqrt(double(host.H));
    std::mt19937_64 rng(seed);
    auto input = [&](std::vector<double>& values, std::optional<Tensor>& tensor, int64_t rows) {
      std::vector<uint8_t> bytes = random_elements(spec.dtype, rows * host.N * host.H, rng);
      values = host_values(spec.dtype, bytes);
      tensor = upload_elements(device, spec.dtype, {1, rows, host.N, host.H}, bytes.data());
    };
    input(host.q, q_, host.T);
    input(host.k, k_, host.S);
    input(host.v, v_, host.S);
    reference_.emplace(host);
    AttentionOptions options;
    options.is_causal = spec.causal;
    options.return_logsumexp = true;
    problem_ = check_attention(OpArguments("attention"), *q_, *k_, *v_, options);
    out_ = Tensor::empty(device, spec.dtype, problem_->q_shape());
    lse_ = Tensor::empty(device, DType::f32, problem_->logsumexp_shape());
  }

  const DeviceInfo& device() const override { return device_.info(); }

  KernelReport prepare(const autotune::Config& config) override {
    return prepare_forward(*problem_, kernel_config_of(config), *out_, &*lse_, device_);
  }

  autotune::Measurement measure(const autotune::Config& config) override {
    const KernelConfig c = kernel_config_of(config);
    auto launch = [&](Stream& s) { launch_forward(*problem_, c, *out_, &*lse_, s); };
    Stream& s = device_.default_stream();
    out_->fill_bytes(0xff);  // NaN in every float format
    lse_->fill_bytes(0xff);
    launch(s);
    s.synchronize();
    ErrorTally tally = reference_->check(download_values(*out_), download_values(*lse_));
    if (!tally.ok) return {false, fmt::format("max error {:.3g} on sampled rows", tally.max_abs_error), 0};
    return {true, "", timer_.median_ms(launch)};
  }

 private:
  Device& device_;
  autotune::LaunchTimer timer_;
  std::optional<SampledForward> reference_;
  std::optional<Tensor> q_, k_, v_, out_, lse_;
  std::optional<AttentionProblem> problem_;  // refers to q_, k_ and v_
};

}  // namespace

std::unique_ptr<autotune::CandidateRunner> make_attention_runner(const AttentionTuningSpec& spec, Device& device,
                                                                 const autotune::ProblemShape& shape,
                                                                 const autotune::TimingOptions& timing,
                                                                 uint64_t seed) {
  return std::make_unique<AttentionCandidateRunner>(spec, device, shape, timing, seed);
}

}  // namespace tilejit::ops::attention_detail
