// Internal to codegen/: lowering of the tile IR to per-thread LLVM IR. Every tile value is
// held in registers under a linear layout; ops read their operands in the layout they need
// (free when the data is already in the thread, recomputed when the value is cheap, moved
// through shared memory otherwise). GPU operations appear as NVVM intrinsics and libdevice
// calls, which the NVPTX target compiles and the emulator binds to its runtime.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "codegen/axis_info.h"
#include "codegen/layout.h"
#include "codegen/mma_layout.h"
#include "codegen/target.h"
#include "codegen/wgmma_layout.h"
#include "dsl/ir.h"

namespace tilejit::codegen {

struct LoweredKernel {
  std::unique_ptr<llvm::Module> module;
  int64_t shared_bytes = 0;  // dynamic shared memory the launch must provide
  int num_threads = 0;       // per CTA: the num_warps warps and a producer warpgroup if one was added
};

// Lowers for `target`: the target decides which tensor-core instructions dot uses.
LoweredKernel lower_to_llvm(const ir::Function& fn, const Target& target, llvm::LLVMContext& context);

namespace lowering {

class LoopPipeline;

// Operand tiles a loop keeps in shared memory for all its iterations, and the scratch
// offset to go back to after it.
struct InvariantTiles {
  int64_t saved_scratch_offset = 0;
  std::vector<const ir::Value*> values;
};

// The registers of one value in one layout. Scalars have an empty-shape layout and one register.
struct Regs {
  LinearLayout layout;
  std::vector<llvm::Value*> values;
};

// What a TensorDesc parameter arrives as: its tensor map (a grid-constant parameter, read by
// TMA) and the tensor's address, dims and strides in elements (read by other targets).
inline constexpr uint64_t kTensorMapBytes = 128;
struct DescriptorArgs {
  llvm::Value* map = nullptr;
  llvm::Value* data = nullptr;
  llvm::Value* rows = nullptr;        // i32
  llvm::Value* columns = nullptr;     // i32
  llvm::Value* row_stride = nullptr;  // i64
  struct Outer {
    llvm::Value* size = nullptr;    // i32
    llvm::Value* stride = nullptr;  // i64
  };
  std::vector<Outer> outer;  // outermost first
};

class Lowering {
 public:
  Lowering(const ir::Function& fn, const Target& target, llvm::LLVMContext& context);
  LoweredKernel run();

  // --- shared by the op lowerings ----------------------------------------------------
  llvm::IRBuilder<> b;
  llvm::LLVMContext& ctx;
  const ir::Function& fn;
  const Target& target;
  llvm::Module* module() { return module_.get(); }

  llvm::Type* llvm_type(const ir::Type& scalar_type);    // register type of one element
  llvm::Type* memory_type(DType dtype);                  // type of one element in memory
  LinearLayout default_layout(const ir::Shape& shape) const;
  // The layout to load `v` in (load, desc_load) when wgmma reads it only as an 8-bit B stored
  // transposed: a (4, 4) block per thread, which the transposing store writes 4 bytes at a time.
  std::optional<LinearLayout> transposed_b_load_layout(const ir::Value* v) const;
  // The layout a (non-scalar) pointer load is lowered in, given the layout each computed value
  // has or will have (codegen/lowering/load_layout.cpp).
  using LayoutOf = std::function<std::optional<LinearLayout>(const ir::Value*)>;
  LinearLayout load_layout(const ir::Op& load, const LayoutOf& layout_of) const;

  // The value's registers in its home layout / in a requested layout.
  const Regs& home(const ir::Value* v);
  std::vector<llvm::Value*> in_layout(const ir::Value* v, const LinearLayout& layout);
  llvm::Value* scalar(const ir::Value* v);
  void define(const ir::Value* v, Regs regs);
  void define_scalar(const ir::Value* v, llvm::Value* value);

  // Per-thread coordinate of register `r` of a layout, dim by dim (i32).
  std::vector<llvm::Value*> coords(const LinearLayout& layout, int r);
  // Row-major linear index of register `r`'s element, as a per-thread i32 part plus a
  // constant. When register and thread bits do not overlap, the per-thread part is one value
  // for all registers (computed once), which keeps address arithmetic small for LLVM and
  // lets accesses use constant offsets.
  struct Offset {
    llvm::Value* thread;
    int64_t constant;
  };
  Offset linear_offset(const LinearLayout& layout, int r);
  // A pointer to register `r`'s element in a row-major array of `elem` at `base`.
  llvm::Value* element_pointer(llvm::Type* elem, llvm::Value* base, const LinearLayout& layout, int r);
  // Whether this thread is the first holder of the layout's data (stores, atomics, prints).
  llvm::Value* owns_data(const LinearLayout& layout);
  llvm::Value* lane_id() const { return lane_; }
  llvm::Value* warp_id() const { return warp_; }
  // The warpgroup's index, broadcast from lane 0 so that ptxas knows every lane holds the same
  // one: what derives from it (a warpgroup's wgmma descriptors, its turn barrier) then goes to
  // uniform registers. Made in the entry block when first asked for; the other warp-derived
  // values stay ordinary registers, which ptxas may recompute from the thread id instead of
  // keeping them.
  llvm::Value* warpgroup_id();
  llvm::Value* thread_id() const { return tid_; }

  // Shared memory: scratch space that each lowering that needs it uses between two barriers
  // (reused), above the buffers of the loop pipelines that are live (scratch_offset).
  llvm::Value* shared_block();                // the CTA's shared memory: i8 pointer in address space 3
  llvm::Value* shared_base();                 // the scratch space, once no running wgmma reads it
  // Waits for the running wgmma groups that read the scratch space: before a branch one of
  // whose paths takes it (the wait must be on every path).
  void complete_scratch_readers();
  void reserve_shared(int64_t bytes);         // scratch bytes a lowering needs
  int64_t scratch_offset = 0;
  // Dot operands a loop pipeline has copied into shared memory (codegen/lowering/
  // loop_pipeline.h): the value's tile for this iteration, read from there by the dot.
  std::map<const ir::Value*, llvm::Value*> staged_operands;
  // Of those, an 8-bit B that wgmma reads transposed: the (N, K) tile of this iteration's ring
  // slot that the dot stores it into (no other iteration's group reads it).
  std::map<const ir::Value*, llvm::Value*> transposed_tiles;
  // Loads a loop pipeline has copied into shared memory for their users to compute from: the
  // tile of this iteration, which the load reads into registers.
  std::map<const ir::Value*, llvm::Value*> read_back_tiles;
  // wgmma dots whose loop pipeline lets each iteration's group run on into the next one: the
  // dot waits only for the group before it, the pipeline for the last after the loop.
  std::set<const ir::Op*> dots_in_flight;
  // wgmma.wait_group `pending` with the accumulator registers `acc` passing through it (their
  // values land there); returns them.
  std::vector<llvm::Value*> wait_for_wgmma(int pending, const std::vector<llvm::Value*>& acc);
  // Waits for every wgmma group still running on after its dot (lower_dot_wgmma.cpp).
  void complete_all_wgmma();
  // Where each thread of a kernel with wait_after ops stores its anchor word (below the
  // scratch space, one i32 per thread of the num_warps warps); -1: the kernel has none.
  int64_t anchor_offset = -1;
  // The value last stored as an anchor and the block it was stored in: a wait_after of the same
  // value further on in that block (the next chunk of a product) needs no store of its own.
  std::pair<const ir::Value*, llvm::BasicBlock*> last_anchor{nullptr, nullptr};
  // The widest access (in elements) for a load or store on `layout` (contiguity, alignment
  // and mask constancy allowing).
  int64_t access_width(const ir::Op& op, const LinearLayout& layout, const ir::Value* mask);
  // bar.sync for the CTA; after a warp-specialized loop's split, for its consumer warps.
  void barrier();
  // fence.proxy.async.shared::cta: this thread's writes to shared memory so far (stores, and
  // cp.async copies it has waited for) are ordered before later reads through the async proxy
  // (wgmma, TMA). ptxas makes it a MEMBAR.ALL.CTA and a FENCE.VIEW.ASYNC.S.
  void fence_proxy_async();
  // fence.proxy.async, then barrier(): every thread's stores to shared memory so far, and the
  // cp.async copies it has waited for, are visible to wgmma (the async proxy) after it.
  void fence_and_barrier();
  // cp.async copies of a loop pipeline's ring, waited for at the top of an iteration, reach
  // wgmma only after each copying thread's fence.proxy.async and a barrier. The iteration's
  // first barrier is `copies_unfenced_before` until a fence goes in before it: the first wgmma
  // that reads a ring tile puts it there (fence_copies) unless a fence_and_barrier came first
  // in the iteration's own block sequence (an operand stored for a dot fences and meets a
  // barrier anyway), which covers the copies and costs no second fence. A branch or a loop
  // inserts it before it begins (a fence on one path does not cover the other).
  llvm::Instruction* copies_unfenced_before = nullptr;
  void fence_copies();
  // Whether a barrier has come since the scratch space was last used (by an op, a layout
  // conversion, or on another path or iteration: region boundaries count as uses) with no
  // running wgmma reading it: every thread is done with it, and a lowering about to store
  // there needs no barrier first.
  bool scratch_idle() const { return scratch_idle_since_ > scratch_used_at_; }
  void scratch_used() { scratch_used_at_ = ++scratch_events_; }
  // Two consumer warpgroups taking turns to issue their products (the function's pingpong,
  // codegen/lowering/loop_pipeline.h): the calling warpgroup waits for its turn, or hands the
  // turn to the other one (named barriers 2 and 3, one per warpgroup).
  void wait_for_turn();
  void pass_turn();
  // Set while such a loop's body is lowered: its first and last top-level dots, the first
  // lowered in the warpgroup's turn, which the last one passes on.
  struct ProductTurn {
    const ir::Op* first;
    const ir::Op* last;
  };
  std::optional<ProductTurn> product_turn;
  // Between wait_for_turn and pass_turn: the other consumer warpgroup waits for the turn, so a
  // barrier of both (barrier()) would never complete.
  bool turn_held = false;
  // Warps of the producer warpgroup a warp-specialized loop pipeline added (numbered after the
  // num_warps warps; codegen/lowering/loop_pipeline.h); 0 before its split.
  int producer_warps = 0;
  // While lowering a loop whose iterations a warp-specialized producer runs across: the
  // pipeline of the loop inside it (codegen/lowering/loop_pipeline.h).
  LoopPipeline* spanning_pipeline = nullptr;
  llvm::Value* call_intrinsic(unsigned id, llvm::ArrayRef<llvm::Type*> types, llvm::ArrayRef<llvm::Value*> args);
  llvm::Value* call_libdevice(const std::string& name, llvm::ArrayRef<llvm::Value*> args);
  llvm::Value* program_index(bool count, int axis);  // ctaid / nctaid on an axis
  llvm::Value* const_i32(int64_t v) { return b.getInt32(static_cast<uint32_t>(v)); }

  // The parameters of each TensorDesc parameter of the kernel.
  std::map<const ir::Value*, DescriptorArgs> descriptors;
  // Whether blocks of tensor descriptors travel by TMA on this target.
  bool has_tma() const { return target.compute_capability >= 90; }

  const AxisAnalysis& axis() const { return axis_; }

  // The tensor-core tiling of a dot on this target, or nullopt for the CUDA-core lowering.
  std::optional<MmaTiling> dot_tiling(const ir::Op& dot) const;
  // The warpgroup tiling of a dot on sm_90a (preferred over dot_tiling), or nullopt.
  std::optional<WgmmaTiling> wgmma_dot_tiling(const ir::Op& dot) const;
  // The layout a dot's result is defined in: its instruction's accumulator layout, or the
  // default one on the CUDA cores.
  LinearLayout dot_result_layout(const ir::Op& dot) const;
  // The layout a loop carries a value in when the body yields `yielded`: the one the body
  // will define it in where that follows from the ops before it (a dot's accumulator, the
  // rows of a reduction over it, elementwise updates of those), so that no iteration
  // converts it; the default layout otherwise (codegen/lowering/carried_layout.cpp).
  LinearLayout carried_layout(const ir::Value* yielded) const;
  // Dot operands computed before `loop` that its iterations would store into scratch:
  // stored once, into tiles kept for the loop (codegen/lowering/invariant_operands.cpp);
  // released after the loop.
  InvariantTiles hold_invariant_operands(const ir::Op& loop);
  void release_invariant_operands(const InvariantTiles& held);
  // The layout of a broadcast's result (codegen/lowering/lower_shape.cpp).
  LinearLayout broadcast_layout(const ir::Op& broadcast, const std::vector<int>& dims);

  // Layout conversion through shared memory (codegen/lowering/convert_layout.cpp); of
  // elements replicated over threads, the first holder's value.
  std::vector<llvm::Value*> convert_through_shared(const ir::Type& type, const Regs& from, const LinearLayout& to);
  // Rematerialized values are only reused within the region that computed them: called where
  // one begins or ends.
  void enter_region() { remat_cache_.clear(); }
  // Emits `body` under `if (cond)`; returns the block the body ended in and the merge block.
  template <typename F>
  std::pair<llvm::BasicBlock*, llvm::BasicBlock*> emit_if(llvm::Value* cond, const char* name, F&& body) {
    llvm::Function* f = b.GetInsertBlock()->getParent();
    auto* then = llvm::BasicBlock::Create(ctx, name, f);
    auto* merge = llvm::BasicBlock::Create(ctx, std::string(name) + ".end", f);
    b.CreateCondBr(cond, then, merge);
    b.SetInsertPoint(then);
    body();
    llvm::BasicBlock* last = b.GetInsertBlock();
    b.CreateBr(merge);
    b.SetInsertPoint(merge);
    return {last, merge};
  }

 private:
  friend class LoopPipeline;  // lowers a load's address computation for iterations ahead
  void lower_block(const ir::Block& block);
  void lower_op(const ir::Op& op);
  bool rematerializable(const ir::Value* v) const;
  // A broadcast, or an elementwise op whose tile operands are all such (a (rows, 1) scale times
  // a (1, columns) one): cheaper to compute anew in another layout, moving only the broadcasts'
  // sources, than to move through shared memory.
  bool built_from_broadcasts(const ir::Value* v, int depth = 0) const;
  // A rematerializable value, or one built from broadcasts, computed anew in `layout` from its
  // operands.
  std::vector<llvm::Value*> rematerialize(const ir::Value* v, const LinearLayout& layout);

  // The layout `v` will be defined in, or nullopt (codegen/lowering/carried_layout.cpp).
  std::optional<LinearLayout> predicted_layout(const ir::Value* v, int depth) const;
  // The layout a computed tile that `v` meets in an elementwise op (directly, or through other
  // elementwise ops, expand_dims and broadcasts) asks of `v`, or, past a broadcast
  // (`broadcast_seen`), the layout a dot takes that operand in; else nullopt (load_layout.cpp).
  std::optional<LinearLayout> consumer_layout(const ir::Value* v, const LayoutOf& layout_of, int depth,
                                              bool broadcast_seen = false) const;
  // The layout dot `op` reads operand `v` from: the fragment layout of a register operand, the
  // default one of a tile it stores to shared memory; nullopt on the CUDA cores.
  std::optional<LinearLayout> dot_operand_layout(const ir::Op& op, const ir::Value* v) const;

  // Op lowerings, one file each (codegen/lowering/lower_*.cpp).
  void lower_elementwise(const ir::Op& op);
  void lower_shape_op(const ir::Op& op);
  void lower_constant_like(const ir::Op& op);
  void lower_memory(const ir::Op& op);
  void lower_desc_load(const ir::Op& op);
  void lower_desc_store(const ir::Op& op);
  void lower_atomic(const ir::Op& op);
  void lower_reduce(const ir::Op& op);
  void lower_dot(const ir::Op& op);
  void lower_dot_mma(const ir::Op& op, const MmaTiling& tiling);
  void lower_dot_wgmma(const ir::Op& op, const WgmmaTiling& tiling);
  void lower_for(const ir::Op& op);
  void lower_if(const ir::Op& op);
  void lower_print(const ir::Op& op);
  void lower_wait_after(const ir::Op& op);

  // Elementwise computation shared by lowering and rematerialization.
  std::vector<llvm::Value*> compute_elementwise(const ir::Op& op, const std::vector<std::vector<llvm::Value*>>& in,
                                                int count);
  std::vector<llvm::Value*> compute_constant_like(const ir::Op& op, const LinearLayout& layout);

  // wgmma dots whose group runs on after the dot, oldest first: their results' registers
  // land before the first op that uses one, which waits for that group and every older one;
  // control flow and the end of a block wait for all (lower_dot_wgmma.cpp says when a dot may).
  std::vector<const ir::Value*> running_wgmma_;
  // The running groups that read an operand tile in the scratch space: the scratch space is
  // not handed out again (shared_base) until they complete.
  std::set<const ir::Value*> scratch_readers_;
  // scratch_idle's clock: events numbered in the order they are lowered.
  int64_t scratch_events_ = 0, scratch_used_at_ = 0, scratch_idle_since_ = 0;
  bool scratch_taken_ = false;  // shared_base was called during the op being lowered
  // Waits for the youngest running group whose result `op` reads, and so for the older ones.
  void complete_wgmma_read_by(const ir::Op& op);
  // Whether `op` is a wgmma dot accumulating into a running group's result, of the same
  // instruction (shape and types), that nothing else reads and that reads no scratch tile: it
  // need not wait for it.
  bool chains_running_accumulator(const ir::Op& op) const;
  // Waits for the running groups up to the one at `index` of running_wgmma_.
  void complete_wgmma(size_t index);

  std::unique_ptr<llvm::Module> module_;
  llvm::Function* kernel_ = nullptr;
  AxisAnalysis axis_;
  std::map<const ir::Value*, Regs> home_;
  std::map<const ir::Value*, std::vector<const ir::Op*>> users_;  // the ops that read each value
  std::map<std::pair<const ir::Value*, std::string>, std::vector<llvm::Value*>> remat_cache_;
  std::map<std::string, std::vector<llvm::Value*>> thread_offsets_;
  std::map<std::string, llvm::Value*> thread_linear_;
  const std::vector<llvm::Value*>& thread_coords(const LinearLayout& layout);
  llvm::BasicBlock* entry_ = nullptr;  // values that depend only on the thread id go here
  llvm::Value* tid_ = nullptr;
  llvm::Value* lane_ = nullptr;
  llvm::Value* warp_ = nullptr;
  llvm::Value* warpgroup_ = nullptr;
  llvm::GlobalVariable* shared_ = nullptr;
  int64_t shared_bytes_ = 0;
  int min_memory_bytes_ = 4;
};

// x when a dot operand `v` is trans(x) of a matrix x (B as (N, K), A as (K, M)): the
// tensor-core lowering reads x's rows from shared memory as they are. Null otherwise.
const ir::Value* transposed_dot_operand(const ir::Value* v);

// Consecutive fragment elements `parts` as one word of a tensor-core instruction, of
// `word_type`: a vector of the elements (<2 x half> for f16) or an integer holding their
// bits from the lowest element up.
llvm::Value* pack_fragment_word(llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& parts, llvm::Type* word_type);

// Whether `v` is a constant +0 (all bits zero), or a splat or broadcast of one.
bool is_zero_constant(const ir::Value* v);

// The ops lower_elementwise lowers: arithmetic, comparisons, math, select, casts, addptr.
bool is_elementwise(ir::OpKind kind);

// The layout of a reduction's result over an input in `in`: the axis removed, and the
// register bits that only walked along it dropped (`kept_bits`: the input's bits that remain).
struct ReducedLayout {
  LinearLayout layout;
  std::vector<int> kept_bits;
};
ReducedLayout reduced_layout(const LinearLayout& in, int axis);

// Scalar arithmetic used by several lowerings.
llvm::Value* emit_binary(Lowering& L, ir::OpKind kind, DType dtype, llvm::Value* a, llvm::Value* b);
llvm::Value* emit_compare(Lowering& L, const std::string& predicate, DType dtype, llvm::Value* a, llvm::Value* b);
llvm::Value* emit_cast(Lowering& L, llvm::Value* x, DType from, DType to, bool saturate);
// emit_cast of each of `count` registers; sm_89+ widens fp8 two registers per instruction.
std::vector<llvm::Value*> emit_casts(Lowering& L, const std::vector<llvm::Value*>& x, int count, DType from, DType to,
                                     bool saturate);

}  // namespace lowering
}  // namespace tilejit::codegen
