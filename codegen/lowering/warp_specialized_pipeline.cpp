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

}  // namespace

bool LoopPipeline::can_specialize(const Lowering& L, const ir::Op& loop, const std::vector<Staged>& staged) {
  const ir::Function& fn = L.fn;
  // Consumers that multiply with wgmma (sm_90a): the only ones tested with a producer.
  if (!fn.warp_specialize || !L.has_tma() || !L.target.has_wgmma) return false;
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
  issue(iv, b.getTrue(), slot, /*by_producer=*/true);
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
