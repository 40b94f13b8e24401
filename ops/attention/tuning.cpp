#include "ops/attention/tuning.h"

#include <fmt/format.h>

#include <map>
#include <memory>
#include <mutex>

#include "autotune/bucket_config.h"
#include "ops/attention/candidate_runner.h"

namespace tilejit::ops::attention_detail {
namespace {

using autotune::Config;
using autotune::ProblemShape;

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Live values per thread: the f32 accumulator (BLOCK_M, H) and logits (BLOCK_M, BLOCK_N), and
// the q tile, packed two to a register for 16-bit inputs, split in two for tf32x3.
double values_per_thread(const AttentionTuningSpec& spec, const Config& c) {
  const double q_share = spec.dtype == DType::f32 ? 2.0 : 0.5;
  const double bm = double(c["BLOCK_M"]), h = double(padded_head_dim(spec.head_dim));
  return (bm * h * (1 + q_share) + bm * double(c["BLOCK_N"])) / (32.0 * double(c["num_warps"]));
}

// Query blocks of 16 to 128 rows, key blocks of 16 to 128, head-dim chunks up to the padded
// head dim; at most 128 live values per thread (more spill).
autotune::ConfigSpace space_of(const AttentionTuningSpec& spec) {
  autotune::ConfigSpace space;
  space.add("BLOCK_M", {16, 32, 64, 128}).add("BLOCK_N", {16, 32, 64, 128}).add("num_warps", {4, 8});
  space.add("HEAD_CHUNK", {16, 32, 64, 128});
  const int64_t padded = padded_head_dim(spec.head_dim);
  space.require(fmt::format("HEAD_CHUNK <= {} (the padded head dim)", padded),
                [padded](const Config& c, const ProblemShape&) { return c["HEAD_CHUNK"] <= padded; });
  space.require("at most 128 live values per thread", [spec](const Config& c, const ProblemShape&) {
    return values_per_thread(spec, c) <= 128;
  });
  return space;
}

// The launch a config makes: every program reads its kv head's keys and values up to its last
// kept block (about half of them when causal) and multiplies them with its query block twice.
autotune::LaunchWork work_of(const AttentionTuningSpec& spec, const Config& c, const ProblemShape& s) {
  const int64_t bm = c["BLOCK_M"], bn = c["BLOCK_N"], h = padded_head_dim(spec.head_dim);
  const int64_t programs = cdiv(s["T"], bm) * s["BN"];
  const double kept = spec.causal ? 0.5 : 1.0, bytes = dtype_storage_bytes(spec.dtype);
  const double keys = double(cdiv(s["S"], bn) * bn) * kept;
  return {programs, int(c["num_warps"]), 4.0 * double(programs * bm * h) * keys,
          bytes * (double(programs) * keys * double(2 * h) + 2.0 * double(s["BN"] * s["T"] * h)),
          values_per_thread(spec, c)};
}

Config tuned_values(const KernelConfig& c) {
  return Config{{{"BLOCK_M", c.block_m}, {"BLOCK_N", c.block_n}, {"num_warps", c.num_warps},
                 {"HEAD_CHUNK", c.head_chunk}}};
}

autotune::TunableKernel make_tunable(const AttentionTuningSpec& spec) {
  autotune::TunableKernel op;
  op.name = "ops.attention";
  op.dims = {"BN", "T", "S"};
  op.space = space_of(spec);
  op.bucketing.power_of_two("BN").power_of_two("T").power_of_two("S");
  op.dtypes = std::string(dtype_name(spec.dtype));
  op.layout = spec.layout();
  op.work = [spec](const Config& c, const ProblemShape& s) { return work_of(spec, c, s); };
  op.heuristic = [spec](const ProblemShape&, const DeviceInfo&) {
    return tuned_values(choose_configs(spec.dtype, spec.head_dim).forward);
  };
  op.runner = [spec](Device& device, const ProblemShape& s, const autotune::TimingOptions& timing, uint64_t seed) {
    return make_attention_runner(spec, device, s, timing, seed);
  };
  return op;
}

// What a call's config depends on, compared as plain values.
struct CallKey {
  const Device* device;
  DType dtype;
  int64_t head_dim;
  bool causal;
  int64_t heads, q_len, kv_len;
  auto operator<=>(const CallKey&) const = default;
};

}  // namespace

std::optional<AttentionTuningSpec> AttentionTuningSpec::of(const AttentionProblem& p) {
  if (p.bias || p.mask || p.q_seqlens || p.kv_seqlens) return std::nullopt;
  // Every key to the left; to the right none (top-left causal) or all (no mask).
  const bool causal = p.band && p.band_right < p.kv_len;
  if (p.band && (p.band_left < p.q_len || (causal && p.band_right != 0))) return std::nullopt;
  return AttentionTuningSpec{p.dtype, p.head_dim, causal};
}

std::string AttentionTuningSpec::layout() const {
  return fmt::format("h{}{}", head_dim, causal ? "/causal" : "");
}

const autotune::TunableKernel& attention_tunable(const AttentionTuningSpec& spec) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<autotune::TunableKernel>> tunables;
  std::lock_guard lock(mutex);
  std::unique_ptr<autotune::TunableKernel>& op = tunables[fmt::format("{}/{}", dtype_name(spec.dtype), spec.layout())];
  if (!op) op = std::make_unique<autotune::TunableKernel>(make_tunable(spec));
  return *op;
}

KernelConfig kernel_config_of(const Config& config) {
  KernelConfig c;
  c.block_m = config["BLOCK_M"], c.block_n = config["BLOCK_N"];
  c.num_warps = int(config["num_warps"]), c.head_chunk = config["HEAD_CHUNK"];
  return c;
}

KernelConfig forward_call_config(const AttentionProblem& p, Device& device) {
  const KernelConfig heuristic = choose_configs(p.dtype, p.head_dim).forward;
  const std::optional<AttentionTuningSpec> spec = AttentionTuningSpec::of(p);
  const int64_t heads = p.batch * p.heads;
  if (!spec || heads * p.q_len * p.kv_len == 0) return heuristic;
  const CallKey key{&device, spec->dtype, spec->head_dim, spec->causal, heads, p.q_len, p.kv_len};
  static std::mutex mutex;
  static std::map<CallKey, KernelConfig> decided;
  {
    std::lock_guard lock(mutex);
    if (auto it = decided.find(key); it != decided.end()) return it->second;
  }
  const ProblemShape shape{{{"BN", heads}, {"T", p.q_len}, {"S", p.kv_len}}};
  std::optional<Config> config = autotune::tuned_bucket_config(attention_tunable(*spec), shape, device);
  std::lock_guard lock(mutex);
  return decided.emplace(key, config ? kernel_config_of(*config) : heuristic).first->second;
}

}  // namespace tilejit::ops::attention_detail
