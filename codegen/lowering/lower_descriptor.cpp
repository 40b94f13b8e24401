// desc_load: one block of a tensor descriptor, elements outside the tensor reading zero. On
// sm_90+ TMA copies the block into the scratch space, completing on an mbarrier there, and
// every thread reads its elements from the swizzled tile; elsewhere every thread loads its
// elements from global memory. In a loop whose dot reads the block, the loop pipeline stages
// it instead (codegen/lowering/loop_pipeline.h).
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include "codegen/lowering/lowering.h"
#include "codegen/lowering/shared_operand.h"
#include "codegen/lowering/tma.h"

namespace tilejit::codegen::lowering {

namespace {

std::vector<llvm::Value*> load_block_by_tma(Lowering& L, const ir::Op& op, const LinearLayout& layout) {
  auto& b = L.b;
  const ir::Value* desc = op.operands[0];
  const ir::Type& type = op.result()->type;
  int64_t bytes = tma_box_of(L, desc).block_bytes();
  llvm::Value* tile = L.shared_base();
  llvm::Value* bar = b.CreateGEP(b.getInt8Ty(), tile, L.const_i32(bytes));
  L.reserve_shared(bytes + 8);
  llvm::Value* row = L.scalar(op.operands[1]);
  llvm::Value* column = L.scalar(op.operands[2]);
  llvm::Value* first = b.CreateICmpEQ(L.thread_id(), L.const_i32(0));
  auto fence_for_async_proxy = [&] { L.call_intrinsic(llvm::Intrinsic::nvvm_fence_proxy_async_shared_cta, {}, {}); };
  // Earlier generic writes of the scratch space are ordered before the copy's, and read.
  fence_for_async_proxy();
  L.barrier();
  L.emit_if(first, "tma.init", [&] {
    mbarrier_init(L, bar, 1);
    fence_for_async_proxy();
  });
  L.barrier();  // nobody waits on the mbarrier before it is initialized
  L.emit_if(first, "tma.issue", [&] {
    mbarrier_arrive_expect_tx(L, bar, bytes);
    issue_tma_block(L, desc, tile, bar, row, column);
  });
  mbarrier_wait(L, bar, L.const_i32(0));
  std::vector<llvm::Value*> values = SharedOperand(L, type, tile).load(layout, L.memory_type(type.dtype));
  L.barrier();  // every thread is done with the mbarrier
  L.emit_if(first, "tma.inval", [&] { mbarrier_inval(L, bar); });
  return values;
}

std::vector<llvm::Value*> load_block_from_global(Lowering& L, const ir::Op& op, const LinearLayout& layout) {
  auto& b = L.b;
  const DescriptorArgs& d = L.descriptors.at(op.operands[0]);
  llvm::Type* elem = L.memory_type(op.result()->type.dtype);
  llvm::Align align(static_cast<uint64_t>(dtype_storage_bytes(op.result()->type.dtype)));
  llvm::Value* row = L.scalar(op.operands[1]);
  llvm::Value* column = L.scalar(op.operands[2]);
  std::vector<llvm::Value*> values;
  for (int r = 0; r < layout.num_regs(); ++r) {
    std::vector<llvm::Value*> c = L.coords(layout, r);
    llvm::Value* y = b.CreateAdd(row, c[0]);
    llvm::Value* x = b.CreateAdd(column, c[1]);
    // Unsigned: a negative coordinate is outside too.
    llvm::Value* inside = b.CreateAnd(b.CreateICmpULT(y, d.rows), b.CreateICmpULT(x, d.columns));
    llvm::Value* index = b.CreateAdd(b.CreateMul(b.CreateSExt(y, b.getInt64Ty()), d.row_stride), b.CreateSExt(x, b.getInt64Ty()));
    llvm::BasicBlock* before = b.GetInsertBlock();
    llvm::Value* loaded = nullptr;
    auto [last, merge] = L.emit_if(inside, "desc.load", [&] {
      loaded = b.CreateAlignedLoad(elem, b.CreateGEP(elem, d.data, index), align);
    });
    llvm::PHINode* phi = b.CreatePHI(elem, 2);
    phi->addIncoming(loaded, last);
    phi->addIncoming(llvm::Constant::getNullValue(elem), before);
    values.push_back(phi);
  }
  return values;
}

}  // namespace

void Lowering::lower_desc_load(const ir::Op& op) {
  if (staged_operands.count(op.result())) return;  // its loop pipeline copies it
  LinearLayout layout = default_layout(op.result()->type.shape);
  std::vector<llvm::Value*> values =
      has_tma() ? load_block_by_tma(*this, op, layout) : load_block_from_global(*this, op, layout);
  define(op.result(), Regs{layout, std::move(values)});
}

}  // namespace tilejit::codegen::lowering
