// Internal to codegen/lowering: software pipelining of the loads that feed dot (sm_80+,
// num_stages >= 2). A load in a for loop's body qualifies when its only use is a dot operand
// that the tensor cores read through shared memory, its pointer and mask depend only on the
// induction variable and on values from outside the loop, and it masks to zero: it becomes
// asynchronous copies (cp.async, 4 to 16 bytes per thread, zero-filled where masked) straight
// into a ring of num_stages shared tiles, and the dot reads the tile of its iteration.
//
// The prologue issues iterations 0 .. S-2, one commit group each. Iteration i waits until at
// most S-2 groups are pending (its own has landed), synchronises the CTA (every thread's
// copies are visible, and nobody still reads the slot of iteration i-1), then refills that
// slot with iteration i+S-1 and commits. Tiles wgmma reads are fenced for the async proxy
// between the wait and the barrier. Iterations past the end copy nothing (size 0), so
// every iteration commits one group and the count stays exact. After the loop every copy is
// waited for before the buffers are given back to the scratch space.
#pragma once

#include <memory>
#include <vector>

#include "codegen/lowering/lowering.h"

namespace tilejit::codegen::lowering {

class LoopPipeline {
 public:
  // The pipeline of `loop`, or null when nothing in it qualifies.
  static std::unique_ptr<LoopPipeline> plan(Lowering& L, const ir::Op& loop);

  // Before the loop: takes the buffers and issues iterations 0 .. S-2.
  void prologue(llvm::Value* lb, llvm::Value* ub, llvm::Value* step);
  // At the top of the body, `stage` being the ring slot of this iteration (0 in the first).
  void begin_iteration(llvm::Value* iv, llvm::Value* ub, llvm::Value* step, llvm::Value* stage);
  llvm::Value* next_stage(llvm::Value* stage);
  // After the loop.
  void finish();

 private:
  struct Staged {
    const ir::Op* load;
    std::vector<const ir::Op*> slice;  // the body's ops computing its pointer and mask, in order
    int64_t width;                     // elements per copy
    bool read_by_wgmma = false;        // its dot reads it through the async proxy
    int64_t offset = 0;                // of its ring in shared memory
    int64_t tile_bytes = 0;
  };
  LoopPipeline(Lowering& L, const ir::Op& loop, std::vector<Staged> staged);

  // Copies of iteration `iv` of every staged load into ring slot `slot`; none when !in_range.
  void issue(llvm::Value* iv, llvm::Value* in_range, llvm::Value* slot);
  llvm::Value* tile(const Staged& s, llvm::Value* slot);
  void commit();

  Lowering& L_;
  const ir::Op& loop_;
  std::vector<Staged> staged_;
  int stages_;
  int64_t saved_scratch_offset_ = 0;
};

}  // namespace tilejit::codegen::lowering
