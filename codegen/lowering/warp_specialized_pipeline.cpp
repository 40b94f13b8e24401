// Warp specialization of a TMA loop pipeline (sm_90+; codegen/lowering/loop_pipeline.h). The
// producer warpgroup is numbered after the num_warps consumer warps, so the consumers' layouts
// and warpgroups (wgmma) are those of the kernel without it.
#include <algorithm>

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include "codegen/lowering/loop_pipeline.h"
#include "codegen/lowering/tma.h"

namespace tilejit::codegen::lowering {

namespace {

using K = ir::OpKind;

constexpr int kWarpgroupWarps = 4;
constexpr int kMaxCtaWarps = 32;
constexpr int64_t kRegisterFile = 65536;  // 32-bit registers of an SM, which one CTA may take whole
// The producer thread computes block coordinates and issues copies: a few loop counters.
constexpr int kProducerRegisters = 40;
constexpr int kMaxThreadRegisters = 256;  // setmaxnreg's limit

// What each consumer thread may take once the producer warpgroup gave its registers back.
int consumer_registers(int consumer_warps) {
  int64_t per_thread = (kRegisterFile - 32 * kWarpgroupWarps * kProducerRegisters) / (32 * consumer_warps);
  return static_cast<int>(std::min<int64_t>(kMaxThreadRegisters, per_thread / 8 * 8));
}

// Ops the producer warps may run with the consumers before the split: their warp numbers
// alias the consumers', so nothing that writes memory, prints, runs a warpgroup's dot or a
// reduction, or holds regions.
bool harmless_before_split(K kind) {
  switch (kind) {
    case K::store:
    case K::atomic_add:
    case K::atomic_max:
    case K::atomic_cas:
    case K::print:
    case K::dot:
    case K::reduce:
    case K::for_loop:
    case K::if_else: return false;
    default: return true;
  }
}

}  // namespace

bool LoopPipeline::can_specialize(const Lowering& L, const ir::Op& loop, const std::vector<Staged>& staged) {
  const ir::Function& fn = L.fn;
  if (!fn.warp_specialize || !L.has_tma()) return false;
  // The consumers run wgmma in whole warpgroups; the producer's warpgroup must fit in the CTA.
  if (fn.num_warps % kWarpgroupWarps != 0 || fn.num_warps + kWarpgroupWarps > kMaxCtaWarps) return false;
  if (!std::all_of(staged.begin(), staged.end(), [](const Staged& s) { return s.tma; })) return false;
  for (const auto& op : fn.body.ops) {
    if (op.get() == &loop) return true;
    if (!harmless_before_split(op->kind)) return false;
  }
  return false;  // the loop is not at the top of the function
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
             [&] { emit_producer_loop(lb, ub, step); });
  b.CreateRetVoid();

  b.SetInsertPoint(consumer);
  L_.call_intrinsic(llvm::Intrinsic::nvvm_setmaxnreg_inc_sync_aligned_u32, {},
                    {L_.const_i32(consumer_registers(consumers))});
  L_.producer_warps = kWarpgroupWarps;
}

void LoopPipeline::emit_producer_loop(llvm::Value* lb, llvm::Value* ub, llvm::Value* step) {
  auto& b = L_.b;
  llvm::Function* f = b.GetInsertBlock()->getParent();
  llvm::BasicBlock* preheader = b.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(L_.ctx, "producer.header", f);
  auto* body = llvm::BasicBlock::Create(L_.ctx, "producer.body", f);
  auto* exit = llvm::BasicBlock::Create(L_.ctx, "producer.exit", f);
  b.CreateBr(header);

  b.SetInsertPoint(header);
  llvm::PHINode* iv = b.CreatePHI(lb->getType(), 2, "producer.iv");
  iv->addIncoming(lb, preheader);
  llvm::PHINode* position = b.CreatePHI(b.getInt32Ty(), 2, "producer.position");
  position->addIncoming(L_.const_i32(0), preheader);
  b.CreateCondBr(b.CreateICmpSLT(iv, ub), body, exit);

  b.SetInsertPoint(body);
  llvm::Value* second_lap = b.CreateICmpSGE(position, L_.const_i32(stages_));
  llvm::Value* slot = slot_of(position, second_lap);
  // Every consumer released what the slot held a lap ago. In the first lap the wait is for
  // the phase before the first, complete from the start.
  mbarrier_wait(L_, empty_barrier(slot), b.CreateZExt(b.CreateNot(second_lap), b.getInt32Ty()));
  issue(iv, /*in_range=*/nullptr, slot);
  llvm::Value* iv_next = b.CreateAdd(iv, step, "producer.iv.next", false, true);
  llvm::Value* position_next = next_position(position);
  llvm::BasicBlock* latch = b.GetInsertBlock();
  b.CreateBr(header);
  iv->addIncoming(iv_next, latch);
  position->addIncoming(position_next, latch);
  b.SetInsertPoint(exit);
}

void LoopPipeline::release_slot(llvm::Value* iv, llvm::Value* step, llvm::Value* stage) {
  auto& b = L_.b;
  int behind = 1 + lag();
  llvm::Value* released = slot_behind(stage, behind);
  // The first iterations have no slot behind them to release.
  llvm::Value* first_release = b.CreateAdd(lb_, b.CreateMul(step, llvm::ConstantInt::get(step->getType(), behind)));
  L_.emit_if(b.CreateICmpSGE(iv, first_release), "ring.release", [&] { mbarrier_arrive(L_, empty_barrier(released)); });
}

llvm::Value* LoopPipeline::empty_barrier(llvm::Value* slot) {
  return barrier(L_.b.CreateAdd(slot, L_.const_i32(stages_)));
}

}  // namespace tilejit::codegen::lowering
