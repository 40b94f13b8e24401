#include "ops/gemm/gemm_candidate_runner.h"

#include <fmt/format.h>

#include <optional>
#include <random>

#include "ops/common/host_values.h"
#include "ops/gemm/gemm_launch.h"
#include "ops/gemm/gemm_operands.h"
#include "ops/gemm/gemm_row_check.h"

namespace tilejit::ops::gemm_detail {
namespace {

class GemmCandidateRunner final : public autotune::CandidateRunner {
 public:
  GemmCandidateRunner(const GemmCandidateRunner&) = delete;  // problem_ points into it
  GemmCandidateRunner& operator=(const GemmCandidateRunner&) = delete;
  GemmCandidateRunner(const GemmTuningSpec& spec, Device& device, const autotune::ProblemShape& shape,
                      const autotune::TimingOptions& timing, uint64_t seed)
      : spec_(spec), device_(device), m_(shape["M"]), n_(shape["N"]), k_(shape["K"]), timer_(device, timing) {
    std::mt19937_64 rng(seed);
    // fp8 operands hold small integers, which the tensor cores sum exactly where
    // small_integer_sums_exact says so: the check then allows an f32 sum's error only.
    auto operand = [&](DType dtype, int64_t count) {
      return is_fp8(spec.a) ? random_integer_elements(dtype, count, 4, rng) : random_elements(dtype, count, rng);
    };
    // Made as the device stores them: the reference reads them in place.
    std::vector<uint8_t> a = operand(spec.a, m_ * k_), b = operand(spec.b, k_ * n_);
    reference_.emplace(StoredMatrix{spec.a, a.data(), m_, k_, spec.a_transposed},
                       StoredMatrix{spec.b, b.data(), k_, n_, spec.b_transposed});
    a_ = upload_elements(device, spec.a, spec.a_transposed ? std::vector{k_, m_} : std::vector{m_, k_}, a.data());
    b_ = upload_elements(device, spec.b, spec.b_transposed ? std::vector{n_, k_} : std::vector{k_, n_}, b.data());
    out_ = Tensor::empty(device, spec.out, {m_, n_});
    options_.transpose_a = spec.a_transposed, options_.transpose_b = spec.b_transposed;
    options_.out_dtype = spec.out, options_.precision = spec.precision;
    options_.fp8_fast_accumulation = spec.fast_accumulation;
    if (is_fp8(spec.a)) {
      const float one = 1;
      options_.a_scale_inv = options_.b_scale_inv = upload_elements(device, DType::f32, {1}, &one);
    }
    problem_ = check_gemm(*a_, *b_, options_, &*out_);
    workspace_like_ = Tensor::empty(device, problem_->features.accumulator(), {1});
  }

  const DeviceInfo& device() const override { return device_.info(); }

  KernelReport prepare(const autotune::Config& config) override {
    GemmConfig c = gemm_config_of(config, spec_);
    // Timed, it would be the config without it again.
    if (c.warp_specialize) {
      GemmOperands operands = gemm_operands(*problem_, c, device_.info());
      if (!operands.a || !operands.b)
        fail("warp_specialize: a producer warpgroup needs both operands through TMA (sm_90+, tensor descriptors); "
             "on {} this gemm reads {} through pointers",
             device_.info().name, !operands.a && !operands.b ? "A and B" : !operands.a ? "A" : "B");
    }
    return prepare_gemm_with(*problem_, c, device_, *workspace_like_);
  }

  autotune::Measurement measure(const autotune::Config& config) override {
    auto turn = timer_.take_turn();
    GemmConfig c = gemm_config_of(config, spec_);
    Stream& s = device_.default_stream();
    out_->fill_bytes(0xff);
    launch_gemm_with(*problem_, c, s);
    s.synchronize();
    const GemmFeatures& f = problem_->features;
    const double allowed = is_fp8(spec_.a) && small_integer_sums_exact(f, k_) ? 1e-5 : accumulation_error(f, k_);
    RowCheck check = reference_->check(*out_, allowed, output_rounding(spec_.out));
    if (!check.ok)
      return {false, fmt::format("max error {:.3g} exceeds {:.3g} + {:.0e} * |reference|", check.max_abs_error,
                                 check.atol, output_rounding(spec_.out)),
              0};
    return {true, "", timer_.median_ms([&](Stream& stream) { launch_gemm_with(*problem_, c, stream); })};
  }

 private:
  GemmTuningSpec spec_;
  Device& device_;
  int64_t m_, n_, k_;
  autotune::LaunchTimer timer_;
  std::optional<SampledRows> reference_;
  std::optional<Tensor> a_, b_, out_, workspace_like_;
  GemmOptions options_;
  std::optional<GemmProblem> problem_;  // refers to a_, b_ and options_
};

}  // namespace

GemmConfig gemm_config_of(const autotune::Config& config, const GemmTuningSpec& spec) {
  GemmConfig c;
  c.block_m = config["BLOCK_M"], c.block_n = config["BLOCK_N"], c.block_k = config["BLOCK_K"];
  c.split_k = config["SPLIT_K"], c.num_warps = config["num_warps"], c.num_stages = config["num_stages"];
  c.a_transposed = spec.a_transposed, c.b_transposed = spec.b_transposed;
  // Spaces without these dims (f32 operands) leave them out.
  c.warp_specialize = config.has("warp_specialize") && config["warp_specialize"] != 0;
  c.persistent = config.has("PERSISTENT") && config["PERSISTENT"] != 0;
  c.cluster_m = config.has("cluster_x") ? config["cluster_x"] : 1;
  return c;
}

std::unique_ptr<autotune::CandidateRunner> make_gemm_runner(const GemmTuningSpec& spec, Device& device,
                                                            const autotune::ProblemShape& shape,
                                                            const autotune::TimingOptions& timing, uint64_t seed) {
  const long double m = shape["M"], n = shape["N"], k = shape["K"];
  const long double device_bytes =
      m * k * dtype_storage_bytes(spec.a) + k * n * dtype_storage_bytes(spec.b) + m * n * dtype_storage_bytes(spec.out);
  // The operands as stored, beside their reference.
  const long double host_bytes = m * k * dtype_storage_bytes(spec.a) + k * n * dtype_storage_bytes(spec.b) +
                                 SampledRows::host_bytes(shape["K"], shape["N"]);
  autotune::check_problem_fits("gemm tuning", shape, device_bytes, host_bytes, device.info());
  return std::make_unique<GemmCandidateRunner>(spec, device, shape, timing, seed);
}

}  // namespace tilejit::ops::gemm_detail
