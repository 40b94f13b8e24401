#include "ops/gemm/gemm_tuning.h"

#include <fmt/format.h>

#include <optional>

#include "autotune/bucket_config.h"
#include "autotune/call_memo.h"
#include "autotune/cost_model.h"
#include "ops/gemm/gemm_candidate_runner.h"

namespace tilejit::ops::gemm_detail {
namespace {

using autotune::Config;
using autotune::ProblemShape;

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool on_cuda_cores(const GemmTuningSpec& spec) {
  return spec.a == DType::f32 && spec.precision == dsl::Precision::ieee;
}

// The features of a plain call with the spec's dtypes, precision and accumulation.
GemmFeatures features_of(const GemmTuningSpec& spec) {
  GemmFeatures f;
  f.a = spec.a, f.b = spec.b, f.out = spec.out, f.precision = spec.precision;
  f.fast_accumulation = spec.fast_accumulation;
  return f;
}

// Operands that may come through tensor descriptors (TMA) on sm_90: all but f32, which the
// tensor cores take from registers.
bool tma_operands(const GemmTuningSpec& spec) { return spec.a != DType::f32; }

// Tiles for the tensor cores (wgmma needs 64 rows) with BLOCK_K spanning 64 or 128 bytes of a
// row and two to four stages, smaller ones for FMA; split-K up to 8 slices; with TMA operands,
// the copies issued by the consumer warps or by a producer warpgroup, which may multicast B
// to a cluster of two CTAs; one program per output tile or persistent programs.
autotune::ConfigSpace space_of(const GemmTuningSpec& spec) {
  autotune::ConfigSpace space;
  int bytes = dtype_storage_bytes(spec.a);
  if (on_cuda_cores(spec)) {
    space.add("BLOCK_M", {32, 64}).add("BLOCK_N", {32, 64, 128}).add("BLOCK_K", {8, 16});
    space.add("num_warps", {4, 8}).add("num_stages", {1, 2});
  } else {
    space.add("BLOCK_M", {64, 128}).add("BLOCK_N", {64, 128, 256}).add("BLOCK_K", {64 / bytes, 128 / bytes});
    space.add("num_warps", {4, 8}).add("num_stages", {2, 3, 4});
  }
  space.add("SPLIT_K", {1, 2, 4, 8});
  if (!on_cuda_cores(spec)) space.add("PERSISTENT", {0, 1});
  if (tma_operands(spec)) {
    space.add("warp_specialize", {0, 1}).add("cluster_x", {1, 2});
    // Only a producer warpgroup multicasts B to a cluster.
    space.require("cluster_x == 1 || warp_specialize", [](const Config& c, const ProblemShape&) {
      return c["cluster_x"] == 1 || c["warp_specialize"] == 1;
    });
  }
  // At most 128 accumulator values per thread: more spill. fp8 holds each K block's product
  // beside the accumulator (ops/common/f32_dot.h) unless it accumulates fast.
  const int64_t accumulators = features_of(spec).accumulator_tiles();
  space.require(fmt::format("{}BLOCK_M * BLOCK_N <= 128 * 32 * num_warps",
                            accumulators > 1 ? fmt::format("{} * ", accumulators) : ""),
                [accumulators](const Config& c, const ProblemShape&) {
                  return accumulators * c["BLOCK_M"] * c["BLOCK_N"] <= 128 * 32 * c["num_warps"];
                });
  // Every slice keeps at least two BLOCK_K steps.
  space.require("SPLIT_K * 2 * BLOCK_K <= K", [](const Config& c, const ProblemShape& s) {
    return c["SPLIT_K"] == 1 || 2 * c["SPLIT_K"] * c["BLOCK_K"] <= s["K"];
  });
  return space;
}

// The tensor cores' rate for the spec's inputs against 16-bit ones (autotune::LaunchWork).
double tensor_rate(const GemmTuningSpec& spec) {
  if (dtype_bits(spec.a) == 8) return 2;
  if (spec.a != DType::f32) return 1;
  return spec.precision == dsl::Precision::tf32x3 ? 0.5 / 3 : 0.5;
}

// The launch a config makes, for the cost model: A and B from memory once, their tiles read
// from L2 once per K step of every program (B's once per cluster, which multicasts them), the
// output written (with split-K, every slice's f32 partial sums, which a second kernel reads
// back and sums into the output), on the tensor cores unless f32 asks for IEEE products. A
// program's registers hold its accumulators (fp8's two, where it sums each K block's product
// apart), and the operand tiles too where no wgmma reads them from shared memory; its K steps
// each consume a block of A and of B from the pipeline's ring.
autotune::LaunchWork work_of(const GemmTuningSpec& spec, const Config& c, const ProblemShape& s,
                             const DeviceInfo& device) {
  int64_t bm = c["BLOCK_M"], bn = c["BLOCK_N"], bk = c["BLOCK_K"], split = c["SPLIT_K"];
  // Clusters (sm_90) multicast B to their CTAs; elsewhere the config runs without them.
  int64_t cluster = c.has("cluster_x") && device.cc_major >= 9 ? c["cluster_x"] : 1;
  int64_t tiles = tile_rows_in_clusters(s["M"], bm, cluster) * cdiv(s["N"], bn);
  double k = double(cdiv(s["K"], bk) * bk);
  double operand_bytes = dtype_storage_bytes(spec.a);
  const double outputs = double(s["M"] * s["N"]), out_bytes = outputs * dtype_storage_bytes(spec.out);
  const double partial_bytes = split > 1 ? 4.0 * double(split) * outputs : 0;
  double threads = 32.0 * double(c["num_warps"]);
  // A producer warpgroup adds its four warps to the launch.
  int warps = int(c["num_warps"]) + (c.has("warp_specialize") && c["warp_specialize"] ? 4 : 0);
  const bool wgmma = device.cc_major == 9 && tma_operands(spec);
  const double accumulators = double(features_of(spec).accumulator_tiles() * bm * bn);
  const double written = split > 1 ? partial_bytes : out_bytes;
  autotune::LaunchWork work{tiles * split, warps, 2.0 * double(tiles * bm * bn) * k,
                            operand_bytes * double((s["M"] + s["N"]) * s["K"]) + written,
                            (accumulators + (wgmma ? 0.0 : double((bm + bn) * bk))) / threads};
  work.l2_bytes = operand_bytes * double(tiles) * (double(bm) + double(bn) / double(cluster)) * k;
  if (!on_cuda_cores(spec)) {
    work.tensor_flops = work.flops;
    work.tensor_rate = tensor_rate(spec);
  }
  if (wgmma) work.register_values = autotune::kWgmmaRegisterValues;
  work.copy_steps_per_program = cdiv(cdiv(s["K"], split), bk);
  if (split > 1) work.follow_up_bytes = partial_bytes + out_bytes;
  work.stages = int(c["num_stages"]);
  return work;
}

// A problem with the spec's dtypes and layout and the shape's sizes, for the heuristic, which
// reads nothing else.
GemmProblem shaped_problem(const GemmTuningSpec& spec, const ProblemShape& s) {
  GemmProblem p;
  p.m = s["M"], p.n = s["N"], p.k = s["K"];
  p.features = features_of(spec);
  p.a_strides = spec.a_transposed ? MatrixStrides{0, 1, p.m} : MatrixStrides{0, p.k, 1};
  p.b_strides = spec.b_transposed ? MatrixStrides{0, 1, p.k} : MatrixStrides{0, p.n, 1};
  return p;
}

Config tuned_values(const GemmTuningSpec& spec, const GemmConfig& c) {
  Config values{{{"BLOCK_M", c.block_m},
                 {"BLOCK_N", c.block_n},
                 {"BLOCK_K", c.block_k},
                 {"num_warps", c.num_warps},
                 {"num_stages", c.num_stages},
                 {"SPLIT_K", c.split_k}}};
  if (!on_cuda_cores(spec)) values.values.emplace_back("PERSISTENT", c.persistent);
  if (tma_operands(spec)) {
    values.values.emplace_back("warp_specialize", c.warp_specialize);
    values.values.emplace_back("cluster_x", c.cluster_m);
  }
  return values;
}

autotune::TunableKernel make_tunable(const GemmTuningSpec& spec) {
  autotune::TunableKernel op;
  op.name = "ops.gemm";
  op.dims = {"M", "N", "K"};
  op.space = space_of(spec);
  op.bucketing.power_of_two("M").power_of_two("N").power_of_two("K");
  op.dtypes = spec.dtypes();
  op.layout = spec.layout();
  op.work = [spec](const Config& c, const ProblemShape& s, const DeviceInfo& device) {
    return work_of(spec, c, s, device);
  };
  op.heuristic = [spec](const ProblemShape& s, const DeviceInfo& device) {
    return tuned_values(spec, heuristic_gemm_config(shaped_problem(spec, s), device));
  };
  op.runner = [spec](Device& device, const ProblemShape& s, const autotune::TimingOptions& timing, uint64_t seed) {
    return make_gemm_runner(spec, device, s, timing, seed);
  };
  return op;
}

// What a call's config depends on, compared as plain values: a remembered answer costs a call
// one lookup, no strings.
struct CallKey {
  const Device* device;
  DType a, b, out;
  dsl::Precision precision;
  bool a_transposed, b_transposed, fast_accumulation;
  int64_t m, n, k;
  auto operator<=>(const CallKey&) const = default;
};

}  // namespace

GemmTuningSpec GemmTuningSpec::of(const GemmProblem& p) {
  return {p.features.a,           p.features.b,           p.features.out,
          p.features.precision,   a_stored_transposed(p), b_stored_transposed(p),
          p.features.fast_accumulation};
}

std::string GemmTuningSpec::dtypes() const {
  std::string s = fmt::format("{},{}->{}", dtype_name(a), dtype_name(b), dtype_name(out));
  if (fast_accumulation) return s + "/fast_accumulation";
  if (a != DType::f32) return s;
  switch (precision) {
    case dsl::Precision::tf32: return s + "/tf32";
    case dsl::Precision::tf32x3: return s + "/tf32x3";
    case dsl::Precision::ieee: return s + "/ieee";
  }
  return s;
}

std::string GemmTuningSpec::layout() const {
  return std::string(a_transposed ? "t" : "n") + (b_transposed ? "t" : "n");
}

const autotune::TunableKernel& gemm_tunable(const GemmTuningSpec& spec) {
  return autotune::tunable_for("ops.gemm/" + spec.dtypes() + "/" + spec.layout(), [&] { return make_tunable(spec); });
}

GemmConfig call_config(const GemmProblem& p, Device& device) {
  if (p.batch != 1 || p.k == 0) return heuristic_gemm_config(p, device.info());
  const GemmTuningSpec spec = GemmTuningSpec::of(p);
  const CallKey key{&device,           spec.a,           spec.b, spec.out, spec.precision, spec.a_transposed,
                    spec.b_transposed, spec.fast_accumulation, p.m, p.n, p.k};
  static autotune::CallMemo<CallKey, GemmConfig> decided;
  return decided.get(key, [&] {
    const ProblemShape shape{{{"M", p.m}, {"N", p.n}, {"K", p.k}}};
    std::optional<Config> config = autotune::tuned_bucket_config(gemm_tunable(spec), shape, device);
    return config ? gemm_config_of(*config, spec) : heuristic_gemm_config(p, device.info());
  });
}

}  // namespace tilejit::ops::gemm_detail
