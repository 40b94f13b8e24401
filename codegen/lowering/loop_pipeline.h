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
//
// On sm_90+ a desc_load whose block a dot reads the same way is staged by TMA instead: one
// thread per iteration announces the iteration's bytes on the slot's mbarrier (one per ring
// slot, initialized before the prologue) and issues the copies; iteration i waits on the
// mbarrier of its slot for the phase of its lap around the ring. The loop carries its
// position in two laps, 0 .. 2S-1: the slot, and the parity of the phase to wait for.
//
// With S >= 3, a wgmma dot that is the body's only dot, reads both operands from the rings
// and accumulates into a carried value nothing else reads stays in flight across iterations
// (Lowering::dots_in_flight): iteration i waits only for the group of i-1, so when iteration
// i starts, the group of i-1 may still read its slot. The ring then runs one slot further
// behind: the prologue issues 0 .. S-3, iteration i waits until at most S-3 copy groups are
// pending and refills the slot of i-2 (whose wgmma every thread waited for before the
// barrier) with iteration i+S-2. After the loop the last group is waited for, its
// accumulator registers passing through the wait.
//
// Warp specialization (the function's warp_specialize, sm_90a): when every staged load is a
// TMA block and the loop is the first of its kind at the top of the function, with nothing
// before it that stores, a producer warpgroup joins the num_warps warps. After the mbarriers
// are initialized the warps split (setmaxnreg moves registers from the producer to the
// consumers): one producer thread runs the loop's TMA copies ahead of the consumers, each
// into the slot the consumers released (a second ring of "empty" mbarriers, one arrival per
// consumer thread), then the producer warps leave the kernel. The consumers run the loop
// without CTA barriers: iteration i releases the slot of i-1 (i-2 while the dot stays in
// flight) and waits for its own slot's copies. From the split on, barriers count the
// consumer threads only (Lowering::producer_warps).
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "codegen/lowering/lowering.h"

namespace tilejit::codegen::lowering {

// Ops that compute without side effects and without shared memory: safe to lower again for
// an iteration ahead.
bool recomputable(ir::OpKind kind);

class LoopPipeline {
 public:
  // The pipeline of `loop`, or null when nothing in it qualifies.
  static std::unique_ptr<LoopPipeline> plan(Lowering& L, const ir::Op& loop);

  // Before the loop: takes the buffers and issues iterations 0 .. S-2.
  void prologue(llvm::Value* lb, llvm::Value* ub, llvm::Value* step);
  // At the top of the body, `position` being this iteration's in two laps around the ring
  // (0 in the first; slot = position mod S).
  void begin_iteration(llvm::Value* iv, llvm::Value* ub, llvm::Value* step, llvm::Value* position);
  llvm::Value* next_position(llvm::Value* position);
  // After the loop.
  void finish();

 private:
  struct Staged {
    const ir::Op* load;
    std::vector<const ir::Op*> slice;  // the body's ops computing its pointer and mask, in order
    int64_t width;                     // elements per copy
    bool read_by_wgmma = false;        // its dot reads it through the async proxy
    bool tma = false;                  // a desc_load whose blocks TMA copies
    int64_t offset = 0;                // of its ring in shared memory
    int64_t tile_bytes = 0;
  };
  // `uses`: how many ops of the function use each value.
  LoopPipeline(Lowering& L, const ir::Op& loop, std::vector<Staged> staged, const std::map<const ir::Value*, int>& uses,
               bool specialized);

  // --- warp specialization (codegen/lowering/warp_specialized_pipeline.cpp) ---
  // Whether the loop's pipeline can run on a producer warpgroup (see above).
  static bool can_specialize(const Lowering& L, const ir::Op& loop, const std::vector<Staged>& staged);
  // After the mbarriers are initialized: the producer warps run every iteration's copies and
  // leave; the code after this point runs on the consumer warps.
  void split_warps(llvm::Value* lb, llvm::Value* ub, llvm::Value* step);
  void emit_producer_loop(llvm::Value* lb, llvm::Value* ub, llvm::Value* step);
  // At the top of a consumer iteration: arrive on the empty mbarrier of the slot the consumers
  // no longer read, when there is one.
  void release_slot(llvm::Value* iv, llvm::Value* step, llvm::Value* stage);
  llvm::Value* empty_barrier(llvm::Value* slot);

  // The dot that may stay in flight across iterations (see above), or null; sets
  // carried_index_ to the loop-carried value it accumulates into.
  const ir::Op* find_dot_in_flight(const std::map<const ir::Value*, int>& uses);
  // Iterations a slot stays busy after its own: 1 while a dot stays in flight.
  int lag() const { return dot_in_flight_ ? 1 : 0; }

  // Copies of iteration `iv` of every staged load into ring slot `slot`; none when !in_range.
  // by_producer: the calling thread is the producer, which issues every TMA copy itself.
  void issue(llvm::Value* iv, llvm::Value* in_range, llvm::Value* slot, bool by_producer = false);
  llvm::Value* tile(const Staged& s, llvm::Value* slot);
  void commit();
  // The mbarrier of ring slot `slot` (i32), where TMA copies complete; with warp
  // specialization, slots S .. 2S-1 are the empty mbarriers (empty_barrier).
  llvm::Value* barrier(llvm::Value* slot);
  // The ring slot of `position` (in two laps; second_lap: position >= S), and the slot
  // `behind` iterations before `slot`.
  llvm::Value* slot_of(llvm::Value* position, llvm::Value* second_lap);
  llvm::Value* slot_behind(llvm::Value* slot, int behind);
  llvm::Value* first_thread();
  void fence_proxy_async();

  static constexpr int64_t kMbarrierBytes = 8;

  Lowering& L_;
  const ir::Op& loop_;
  std::vector<Staged> staged_;
  int stages_;
  const ir::Op* dot_in_flight_ = nullptr;
  size_t carried_index_ = 0;
  int64_t saved_scratch_offset_ = 0;
  bool uses_tma_ = false, uses_cp_async_ = false;
  bool specialized_ = false;
  llvm::Value* lb_ = nullptr;
  int64_t barriers_offset_ = 0;  // the full mbarriers, then (specialized) the empty ones
};

}  // namespace tilejit::codegen::lowering
