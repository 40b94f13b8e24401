// Block sizes, warps and head-dim chunks of the attention kernels, chosen by a heuristic per
// padded head dim and dtype (config.cpp says why).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dsl/dtype.h"
#include "runtime/device.h"

namespace tilejit::ops::attention_detail {

// One kernel's tiles: BLOCK_M query rows and BLOCK_N key rows per step, the head dim in
// chunks of HEAD_CHUNK (kernel_tiles.h), HEAD_DIM = H, and its warps and pipeline stages.
struct KernelConfig {
  int64_t block_m = 64, block_n = 64;
  int num_warps = 4;
  int64_t head_chunk = 64;
  // Blocks the loop pipeline keeps in flight (codegen/lowering/loop_pipeline.h): 1 loads each
  // block when its step needs it; 2 copies the next block's operands while a step computes,
  // for a shared-memory ring (and, in some kernels, registers that can spill: the tuner
  // decides on the GPU).
  int num_stages = 1;
  // Whether the kernels issue their products early, so that the tensor cores run them while the
  // softmax runs (OVERLAP): the forward finishes each block's p · v in the next iteration, the
  // backward issues dout · v^T together with q · k^T (forward_kernel.cpp, dq_kernel.cpp,
  // dkdv_kernel.cpp). It pays where products run asynchronously, which wgmma does from a
  // ring of staged blocks (sm_90a, two stages), and it keeps more values live.
  bool overlap = false;
  // Whether a producer warpgroup issues the block copies of the kernel's first loop
  // (warp_specialize, codegen/lowering/loop_pipeline.h): on sm_90a, with two or more stages,
  // where the kernel streams its blocks by TMA in a loop at its top: the forward's and dq's
  // (with block skipping, the loop over the blocks the rows can keep). dk / dv, whose loop runs
  // inside one over the heads of a group, runs as without it.
  bool warp_specialize = false;
  // With a producer and two consumer warpgroups (8 warps), whether the consumers take turns
  // issuing their products (pingpong, codegen/lowering/loop_pipeline.h): with OVERLAP, one
  // warpgroup's products run while the other's softmax does.
  bool pingpong = false;
  // dk / dv only: whether its program also sums each block's share of dq, ds · k, into an f32
  // workspace by atomic adds, which a last kernel scales and casts (dkdv_kernel.cpp): five
  // products per (query, key) block instead of seven with the dq kernel, at the price of the
  // atomics and of a result whose rounding depends on the order they land in.
  bool fuse_dq = false;
  // HEAD_CHUNK for head dim `head_dim`: no wider than the padded head dim.
  int64_t head_chunk_for(int64_t head_dim) const;
  // The kernel constants for head dim `head_dim`.
  std::vector<std::pair<std::string, int64_t>> constants(int64_t head_dim) const;
};

// H padded to the tiles' power of two (at least 16, one tensor-core k step).
int64_t padded_head_dim(int64_t head_dim);

struct AttentionConfigs {
  KernelConfig forward;     // BLOCK_M queries per program, BLOCK_N keys per step
  KernelConfig preprocess;  // delta and row statistics: BLOCK_M queries per program, BLOCK_N keys per step
  KernelConfig dkdv;        // BLOCK_N keys per program, BLOCK_M queries per step
  KernelConfig dq;          // BLOCK_M queries per program, BLOCK_N keys per step
};

// The heuristic's configs for `dtype` and `head_dim` on `device` (config.cpp).
AttentionConfigs choose_configs(DType dtype, int64_t head_dim, const DeviceInfo& device);

}  // namespace tilejit::ops::attention_detail
