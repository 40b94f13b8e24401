// Internal to codegen/lowering: blocks of tensor descriptors copied by TMA (sm_90+) into the
// swizzled tile layout of codegen/tma_box.h, and the mbarriers the copies complete on.
#pragma once

#include "codegen/lowering/lowering.h"
#include "codegen/tma_box.h"

namespace tilejit::codegen::lowering {

// The boxes of one block of descriptor value `desc`.
TmaBox tma_box_of(const ir::Value* desc);
// The calling thread copies the block of `desc` whose first element is (row, column) (i32)
// into the tile at shared `tile`, completing tma_box_of(desc).bytes() * copies on `bar`.
void issue_tma_block(Lowering& L, const ir::Value* desc, llvm::Value* tile, llvm::Value* bar, llvm::Value* row,
                     llvm::Value* column);

// mbarrier operations on the 8 bytes of shared memory at `bar` (one thread each, but for the wait).
void mbarrier_init(Lowering& L, llvm::Value* bar, int arrivals);
void mbarrier_inval(Lowering& L, llvm::Value* bar);
void mbarrier_arrive(Lowering& L, llvm::Value* bar);
void mbarrier_arrive_expect_tx(Lowering& L, llvm::Value* bar, int64_t bytes);
// The calling thread waits until the phase of `parity` (i32: 0 or 1) of `bar` has completed.
void mbarrier_wait(Lowering& L, llvm::Value* bar, llvm::Value* parity);

}  // namespace tilejit::codegen::lowering
