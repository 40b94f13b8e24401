#include "ops/gemm/gemm_config.h"

#include <algorithm>

namespace tilejit::ops::gemm_detail {
namespace {

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

std::vector<std::pair<std::string, int64_t>> GemmConfig::constants() const {
  return {{"BLOCK_M", block_m}, {"BLOCK_N", block_n}, {"BLOCK_K", block_k},
          {"GROUP_M", group_m}, {"SPLIT_K", split_k}, {"num_warps", num_warps}, {"num_stages", num_stages},
          {"A_TRANSPOSED", a_transposed}, {"B_TRANSPOSED", b_transposed}, {"warp_specialize", warp_specialize},
          {"PERSISTENT", persistent}, {"cluster_x", cluster_m}};
}

int64_t tile_rows_in_clusters(int64_t m, int64_t block_m, int64_t cluster_m) {
  return cdiv(cdiv(m, block_m), cluster_m) * cluster_m;
}

int64_t GemmConfig::output_tiles(const GemmProblem& p) const {
  return tile_rows_in_clusters(p.m, block_m, cluster_m) * cdiv(p.n, block_n);
}

int64_t GemmConfig::programs(const GemmProblem& p, const DeviceInfo& device) const {
  int64_t tiles = output_tiles(p);
  if (!persistent || tiles == 0) return tiles;
  int64_t at_once = int64_t{device.sm_count} / std::max<int64_t>(1, p.batch * split_k);
  return std::clamp<int64_t>(at_once / cluster_m * cluster_m, cluster_m, tiles);
}

bool a_stored_transposed(const GemmProblem& p) { return p.a_strides.col != 1 && p.a_strides.row == 1; }
bool b_stored_transposed(const GemmProblem& p) { return p.b_strides.row == 1 && p.b_strides.col != 1; }

GemmConfig heuristic_gemm_config(const GemmProblem& p, const DeviceInfo& device) {
  GemmConfig c;
  const GemmFeatures& f = p.features;
  c.a_transposed = a_stored_transposed(p);
  c.b_transposed = b_stored_transposed(p);
  int bytes = dtype_storage_bytes(f.a);
  bool cuda_cores = f.a == DType::f32 && f.precision == dsl::Precision::ieee;
  if (cuda_cores) {
    // FMA tiles hold A and B fragments in registers too: smaller tiles avoid spills.
    c.block_m = 64, c.block_n = 64, c.block_k = 16, c.num_warps = 4;
  } else {
    c.block_m = p.m <= 64 ? 64 : 128;
    c.block_n = p.n <= 64 ? 64 : 128;
    // On sm_90, a problem with at least two 128 x 256 tiles per multiprocessor takes them:
    // each warpgroup multiplies its 64 rows by all 256 columns per wgmma, and with about 150
    // registers per thread one CTA fills a multiprocessor, so its pipeline gets all of the
    // shared memory. Not where fp8's block products need as many registers again
    // (ops/common/f32_dot.h).
    bool wide = device.cc_major == 9 && bytes <= 2 && f.accumulator_tiles() == 1 &&
                cdiv(p.m, 128) * cdiv(p.n, 256) * p.batch >= 2 * int64_t{device.sm_count};
    if (wide) c.block_m = 128, c.block_n = 256;
    // On sm_90, rows of 128 bytes: TMA's and wgmma's widest swizzle, free of bank conflicts.
    c.block_k = device.cc_major == 9 ? 128 / bytes : bytes == 1 ? 64 : 32;
    c.num_warps = c.block_m * c.block_n >= 128 * 128 ? 8 : 4;
    // Asynchronous copies need sm_80; each stage holds one A and one B tile. Besides a wide
    // tile's, half of the shared memory is left for the epilogue's conversions and a second CTA.
    int64_t stage_bytes = (c.block_m + c.block_n) * c.block_k * bytes;
    int64_t pipeline_bytes = wide ? device.shared_per_block_optin : device.shared_per_block_optin / 2;
    if (device.cc_major >= 8) c.num_stages = std::clamp<int64_t>(pipeline_bytes / stage_bytes, 1, 4);
    // wgmma reads an 8-bit B given (K, N) stored transposed; with 3 or more stages a dot that
    // chains into its accumulator (not fp8's block products, f32_dot.h) stays in flight and
    // each stage holds a transposed B tile too, which may use all of the shared memory (the
    // pipeline's buffers are given back before the epilogue); else 2 stages.
    bool transposed_b = device.cc_major == 9 && bytes == 1 && f.accumulator_tiles() == 1 && !c.b_transposed;
    if (transposed_b && c.num_stages >= 3) {
      int64_t in_flight = device.shared_per_block_optin / (stage_bytes + c.block_n * c.block_k * bytes);
      c.num_stages = in_flight >= 3 ? std::min<int64_t>(c.num_stages, in_flight) : 2;
    }
  }
  // Split K when the output tiles fill less than half of the multiprocessors and every
  // slice keeps at least 8 steps of K.
  int64_t tiles = c.output_tiles(p) * p.batch;
  int64_t steps = cdiv(p.k, c.block_k);
  if (2 * tiles < device.sm_count && steps >= 16)
    c.split_k = std::clamp<int64_t>(std::min(device.sm_count / tiles, steps / 8), 1, 16);
  return c;
}

}  // namespace tilejit::ops::gemm_detail
