// Internal to codegen/lowering: software pipelining of the loads that feed dot (sm_80+,
// num_stages >= 2). A load in a for loop's body qualifies when every use of it is a dot
// operand that the tensor cores read through shared memory (several dots read the one staged
// tile, each in the layout it takes; attention's backward reads k as B of q · k^T and of
// ds · k), its pointer and mask depend only on the induction variable and on values from
// outside the loop, and it masks to zero: it becomes
// asynchronous copies (cp.async, 4 to 16 bytes per thread, zero-filled where masked) straight
// into a ring of num_stages shared tiles, and the dots read the tile of its iteration.
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
// A load whose every use leads through elementwise ops (one at least) and broadcasts to a
// tensor-core dot's operand, combined only with other loads and values from outside the loop
// (an operand converted or scaled on its way there: int8 weights widened to bf16, fp8 times
// its block scales; not a bias a product meets), is staged the same way and read back: in its
// iteration the load reads the slot's tile into registers in its own layout, and its users
// compute from those.
//
// An 8-bit B that wgmma reads transposed (it takes 8-bit operands K-major only) is staged as
// given and stored transposed at each step into the scratch space; when its dot stays in
// flight (below), into an (N, K) tile its ring slot has of its own instead: no other
// iteration's group reads that tile, and every thread has passed the iteration that last did.
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
// consumer warp), then the producer warps leave the kernel. The consumers run the loop
// without CTA barriers: iteration i releases the slot of i-1 (i-2 while the dot stays in
// flight) and waits for its own slot's copies. From the split on, barriers count the
// consumer threads only (Lowering::producer_warps).
//
// Pingpong (the function's pingpong, with two consumer warpgroups): the warpgroups take turns
// to issue their products, so that one's run on the tensor cores while the other computes (an
// attention forward's softmax). In each iteration a warpgroup waits for its turn before its
// first top-level dot and hands the turn over after its last (named barriers, Lowering::
// wait_for_turn); before the loop the second warpgroup hands the first its first turn, and
// after it the first takes the second's last hand-over, so that every barrier completes as
// often as it is waited at. Not across an outer loop's iterations (below), and a CTA barrier
// inside a turn (an operand moved through shared memory, where the warpgroups share rows)
// is a compile error: the other warpgroup waits for the turn, not at that barrier.
//
// The producer may also run across the iterations of a loop around the pipelined one (a
// persistent kernel's loop over output tiles): when that outer loop is the first at the top
// of the function and carries no values, the pipelined loop is the first loop in its body,
// and what the producer needs of the outer body (the inner loop's bounds, the copies'
// coordinates) is recomputable. The split then comes before the outer loop; the producer runs
// the outer loop too, computing just those values in each iteration, and its ring position runs on
// from one inner loop to the next, so it fills the slots with the next tile's operands while
// the consumers finish this one (the epilogue). The consumers carry the position from tile to
// tile (in a local variable) and, leaving the inner loop, wait for its dots and release the
// slots its last iterations held. The rings stay allocated until the outer loop ends, so the
// epilogue's scratch lies above them. Running ahead, the producer reads a tile's operands
// before the previous tiles' stores: a kernel asking for it must not store where its later
// tiles' copies read (a gemm whose output overlaps an operand races without it too).
//
// In a thread-block cluster, a block the cluster's CTAs share along an axis (dsl
// ClusterShared) travels once for all of them: each CTA's producer copies its slice of the
// block's rows into every CTA of the group (TMA multicast, codegen/tma_box.h), so every CTA's
// full mbarrier still counts the whole stage's bytes. A producer may refill a slot only when
// the consumers of every CTA it writes into released it: consumers release a slot to the
// empty mbarrier of every CTA of the cluster (one arrival per warp each, through mapa), which
// counts the consumer warps of the whole cluster. The cluster synchronizes (barrier.cluster)
// after the mbarriers are initialized, before anyone copies into or arrives on a peer's, and
// again before they are invalidated, when no peer arrives on them any more. The CTAs sharing a
// block must run the same iterations.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "codegen/lowering/lowering.h"
#include "codegen/lowering/tma.h"

namespace tilejit::codegen::lowering {

// Ops that compute without side effects and without shared memory: safe to lower again for
// an iteration ahead.
bool recomputable(ir::OpKind kind);

class LoopPipeline {
 public:
  // The pipeline planned for `loop`: of its own loads, or of the loop in its body whose
  // producer runs across its iterations (see above); null when nothing qualifies.
  static std::unique_ptr<LoopPipeline> plan(Lowering& L, const ir::Op& loop);
  // The loop whose loads the pipeline stages.
  const ir::Op& loop() const { return loop_; }

  // Before the loop `plan` was given: takes the buffers and issues iterations 0 .. S-2 (or
  // splits the warps).
  void prologue(llvm::Value* lb, llvm::Value* ub, llvm::Value* step);
  // Before loop(), given its lower bound: the ring position of its first iteration.
  llvm::Value* enter(llvm::Value* lb);
  // At the top of the body, `position` being this iteration's in two laps around the ring
  // (0 in the first; slot = position mod S).
  void begin_iteration(llvm::Value* iv, llvm::Value* ub, llvm::Value* step, llvm::Value* position);
  llvm::Value* next_position(llvm::Value* position);
  // After loop(), `position` being that of the iteration that did not run.
  void leave(llvm::Value* position, llvm::Value* ub, llvm::Value* step);
  // After the loop `plan` was given.
  void finish();

 private:
  struct Staged {
    const ir::Op* load;
    std::vector<const ir::Op*> slice;  // the body's ops computing its pointer and mask, in order
    int64_t width;                     // elements per copy
    bool read_by_wgmma = false;        // its dot reads it through the async proxy
    bool tma = false;                  // a desc_load whose blocks TMA copies
    bool transposed_b = false;         // an 8-bit B that wgmma reads stored transposed
    int64_t offset = 0;                // of its ring in shared memory
    int64_t tile_bytes = 0;
    bool read_back = false;            // read into registers by the load itself (its users compute)
    bool own_transposed_tiles = false; // transposed_b, its dot in flight: (N, K) tiles per slot
    int64_t transposed_offset = 0;     // of those tiles
  };
  // `uses`: how many ops of the function use each value. `outer`: the loop around `loop` whose
  // iterations the producer runs across, or null.
  LoopPipeline(Lowering& L, const ir::Op& loop, const ir::Op* outer, std::vector<Staged> staged,
               const std::map<const ir::Value*, int>& uses, bool specialized);
  // The ops of `outer`'s body the producer runs to compute `inner`'s bounds and its staged
  // loads' addresses (recomputable ones only, in body order); nullopt when they need others.
  static std::optional<std::vector<const ir::Op*>> outer_slice(const ir::Op& outer, const ir::Op& inner,
                                                               const std::vector<Staged>& staged);
  // The loads of `loop`'s body the pipeline can stage.
  static std::vector<Staged> staged_loads(Lowering& L, const ir::Op& loop, std::map<const ir::Value*, int>& uses);

  // --- warp specialization (codegen/lowering/warp_specialized_pipeline.cpp) ---
  // Whether the loop's pipeline can run on a producer warpgroup (see above), across the
  // iterations of `outer` when given.
  static bool can_specialize(const Lowering& L, const ir::Op& loop, const ir::Op* outer,
                             const std::vector<Staged>& staged);
  // The body's first and last top-level dots, where the consumer warpgroups take turns
  // (pingpong, above); nullopt when they do not.
  std::optional<Lowering::ProductTurn> plan_product_turn() const;
  llvm::Value* second_warpgroup();  // i1: the calling consumer warp is in the second warpgroup
  // The loop in `outer`'s body a producer could run across `outer`'s iterations (the first),
  // or null.
  static const ir::Op* inner_loop_to_span(const ir::Op& outer);
  // After the mbarriers are initialized: the producer warps run every iteration's copies and
  // leave; the code after this point runs on the consumer warps. The bounds are those of the
  // loop `plan` was given.
  void split_warps(llvm::Value* lb, llvm::Value* ub, llvm::Value* step);
  void emit_producer(llvm::Value* lb, llvm::Value* ub, llvm::Value* step);
  // The producer's copies of loop()'s iterations from ring position `position` on; returns
  // the position after them.
  llvm::Value* emit_producer_loop(llvm::Value* lb, llvm::Value* ub, llvm::Value* step, llvm::Value* position);
  // At the top of a consumer iteration: arrive on the empty mbarrier of the slot the consumers
  // no longer read, when there is one.
  void release_slot(llvm::Value* iv, llvm::Value* step, llvm::Value* stage);
  // After loop() in the consumers, when the producer runs on across the outer loop: release
  // the slots the last iterations held.
  void release_last_slots(llvm::Value* position, llvm::Value* ub, llvm::Value* step);
  llvm::Value* empty_barrier(llvm::Value* slot);
  // Consumers: this CTA's consumer warps are done with ring slot `slot`.
  void release(llvm::Value* slot);
  // What each empty mbarrier counts per phase: one arrival per consumer warp of every CTA its
  // producer copies into.
  int empty_arrivals() const;
  // The cluster axis along which the producer multicasts the blocks of `s` (its desc_load's
  // ClusterShared axis, where the cluster extends along it), or -1.
  int multicast_axis(const Staged& s) const;
  // The CTAs that share a block with this one along `axis` (this one included), as a mask of
  // cluster ranks (i32); and along any multicast axis: the CTAs whose producers copy into
  // this CTA's slots and into whose slots its producer copies, and how many they are.
  llvm::Value* group_ranks(int axis);
  llvm::Value* sharing_ranks();
  int sharing_ctas() const;
  TmaMulticast multicast_share(int axis);

  // The dot that may stay in flight across iterations (see above), or null; sets
  // carried_index_ to the loop-carried value it accumulates into.
  const ir::Op* find_dot_in_flight(const std::map<const ir::Value*, int>& uses);
  // The products the loop's body computes (its own dot ops).
  int dots_in_body() const;
  // Iterations a slot stays busy after its own: 1 while a dot stays in flight.
  int lag() const { return dot_in_flight_ ? 1 : 0; }

  // Copies of iteration `iv` of every staged load into ring slot `slot`; none when !in_range.
  // by_producer: the calling thread is the producer, which issues every TMA copy itself.
  void issue(llvm::Value* iv, llvm::Value* in_range, llvm::Value* slot, bool by_producer = false);
  // Tile `slot` of the ring of `tile_bytes` tiles at `ring_offset`.
  llvm::Value* tile(int64_t ring_offset, int64_t tile_bytes, llvm::Value* slot);
  // Hands the dots the tiles of ring slot `slot` (Lowering::staged_operands, transposed_tiles).
  void offer_tiles(llvm::Value* slot);
  void commit();
  // The mbarrier of ring slot `slot` (i32), where TMA copies complete; with warp
  // specialization, slots S .. 2S-1 are the empty mbarriers (empty_barrier).
  llvm::Value* barrier(llvm::Value* slot);
  // The ring slot of `position` (in two laps; second_lap: position >= S), and the slot
  // `behind` iterations before `slot`.
  llvm::Value* slot_of(llvm::Value* position, llvm::Value* second_lap);
  llvm::Value* slot_behind(llvm::Value* slot, int behind);
  llvm::Value* first_thread();

  static constexpr int64_t kMbarrierBytes = 8;

  Lowering& L_;
  const ir::Op& loop_;
  const ir::Op* outer_ = nullptr;
  std::vector<const ir::Op*> outer_slice_;  // what the producer runs of each outer iteration
  std::vector<Staged> staged_;
  int stages_;
  const ir::Op* dot_in_flight_ = nullptr;
  size_t carried_index_ = 0;
  int64_t saved_scratch_offset_ = 0;
  bool uses_tma_ = false, uses_cp_async_ = false;
  bool specialized_ = false;
  // The consumer warpgroups take turns issuing the body's products (pingpong, above).
  std::optional<Lowering::ProductTurn> product_turn_;
  // The producers copy blocks the cluster's CTAs share once for all of them: consumers
  // release slots to every CTA that shares a block with theirs, and the cluster synchronizes
  // after the mbarriers are initialized and before they are invalidated.
  bool multicast_ = false;
  std::set<int> multicast_axes_;
  llvm::Value* lb_ = nullptr;  // of loop()'s current run
  // The consumers' ring position from one run of loop() to the next (with outer_).
  llvm::Value* position_variable_ = nullptr;
  int64_t barriers_offset_ = 0;  // the full mbarriers, then (specialized) the empty ones
};

}  // namespace tilejit::codegen::lowering
