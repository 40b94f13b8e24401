// How a gemm call is tiled: the main kernel's constants. The heuristic picks tiles by operand
// width and problem size, pipelines the operand loads as deep as shared memory allows (up to
// four stages), and splits K when the output tiles alone cannot fill the device.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ops/gemm/gemm_problem.h"
#include "runtime/device.h"

namespace tilejit::ops::gemm_detail {

struct GemmConfig {
  int64_t block_m = 128, block_n = 128, block_k = 32, group_m = 8, split_k = 1, num_warps = 8;
  int64_t num_stages = 1;  // operand tiles in flight (cp.async or TMA pipelining from 2 on)
  // A producer warpgroup issues the pipeline's TMA copies while the num_warps warps multiply
  // (sm_90, both operands through tensor descriptors; elsewhere it does not apply).
  bool warp_specialize = false;
  // About one program per multiprocessor, each looping over output tiles (GROUP_M's order
  // holds across them): no tail of CTAs launched late, and with a producer warpgroup the next
  // tile's copies run during this one's epilogue.
  bool persistent = false;
  // CTAs per thread-block cluster along M (sm_90 with a producer warpgroup and a pipeline;
  // elsewhere 1): the cluster's CTAs take output tiles of one column of tiles, and each copies
  // its share of their common B block into all of them (TMA multicast). Tile rows are padded
  // to whole clusters; a CTA past M computes with the others and stores nothing. GROUP_M is
  // rounded up to whole clusters.
  int64_t cluster_m = 1;
  // Operands whose memory runs along K the other way: A stored (K, M), B stored (N, K).
  bool a_transposed = false, b_transposed = false;

  std::vector<std::pair<std::string, int64_t>> constants() const;
  int64_t output_tiles(const GemmProblem& p) const;  // per batch, tile rows padded to whole clusters
  // Programs along the grid's first dim: one per output tile, or with `persistent` as many
  // as the device runs at once (one per multiprocessor shared among batches and slices, in
  // whole clusters).
  int64_t programs(const GemmProblem& p, const DeviceInfo& device) const;
};

GemmConfig heuristic_gemm_config(const GemmProblem& p, const DeviceInfo& device);

// Rows of output tiles of `block_m` rows over `m`, padded to whole clusters of `cluster_m`.
int64_t tile_rows_in_clusters(int64_t m, int64_t block_m, int64_t cluster_m);

// Whether an operand's memory runs along K the other way (A stored (K, M), B stored (N, K)):
// the kernel then reads it in that order.
bool a_stored_transposed(const GemmProblem& p);
bool b_stored_transposed(const GemmProblem& p);

}  // namespace tilejit::ops::gemm_detail
