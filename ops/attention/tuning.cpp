#include "ops/attention/tuning.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "autotune/bucket_config.h"
#include "autotune/call_memo.h"
#include "autotune/cost_model.h"
#include "ops/attention/candidate_runner.h"

namespace tilejit::ops::attention_detail {
namespace {

using autotune::Config;
using autotune::ProblemShape;

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A program's rows (queries for the forward and dq, keys for dk / dv) and the rows it steps
// over (keys, or queries), in a config.
int64_t program_rows(TunedKernel kernel, const Config& c) {
  return kernel == TunedKernel::dkdv ? c["BLOCK_N"] : c["BLOCK_M"];
}
int64_t step_rows(TunedKernel kernel, const Config& c) {
  return kernel == TunedKernel::dkdv ? c["BLOCK_M"] : c["BLOCK_N"];
}

// Live values per thread: the f32 accumulators of the program's rows (one for the forward and
// dq, dk and dv for dk / dv), its resident operands (q; q and dout; k and v), packed two to a
// register for 16-bit inputs, where they are held in registers, and the f32 (rows, step) tiles
// (the logits; p and dp in the backward). Overlapping products keeps one more (rows, step) tile
// live: the forward's p of the previous block (16-bit), the backward's dp while the softmax
// runs; dk / dv summing dq (FUSE_DQ) one (H, step) tile of its shares. With wgmma (sm_90,
// 16-bit inputs) the resident operands stay in shared memory.
double values_per_thread(TunedKernel kernel, const AttentionTuningSpec& spec, const Config& c,
                         bool operands_in_registers) {
  const double share = spec.dtype == DType::f32 ? 1.0 : 0.5;
  const double rows = double(program_rows(kernel, c)), h = double(padded_head_dim(spec.head_dim));
  const double step = double(step_rows(kernel, c));
  const double accumulators = kernel == TunedKernel::dkdv ? 2 : 1;
  const double operands = !operands_in_registers ? 0 : kernel == TunedKernel::forward ? 1 : 2;
  const double tiles = kernel == TunedKernel::forward ? 1 : 2;
  const double overlapped = c["OVERLAP"] == 0 ? 0 : kernel == TunedKernel::forward ? share : 1;
  const double dq_shares = c.has("FUSE_DQ") && c["FUSE_DQ"] != 0 ? h * step : 0;
  return (rows * h * (accumulators + operands * share) + (tiles + overlapped) * rows * step + dq_shares) /
         (32.0 * double(c["num_warps"]));
}

// The space's bound on live values per thread, counted as they are on the GPU that holds the
// fewest (the operands of 16-bit inputs in shared memory, as wgmma reads them); the cost model
// charges a GPU whose registers hold fewer for its spills. On sm_90a, ptxas assembles 16-bit
// configs of up to about autotune::kWgmmaRegisterValues without spills (dk / dv at head dim
// 128: 128 keys by 32 queries, overlapped, count 176 and take 230 registers; dq's 128 queries by
// 64 keys and the forward's 128 by 128 count 160 and take 255 and 243), and up to the bound
// with a few (dk / dv by 64 queries, 224: 44 bytes).
constexpr double kMostValuesPerThread = 224;

bool operands_in_registers(const AttentionTuningSpec& spec, const DeviceInfo& device) {
  return spec.dtype == DType::f32 || device.cc_major != 9;
}

// Whether the space offers a producer warpgroup (warp_specialize): for the forward and dq with
// 16-bit inputs, the kernels that stream their blocks in a loop at their top (config.h); dk / dv
// would run as without it.
bool offers_producer(TunedKernel kernel, const AttentionTuningSpec& spec) {
  return kernel != TunedKernel::dkdv && spec.dtype != DType::f32;
}

// Whether it also offers pingpong: for the forward, whose OVERLAP issues both products before
// the softmax, so that a warpgroup's turn covers the issue alone (in dq it would cover the
// softmax's gradient too).
bool offers_pingpong(TunedKernel kernel, const AttentionTuningSpec& spec) {
  return kernel == TunedKernel::forward && offers_producer(kernel, spec);
}

// Blocks of 16 to 128 rows either way, head-dim chunks up to the padded head dim, one or two
// pipeline stages (16-bit inputs), products overlapped or not (with two stages), a producer
// warpgroup or not (where offered, with two stages and whole warpgroups), for the forward
// consumer warpgroups that take turns or not, for dk / dv summing dq or leaving it to the dq
// kernel; at most kMostValuesPerThread live values per thread. The cost model ranks a tile's
// variants by the copy latency their pipelines leave exposed and the part of the softmax their
// schedules leave exposed (work_of); the GPU's timing decides among the top k.
autotune::ConfigSpace space_of(TunedKernel kernel, const AttentionTuningSpec& spec) {
  autotune::ConfigSpace space;
  space.add("BLOCK_M", {16, 32, 64, 128}).add("BLOCK_N", {16, 32, 64, 128}).add("num_warps", {4, 8});
  space.add("HEAD_CHUNK", {16, 32, 64, 128, 256});
  // f32 operands are split for tf32x3 in registers: the pipeline has no loads to take over.
  space.add("num_stages", spec.dtype == DType::f32 ? std::vector<int64_t>{1} : std::vector<int64_t>{1, 2});
  space.add("OVERLAP", spec.dtype == DType::f32 ? std::vector<int64_t>{0} : std::vector<int64_t>{0, 1});
  space.require("OVERLAP with two stages only (early products run on from a ring of staged blocks)",
                [](const Config& c, const ProblemShape&) { return c["OVERLAP"] == 0 || c["num_stages"] == 2; });
  if (offers_producer(kernel, spec)) {
    space.add("warp_specialize", {0, 1});
    space.require("warp_specialize with two stages and num_warps a multiple of 4 (wgmma's warpgroups)",
                  [](const Config& c, const ProblemShape&) {
                    return c["warp_specialize"] == 0 || (c["num_stages"] == 2 && c["num_warps"] % 4 == 0);
                  });
  }
  if (kernel == TunedKernel::dkdv) space.add("FUSE_DQ", {0, 1});
  if (offers_pingpong(kernel, spec)) {
    space.add("pingpong", {0, 1});
    // Each warpgroup owns 64 whole rows: inside a turn nothing moves through shared memory.
    space.require("pingpong with warp_specialize, OVERLAP and two consumer warpgroups of 64 rows each",
                  [](const Config& c, const ProblemShape&) {
                    return c["pingpong"] == 0 || (c["warp_specialize"] == 1 && c["OVERLAP"] == 1 &&
                                                  c["num_warps"] == 8 && c["BLOCK_M"] == 128);
                  });
  }
  const int64_t padded = padded_head_dim(spec.head_dim);
  space.require(fmt::format("HEAD_CHUNK <= {} (the padded head dim)", padded),
                [padded](const Config& c, const ProblemShape&) { return c["HEAD_CHUNK"] <= padded; });
  space.require(fmt::format("at most {} live values per thread", kMostValuesPerThread),
                [kernel, spec](const Config& c, const ProblemShape&) {
                  return values_per_thread(kernel, spec, c, spec.dtype == DType::f32) <= kMostValuesPerThread;
                });
  return space;
}

// The part of the softmax's exponentials that no product runs under. wgmma's products run
// asynchronously: with OVERLAP a warpgroup computes one block's softmax while its product of
// the block before runs, with pingpong one consumer warpgroup's softmax runs under the other's
// products, and a producer warpgroup takes the copies' issue and waits off the consumers. The
// fractions hidden (OVERLAP 0.32, the producer 0.1, pingpong 0.27) make the forward at head
// dim 128, whose exponentials take half the products' time on an H100, come out in the ratios
// of FlashAttention-3's ablation there: its whole schedule at 661 TFLOP/s, 582 without the
// overlap inside a warpgroup, 570 without the producer and the pingpong. Elsewhere (mma.sync,
// tf32x3) the products wait for the softmax and the softmax for them.
double softmax_exposed(const Config& c, bool async_products) {
  if (!async_products) return 1;
  auto on = [&c](const char* name) { return c.has(name) && c[name] != 0; };
  return 1 - (on("OVERLAP") ? 0.32 : 0) - (on("warp_specialize") ? 0.1 : 0) - (on("pingpong") ? 0.27 : 0);
}

// The launch a config makes: a program per block of its rows (queries of a query head, or keys
// of a kv head for dk / dv, which visits the queries of its G heads) reads the other side's rows
// up to its last kept block (about half of them when causal), two operands of H each (from
// memory once per head: a head's programs run at about the same time, and L2 serves the rest
// to each program), and multiplies with them on tensor cores (wgmma where each warpgroup has
// 64 of the program's rows): twice in the forward (q k^T, p v), three times for
// dq (and dp = dout v^T, ds k), four for dk / dv (and p^T dout, ds^T q), with one exponential
// per (row, other row) pair. Each block it steps over is a step of its loop pipeline. It waits
// once per block and once more per head-dim chunk (whose products are issued apart), so of two
// tilings the one with fewer blocks and chunks comes first. Its live values are counted as they
// lie on `device` (values_per_thread); with wgmma about autotune::kWgmmaRegisterValues fit in
// registers, with mma.sync about 128.
autotune::LaunchWork work_of(TunedKernel kernel, const AttentionTuningSpec& spec, const Config& c,
                             const ProblemShape& s, const DeviceInfo& device) {
  const int64_t rows = program_rows(kernel, c), step = step_rows(kernel, c), h = padded_head_dim(spec.head_dim);
  const bool by_keys = kernel == TunedKernel::dkdv;
  const int64_t heads = by_keys ? s["BN"] / s["G"] : s["BN"];
  const int64_t programs = cdiv(by_keys ? s["S"] : s["T"], rows) * heads;
  const double kept = spec.causal ? 0.5 : 1.0, bytes = dtype_storage_bytes(spec.dtype);
  const double others = double(cdiv(by_keys ? s["T"] : s["S"], step) * step) * kept * double(by_keys ? s["G"] : 1);
  // dk / dv's candidates give dq too: by a fifth product and atomic adds of its shares into
  // f32 sums (FUSE_DQ), or by the dq kernel's three products, which are counted here.
  const bool sums_dq = kernel == TunedKernel::dkdv && c["FUSE_DQ"] != 0;
  const double products = kernel == TunedKernel::forward ? 2 : kernel == TunedKernel::dq ? 3 : sums_dq ? 5 : 7;
  const double own_bytes = bytes * 2.0 * double(s["BN"] * (by_keys ? s["S"] : s["T"]) * h);
  const double other_rows = double(by_keys ? s["BN"] * s["T"] : s["BN"] / s["G"] * s["S"]) * kept;
  // A producer warpgroup adds its four warps to the launch.
  const int warps = int(c["num_warps"]) + (c.has("warp_specialize") && c["warp_specialize"] ? 4 : 0);
  // Each program adds its share of dq for every query it visits: 4 bytes an add.
  const double dq_sums = sums_dq ? 4.0 * double(programs * h) * others : 0;
  autotune::LaunchWork work{programs,
                            warps,
                            2.0 * products * double(programs * rows * h) * others,
                            bytes * other_rows * double(2 * h) + own_bytes + dq_sums,
                            values_per_thread(kernel, spec, c, operands_in_registers(spec, device))};
  work.l2_bytes = bytes * double(programs) * others * double(2 * h);
  const bool wgmma = spec.dtype != DType::f32 && device.cc_major == 9 && rows >= 16 * c["num_warps"];
  if (spec.dtype != DType::f32) {  // f32 runs tf32x3 (three products per one) through registers
    work.tensor_flops = work.flops;
    if (wgmma) work.register_values = autotune::kWgmmaRegisterValues;
    // sm_90's mma.sync reaches about two thirds of wgmma's rate (FlashAttention-2, built on
    // it, runs at about half of FlashAttention-3's speed on an H100).
    else if (device.cc_major == 9) work.tensor_rate = 2.0 / 3.0;
  }
  const int64_t chunks = cdiv(h, std::min(c["HEAD_CHUNK"], h));
  work.waits_per_program = int64_t(others / double(step)) * (1 + chunks);
  work.copy_steps_per_program = int64_t(others / double(step));
  work.stages = int(c["num_stages"]);
  work.special_ops = double(programs * rows) * others;
  work.special_exposed = softmax_exposed(c, wgmma);
  return work;
}

// The constants of the space of `kernel` for `spec` that `c` runs with (its head chunk at most
// the padded head dim).
Config tuned_values(TunedKernel kernel, const AttentionTuningSpec& spec, const KernelConfig& c) {
  Config values{{{"BLOCK_M", c.block_m},
                 {"BLOCK_N", c.block_n},
                 {"num_warps", c.num_warps},
                 {"HEAD_CHUNK", std::min(c.head_chunk, padded_head_dim(spec.head_dim))},
                 {"num_stages", c.num_stages},
                 {"OVERLAP", c.overlap ? 1 : 0}}};
  if (offers_producer(kernel, spec)) values.values.emplace_back("warp_specialize", c.warp_specialize ? 1 : 0);
  if (offers_pingpong(kernel, spec)) values.values.emplace_back("pingpong", c.pingpong ? 1 : 0);
  if (kernel == TunedKernel::dkdv) values.values.emplace_back("FUSE_DQ", c.fuse_dq ? 1 : 0);
  return values;
}

KernelConfig heuristic_config(TunedKernel kernel, const AttentionTuningSpec& spec, const DeviceInfo& device) {
  const AttentionConfigs configs = choose_configs(spec.dtype, spec.head_dim, device);
  switch (kernel) {
    case TunedKernel::forward: return configs.forward;
    case TunedKernel::dkdv: return configs.dkdv;
    case TunedKernel::dq: return configs.dq;
  }
  return configs.forward;
}

const char* op_name(TunedKernel kernel) {
  switch (kernel) {
    case TunedKernel::forward: return "ops.attention";
    case TunedKernel::dkdv: return "ops.attention_dkdv";
    case TunedKernel::dq: return "ops.attention_dq";
  }
  return "?";
}

autotune::TunableKernel make_tunable(const AttentionTuningSpec& spec, TunedKernel kernel) {
  autotune::TunableKernel op;
  op.name = op_name(kernel);
  op.dims = {"BN", "G", "T", "S"};
  op.space = space_of(kernel, spec);
  // G exactly: a group of one is its own kernel (the JIT specializes arguments equal to 1).
  op.bucketing.power_of_two("BN").exact("G").power_of_two("T").power_of_two("S");
  op.dtypes = std::string(dtype_name(spec.dtype));
  op.layout = spec.layout();
  op.work = [spec, kernel](const Config& c, const ProblemShape& s, const DeviceInfo& device) {
    return work_of(kernel, spec, c, s, device);
  };
  op.heuristic = [spec, kernel](const ProblemShape&, const DeviceInfo& device) {
    return tuned_values(kernel, spec, heuristic_config(kernel, spec, device));
  };
  op.runner = [spec, kernel](Device& device, const ProblemShape& s, const autotune::TimingOptions& timing,
                             uint64_t seed) { return make_attention_runner(spec, kernel, device, s, timing, seed); };
  return op;
}

// What a call's config for one kernel depends on, compared as plain values: a remembered
// answer costs a call one lookup, no strings. The shape is exact: a bucket may hold results
// of several tuned shapes, and each call runs the nearest one's.
struct CallKey {
  const Device* device;
  TunedKernel kernel;
  DType dtype;
  int64_t head_dim;
  bool causal;
  int64_t heads, group, q_len, kv_len;
  auto operator<=>(const CallKey&) const = default;
};

// The config `kernel` runs for a call of `p`: the tuning database's for its shape, else the
// heuristic's; remembered per shape.
KernelConfig call_config(const AttentionProblem& p, TunedKernel kernel, Device& device) {
  const std::optional<AttentionTuningSpec> spec = AttentionTuningSpec::of(p);
  const int64_t heads = p.batch * p.heads;
  if (!spec || heads * p.q_len * p.kv_len == 0)
    return heuristic_config(kernel, AttentionTuningSpec{p.dtype, p.head_dim, false}, device.info());
  const CallKey key{&device, kernel, spec->dtype, spec->head_dim, spec->causal, heads, p.group(), p.q_len, p.kv_len};
  static autotune::CallMemo<CallKey, KernelConfig> decided;
  return decided.get(key, [&] {
    const ProblemShape shape{{{"BN", heads}, {"G", p.group()}, {"T", p.q_len}, {"S", p.kv_len}}};
    std::optional<Config> config = autotune::tuned_bucket_config(attention_tunable(*spec, kernel), shape, device);
    return config ? kernel_config_of(*config) : heuristic_config(kernel, *spec, device.info());
  });
}

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

const autotune::TunableKernel& attention_tunable(const AttentionTuningSpec& spec, TunedKernel kernel) {
  return autotune::tunable_for(fmt::format("{}/{}/{}", op_name(kernel), dtype_name(spec.dtype), spec.layout()),
                               [&] { return make_tunable(spec, kernel); });
}

KernelConfig kernel_config_of(const Config& config) {
  KernelConfig c;
  c.block_m = config["BLOCK_M"], c.block_n = config["BLOCK_N"];
  c.num_warps = int(config["num_warps"]), c.head_chunk = config["HEAD_CHUNK"];
  c.num_stages = int(config["num_stages"]);
  c.overlap = config["OVERLAP"] != 0;
  c.warp_specialize = config.has("warp_specialize") && config["warp_specialize"] != 0;
  c.pingpong = config.has("pingpong") && config["pingpong"] != 0;
  c.fuse_dq = config.has("FUSE_DQ") && config["FUSE_DQ"] != 0;
  return c;
}

KernelConfig forward_call_config(const AttentionProblem& p, Device& device) {
  return call_config(p, TunedKernel::forward, device);
}

AttentionConfigs backward_call_configs(const AttentionProblem& p, Device& device) {
  AttentionConfigs configs = choose_configs(p.dtype, p.head_dim, device.info());
  configs.dkdv = call_config(p, TunedKernel::dkdv, device);
  configs.dq = call_config(p, TunedKernel::dq, device);
  return configs;
}

}  // namespace tilejit::ops::attention_detail
