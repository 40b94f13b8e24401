// Internal to codegen/lowering: blocks of tensor descriptors copied by TMA (sm_90+) into the
// swizzled tile layout of codegen/tma_box.h, and the mbarriers the copies complete on.
#pragma once

#include "codegen/lowering/lowering.h"
#include "codegen/tma_box.h"

namespace tilejit::codegen::lowering {

// The boxes of one block of descriptor value `desc`.
TmaBox tma_box_of(const Lowering& L, const ir::Value* desc);
// One row slice of a block copied into the shared memory of every CTA of the cluster in
// `cta_mask` (i16, bits by cluster rank), at the same offsets and completing on the mbarrier
// at the same offset in each: TMA multicast.
struct TmaMulticast {
  llvm::Value* slice = nullptr;  // i32
  llvm::Value* cta_mask = nullptr;
};
// Where a block lies in its descriptor's tensor (i32 values): an index of each outer dim,
// outermost first, and its first row and column.
struct BlockAt {
  std::vector<llvm::Value*> outer;
  llvm::Value* row = nullptr;
  llvm::Value* column = nullptr;
};
// The block desc_load / desc_store `op` names (its operands after the descriptor).
BlockAt block_at(Lowering& L, const ir::Op& op);
// The column offset of desc_load / desc_store `op`, and whether the axis analysis proves it a
// whole number of 16 bytes: the GPU faults (an illegal instruction) on a TMA copy at any other
// column, so only a proven block is staged by TMA, and others test theirs at run time.
const ir::Value* tma_column(const ir::Op& op);
int64_t tma_column_step(const ir::Op& op);  // elements in 16 bytes (at least 1)
bool tma_column_proven(const Lowering& L, const ir::Op& op);
// The calling thread copies the block of `desc` at `at` into the tile at shared `tile`,
// completing its bytes (tma_box_of(desc).block_bytes()) on `bar`; or, with `multicast`, that
// slice of it, into the same offsets of every CTA of the mask, completing on the mbarrier at
// `bar`'s offset in each.
void issue_tma_block(Lowering& L, const ir::Value* desc, llvm::Value* tile, llvm::Value* bar, const BlockAt& at,
                     const TmaMulticast* multicast = nullptr);
// The calling thread copies the tile at shared `tile` (laid out as a TMA copy lands a block)
// to the block of `desc` at `at`, as one bulk async-group (elements outside the tensor are
// not written), and waits until the copies have read it.
void store_tma_block(Lowering& L, const ir::Value* desc, llvm::Value* tile, const BlockAt& at);

// mbarrier operations on the 8 bytes of shared memory at `bar` (one thread each, but for the wait).
void mbarrier_init(Lowering& L, llvm::Value* bar, int arrivals);
void mbarrier_inval(Lowering& L, llvm::Value* bar);
void mbarrier_arrive(Lowering& L, llvm::Value* bar);
void mbarrier_arrive_expect_tx(Lowering& L, llvm::Value* bar, int64_t bytes);
// The calling thread waits until the phase of `parity` (i32: 0 or 1) of `bar` has completed,
// acquiring at cluster scope when other CTAs of the cluster arrive on it.
void mbarrier_wait(Lowering& L, llvm::Value* bar, llvm::Value* parity, bool cluster_scope = false);

// Thread-block clusters (sm_90+): this CTA's rank in its cluster and its place along `axis`
// (i32), and barrier.cluster's arrive and wait for every thread of the cluster that has not
// exited.
llvm::Value* cluster_rank(Lowering& L);
llvm::Value* cluster_place(Lowering& L, int axis);
void cluster_barrier(Lowering& L);

}  // namespace tilejit::codegen::lowering
