// Warp specialization of a TMA loop pipeline (sm_90a; codegen/lowering/loop_pipeline.h). The
// producer warpgroup is numbered after the num_warps consumer warps, so the consumers' layouts
// and warpgroups (wgmma) are those of the kernel without it.
#include <algorithm>
#include <array>
#include <functional>
#include <string>

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include "codegen/lowering/loop_pipeline.h"
#include "codegen/lowering/tma.h"

namespace tilejit::codegen::lowering {

namespace {

using K = ir::OpKind;

constexpr int kWarpgroupWarps = 4;
constexpr int kMaxCtaWarps = 32;
constexpr int64_t kRegisterFile = 65536;  // 32-bit registers of an SM
// The producer thread computes block coordinates and issues copies: a few loop counters.
constexpr int kProducerRegisters = 40;
constexpr int kMaxThreadRegisters = 256;  // setmaxnreg's limit
constexpr int kMaxEntryRegisters = 255;   // what ptxas gives a thread at most

// setmaxnreg.inc only takes registers from the CTA's own pool: its threads times the count
// each started with, which for one CTA per SM (nvvm.minctasm 1) is at most the register file
// shared out, rounded down to the allocation's 8. The consumers share that pool less what
// the producer warpgroup keeps.
int consumer_registers(int consumer_warps) {
  int64_t threads = 32 * int64_t{consumer_warps + kWarpgroupWarps};
  int64_t at_entry = std::min<int64_t>(kMaxEntryRegisters, kRegisterFile / threads) / 8 * 8;
  int64_t pool = threads * at_entry;
  int64_t per_thread = (pool - 32 * kWarpgroupWarps * kProducerRegisters) / (32 * consumer_warps);
  return static_cast<int>(std::min<int64_t>(kMaxThreadRegisters, per_thread / 8 * 8));
}

// Ops the producer warps may run with the consumers before the split. Their warp numbers
// alias the consumers', so they compute the same values, and anything that writes global
// memory, prints, or runs a warpgroup's dot or a reduction would run twice: only index and
// value arithmetic, shape ops and loads.
bool harmless_before_split(K kind) {
  return recomputable(kind) || kind == K::reshape || kind == K::trans || kind == K::load || kind == K::desc_load;
}

// The first op of `block` that is not harmless before the split, or null.
const ir::Op* first_after_harmless(const ir::Block& block) {
  for (const auto& op : block.ops)
    if (!harmless_before_split(op->kind)) return op.get();
  return nullptr;
}

// A loop from `lb` to `ub` by `step` carrying a ring position from `position`: `body` gets
// the induction variable and the position and returns the next position. Returns the
// position after the loop.
llvm::Value* emit_counted_loop(Lowering& L, const char* name, llvm::Value* lb, llvm::Value* ub, llvm::Value* step,
                               llvm::Value* position,
                               const std::function<llvm::Value*(llvm::Value*, llvm::Value*)>& body) {
  auto& b = L.b;
  llvm::Function* f = b.GetInsertBlock()->getParent();
  llvm::BasicBlock* preheader = b.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(L.ctx, std::string(name) + ".header", f);
  auto* loop = llvm::BasicBlock::Create(L.ctx, std::string(name) + ".body", f);
  auto* exit = llvm::BasicBlock::Create(L.ctx, std::string(name) + ".exit", f);
  b.CreateBr(header);

  b.SetInsertPoint(header);
  llvm::PHINode* iv = b.CreatePHI(lb->getType(), 2, std::string(name) + ".iv");
  iv->addIncoming(lb, preheader);
  llvm::PHINode* at = b.CreatePHI(b.getInt32Ty(), 2, std::string(name) + ".position");
  at->addIncoming(position, preheader);
  b.CreateCondBr(b.CreateICmpSLT(iv, ub), loop, exit);

  b.SetInsertPoint(loop);
  llvm::Value* next = body(iv, at);
  llvm::Value* iv_next = b.CreateAdd(iv, step, std::string(name) + ".iv.next", false, true);
  llvm::BasicBlock* latch = b.GetInsertBlock();
  b.CreateBr(header);
  iv->addIncoming(iv_next, latch);
  at->addIncoming(next, latch);
  b.SetInsertPoint(exit);
  return at;
}

}  // namespace

bool LoopPipeline::can_specialize(const Lowering& L, const ir::Op& loop, const ir::Op* outer,
                                  const std::vector<Staged>& staged) {
  const ir::Function& fn = L.fn;
  // Consumers that multiply with wgmma (sm_90a): the only ones tested with a producer.
  if (!fn.warp_specialize || !L.has_tma() || !L.target.has_wgmma) return false;
  // The consumers run wgmma in whole warpgroups; the producer's warpgroup must fit in the CTA.
  if (fn.num_warps % kWarpgroupWarps != 0 || fn.num_warps + kWarpgroupWarps > kMaxCtaWarps) return false;
  if (!std::all_of(staged.begin(), staged.end(), [](const Staged& s) { return s.tma; })) return false;
  // The warps split before the outermost loop the producer runs: the first of the function.
  return first_after_harmless(fn.body) == (outer ? outer : &loop);
}

std::optional<Lowering::ProductTurn> LoopPipeline::plan_product_turn() const {
  if (!specialized_ || !L_.fn.pingpong || L_.fn.num_warps != 2 * kWarpgroupWarps) return std::nullopt;
  // Across an outer loop's iterations nothing orders the second warpgroup's first hand-over
  // of one run after the first warpgroup's last wait of the run before: both would count
  // towards one use of that barrier.
  if (outer_) return std::nullopt;
  std::optional<Lowering::ProductTurn> turn;
  for (const auto& op : loop_.region(0).ops) {
    if (op->kind != K::dot) continue;
    if (!turn) turn = Lowering::ProductTurn{op.get(), op.get()};
    turn->last = op.get();
  }
  return turn;
}

llvm::Value* LoopPipeline::second_warpgroup() {
  return L_.b.CreateICmpUGE(L_.warp_id(), L_.const_i32(kWarpgroupWarps));
}

const ir::Op* LoopPipeline::inner_loop_to_span(const ir::Op& outer) {
  // The producer runs the outer loop's iterations without its carried values.
  if (outer.operands.size() != 3) return nullptr;
  for (const auto& op : outer.region(0).ops)
    if (op->kind == K::for_loop) return op.get();
  return nullptr;
}

void LoopPipeline::split_warps(llvm::Value* lb, llvm::Value* ub, llvm::Value* step) {
  auto& b = L_.b;
  int consumers = L_.fn.num_warps;
  llvm::Function* f = b.GetInsertBlock()->getParent();
  auto* producer = llvm::BasicBlock::Create(L_.ctx, "producer", f);
  auto* consumer = llvm::BasicBlock::Create(L_.ctx, "consumer", f);
  b.CreateCondBr(b.CreateICmpUGE(L_.warp_id(), L_.const_i32(consumers)), producer, consumer);

  b.SetInsertPoint(producer);
  L_.call_intrinsic(llvm::Intrinsic::nvvm_setmaxnreg_dec_sync_aligned_u32, {}, {L_.const_i32(kProducerRegisters)});
  // One thread issues every copy; the warpgroup's other threads have nothing left to do.
  L_.emit_if(b.CreateICmpEQ(L_.thread_id(), L_.const_i32(32 * consumers)), "producer.thread",
             [&] { emit_producer(lb, ub, step); });
  b.CreateRetVoid();

  b.SetInsertPoint(consumer);
  L_.call_intrinsic(llvm::Intrinsic::nvvm_setmaxnreg_inc_sync_aligned_u32, {},
                    {L_.const_i32(consumer_registers(consumers))});
  L_.producer_warps = kWarpgroupWarps;
  if (outer_) {
    llvm::BasicBlock& entry = f->getEntryBlock();
    llvm::IRBuilder<> at_entry(&entry, entry.begin());
    position_variable_ = at_entry.CreateAlloca(b.getInt32Ty(), nullptr, "ring.position.carried");
    b.CreateStore(L_.const_i32(0), position_variable_);
  }
}

void LoopPipeline::emit_producer(llvm::Value* lb, llvm::Value* ub, llvm::Value* step) {
  if (!outer_) {
    emit_producer_loop(lb, ub, step, L_.const_i32(0));
    return;
  }
  // The outer loop's iterations, each computing the inner loop's bounds and the values the
  // copies' coordinates use, then the inner loop's copies.
  emit_counted_loop(L_, "producer.outer", lb, ub, step, L_.const_i32(0), [&](llvm::Value* iv, llvm::Value* position) {
    L_.enter_region();
    L_.define_scalar(outer_->region(0).args[0], iv);
    for (const ir::Op* op : outer_slice_) L_.lower_op(*op);
    llvm::Value* next = emit_producer_loop(L_.scalar(loop_.operands[0]), L_.scalar(loop_.operands[1]),
                                           L_.scalar(loop_.operands[2]), position);
    L_.enter_region();
    return next;
  });
}

llvm::Value* LoopPipeline::emit_producer_loop(llvm::Value* lb, llvm::Value* ub, llvm::Value* step,
                                              llvm::Value* position) {
  auto& b = L_.b;
  return emit_counted_loop(L_, "producer", lb, ub, step, position, [&](llvm::Value* iv, llvm::Value* position) {
    llvm::Value* second_lap = b.CreateICmpSGE(position, L_.const_i32(stages_));
    llvm::Value* slot = slot_of(position, second_lap);
    // Every consumer released what the slot held a lap ago. In the first lap the wait is for
    // the phase before the first, complete from the start.
    // Released by peers' consumers too with multicast: their arrivals are cluster-scoped.
    mbarrier_wait(L_, empty_barrier(slot), b.CreateZExt(b.CreateNot(second_lap), b.getInt32Ty()), multicast_);
    issue(iv, b.getTrue(), slot, /*by_producer=*/true);
    return next_position(position);
  });
}

void LoopPipeline::release_slot(llvm::Value* iv, llvm::Value* step, llvm::Value* stage) {
  auto& b = L_.b;
  int behind = 1 + lag();
  llvm::Value* released = slot_behind(stage, behind);
  // The first iterations have no slot behind them to release.
  llvm::Value* first_release = b.CreateAdd(lb_, b.CreateMul(step, llvm::ConstantInt::get(step->getType(), behind)));
  L_.emit_if(b.CreateICmpSGE(iv, first_release), "ring.release", [&] { release(released); });
}

void LoopPipeline::release_last_slots(llvm::Value* position, llvm::Value* ub, llvm::Value* step) {
  auto& b = L_.b;
  llvm::Value* next_slot = slot_of(position, b.CreateICmpSGE(position, L_.const_i32(stages_)));
  // The slot `behind` iterations back, when the loop ran that many.
  for (int behind = 1; behind <= 1 + lag(); ++behind) {
    llvm::Value* first = b.CreateAdd(lb_, b.CreateMul(step, llvm::ConstantInt::get(step->getType(), behind - 1)));
    L_.emit_if(b.CreateICmpSLT(first, ub), "ring.release.last",
               [&] { release(slot_behind(next_slot, behind)); });
  }
}

// Every lane of the warp is done with the slot: the dots that read it were waited for (by
// the whole warp at once), and bar.warp.sync orders any thread's own reads before it. One
// lane then arrives for the warp; with multicast, lane r on the empty mbarrier of cluster rank
// r for every rank that shares a block with this CTA, whose producer copies into its slots.
void LoopPipeline::release(llvm::Value* slot) {
  auto& b = L_.b;
  L_.call_intrinsic(llvm::Intrinsic::nvvm_bar_warp_sync, {}, {b.getInt32(~0u)});
  llvm::Value* bar = empty_barrier(slot);
  if (!multicast_) {
    L_.emit_if(b.CreateICmpEQ(L_.lane_id(), L_.const_i32(0)), "ring.release.warp", [&] { mbarrier_arrive(L_, bar); });
    return;
  }
  llvm::Value* lane = L_.lane_id();
  llvm::Value* sharing = b.CreateAnd(b.CreateLShr(sharing_ranks(), lane), L_.const_i32(1));
  llvm::Value* releases = b.CreateAnd(b.CreateICmpULT(lane, L_.const_i32(L_.fn.cluster_ctas())),
                                      b.CreateICmpNE(sharing, L_.const_i32(0)));
  L_.emit_if(releases, "ring.release.cluster", [&] {
    llvm::Value* remote = L_.call_intrinsic(llvm::Intrinsic::nvvm_mapa_shared_cluster, {}, {bar, lane});
    L_.call_intrinsic(llvm::Intrinsic::nvvm_mbarrier_arrive_scope_cluster_space_cluster, {}, {remote, L_.const_i32(1)});
  });
}

int LoopPipeline::empty_arrivals() const { return L_.fn.num_warps * (multicast_ ? sharing_ctas() : 1); }

// Cluster ranks run x fastest, then y, then z: the CTAs at every place along `axis`, the
// others' places this CTA's.
llvm::Value* LoopPipeline::group_ranks(int axis) {
  auto& b = L_.b;
  const std::array<int, 3>& cluster = L_.fn.cluster;
  int stride = 1;
  for (int a = 0; a < axis; ++a) stride *= cluster[static_cast<size_t>(a)];
  int64_t at_first_place = 0;  // the mask when this CTA's places along the other axes are 0
  for (int j = 0; j < cluster[static_cast<size_t>(axis)]; ++j) at_first_place |= int64_t{1} << (j * stride);
  // The rank of the CTA at place 0 along the axis, the others' places this CTA's.
  llvm::Value* first = b.CreateSub(cluster_rank(L_), b.CreateMul(cluster_place(L_, axis), L_.const_i32(stride)));
  return b.CreateShl(L_.const_i32(at_first_place), first);
}

llvm::Value* LoopPipeline::sharing_ranks() {
  llvm::Value* ranks = nullptr;
  for (int axis : multicast_axes_) ranks = ranks ? L_.b.CreateOr(ranks, group_ranks(axis)) : group_ranks(axis);
  return ranks;
}

// The groups along different axes meet in this CTA only.
int LoopPipeline::sharing_ctas() const {
  int ctas = 1;
  for (int axis : multicast_axes_) ctas += L_.fn.cluster[static_cast<size_t>(axis)] - 1;
  return ctas;
}

// This CTA's share of a block the CTAs along `axis` share: the row slice its place along the
// axis names, copied into every CTA of the group.
TmaMulticast LoopPipeline::multicast_share(int axis) {
  return {cluster_place(L_, axis), L_.b.CreateTrunc(group_ranks(axis), L_.b.getInt16Ty())};
}

llvm::Value* LoopPipeline::empty_barrier(llvm::Value* slot) {
  return barrier(L_.b.CreateAdd(slot, L_.const_i32(stages_)));
}

}  // namespace tilejit::codegen::lowering
