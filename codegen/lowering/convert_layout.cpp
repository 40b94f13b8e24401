// Moving a tile between layouts through shared memory: the threads write the elements they
// hold at their row-major offsets, the CTA synchronises, and every thread reads the
// elements the new layout gives it. Where the layout replicates elements over threads only
// the first holder writes: one store per element, no two threads writing one address, and
// an atomic's replicas (which may hold different values) agree on the owner's. The scratch
// space is shared by all conversions; the barrier before the writes keeps a conversion from
// overwriting data still being read.
#include "codegen/lowering/lowering.h"

namespace tilejit::codegen::lowering {

std::vector<llvm::Value*> Lowering::convert_through_shared(const ir::Type& type, const Regs& from,
                                                           const LinearLayout& to) {
  llvm::Type* elem = type.pointer ? llvm_type(type.element()) : memory_type(type.dtype);
  int64_t bytes = type.numel() * static_cast<int64_t>(module()->getDataLayout().getTypeAllocSize(elem));
  reserve_shared(bytes);
  llvm::Value* base = shared_base();
  auto slot = [&](const LinearLayout& layout, int r) { return element_pointer(elem, base, layout, r); };
  auto to_memory = [&](llvm::Value* v) { return type.dtype == DType::i1 && !type.pointer ? b.CreateZExt(v, elem) : v; };
  auto from_memory = [&](llvm::Value* v) {
    return type.dtype == DType::i1 && !type.pointer ? b.CreateICmpNE(v, llvm::ConstantInt::get(elem, 0)) : v;
  };

  barrier();
  std::vector<bool> dup = from.layout.duplicate_registers();
  llvm::BasicBlock* after = nullptr;
  if (from.layout.replicated_lane_mask() || from.layout.replicated_warp_mask()) {
    auto* write = llvm::BasicBlock::Create(ctx, "owner_write", b.GetInsertBlock()->getParent());
    after = llvm::BasicBlock::Create(ctx, "owner_write_done", b.GetInsertBlock()->getParent());
    b.CreateCondBr(owns_data(from.layout), write, after);
    b.SetInsertPoint(write);
  }
  for (int r = 0; r < from.layout.num_regs(); ++r)
    if (!dup[r]) b.CreateStore(to_memory(from.values[r]), slot(from.layout, r));
  if (after) {
    b.CreateBr(after);
    b.SetInsertPoint(after);
  }
  barrier();
  std::vector<llvm::Value*> out;
  for (int r = 0; r < to.num_regs(); ++r) out.push_back(from_memory(b.CreateLoad(elem, slot(to, r))));
  scratch_used();  // read after the barrier: a conversion may come in the middle of an op
  return out;
}

}  // namespace tilejit::codegen::lowering
