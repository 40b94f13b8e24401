// desc_load / desc_store: one block of a tensor descriptor, elements outside the tensor
// reading zero / left alone. On sm_90+ TMA copies the block between global memory and the
// scratch space (completing on an mbarrier there, or as a bulk async-group), in the swizzled
// tile layout every thread reads or writes its elements in; elsewhere, and on sm_90 for a
// block whose column offset is not a whole number of 16 bytes, every thread loads or stores
// its elements in global memory. In a loop whose dot reads the block, the loop
// pipeline stages it instead (codegen/lowering/loop_pipeline.h).
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
  BlockAt at = block_at(L, op);
  llvm::Value* first = b.CreateICmpEQ(L.thread_id(), L.const_i32(0));
  // Earlier generic writes of the scratch space are ordered before the copy's, and read.
  L.fence_proxy_async();
  L.barrier();
  L.emit_if(first, "tma.init", [&] {
    mbarrier_init(L, bar, 1);
    L.fence_proxy_async();
  });
  L.barrier();  // nobody waits on the mbarrier before it is initialized
  L.emit_if(first, "tma.issue", [&] {
    mbarrier_arrive_expect_tx(L, bar, bytes);
    issue_tma_block(L, desc, tile, bar, at);
  });
  mbarrier_wait(L, bar, L.const_i32(0));
  std::vector<llvm::Value*> values = SharedOperand(L, type, tile).load(layout, L.memory_type(type.dtype));
  L.barrier();  // every thread is done with the mbarrier
  L.emit_if(first, "tma.inval", [&] { mbarrier_inval(L, bar); });
  return values;
}

// The block of `op` (desc_load / desc_store) in its descriptor's tensor: whether its outer
// indices lie inside the tensor, and the address of its element (0, 0) (which may not).
struct BlockOrigin {
  BlockAt at;
  llvm::Value* inside;
  llvm::Value* address;
};
BlockOrigin block_origin(Lowering& L, const ir::Op& op, llvm::Type* elem) {
  auto& b = L.b;
  const DescriptorArgs& d = L.descriptors.at(op.operands[0]);
  BlockAt at = block_at(L, op);
  llvm::Value* inside = b.getTrue();
  llvm::Value* offset = b.getInt64(0);
  for (size_t i = 0; i < at.outer.size(); ++i) {
    // Unsigned: a negative index is outside too.
    inside = b.CreateAnd(inside, b.CreateICmpULT(at.outer[i], d.outer[i].size));
    offset = b.CreateAdd(offset, b.CreateMul(b.CreateSExt(at.outer[i], b.getInt64Ty()), d.outer[i].stride));
  }
  return {at, inside, b.CreateGEP(elem, d.data, offset)};
}

// Register `r`'s element of `layout` in the block at `origin`: whether it lies inside the
// tensor, and its address there.
struct BlockElement {
  llvm::Value* inside;
  llvm::Value* address;
};
BlockElement block_element(Lowering& L, const ir::Op& op, const BlockOrigin& origin, const LinearLayout& layout, int r,
                           llvm::Type* elem) {
  auto& b = L.b;
  const DescriptorArgs& d = L.descriptors.at(op.operands[0]);
  std::vector<llvm::Value*> c = L.coords(layout, r);
  llvm::Value* y = b.CreateAdd(origin.at.row, c[0]);
  llvm::Value* x = b.CreateAdd(origin.at.column, c[1]);
  llvm::Value* inside = b.CreateAnd(origin.inside, b.CreateAnd(b.CreateICmpULT(y, d.rows), b.CreateICmpULT(x, d.columns)));
  llvm::Value* index = b.CreateAdd(b.CreateMul(b.CreateSExt(y, b.getInt64Ty()), d.row_stride), b.CreateSExt(x, b.getInt64Ty()));
  return {inside, b.CreateGEP(elem, origin.address, index)};
}

std::vector<llvm::Value*> load_block_from_global(Lowering& L, const ir::Op& op, const LinearLayout& layout) {
  auto& b = L.b;
  llvm::Type* elem = L.memory_type(op.result()->type.dtype);
  llvm::Align align(static_cast<uint64_t>(dtype_storage_bytes(op.result()->type.dtype)));
  BlockOrigin origin = block_origin(L, op, elem);
  std::vector<llvm::Value*> values;
  for (int r = 0; r < layout.num_regs(); ++r) {
    BlockElement e = block_element(L, op, origin, layout, r, elem);
    llvm::BasicBlock* before = b.GetInsertBlock();
    llvm::Value* loaded = nullptr;
    auto [last, merge] = L.emit_if(e.inside, "desc.load", [&] { loaded = b.CreateAlignedLoad(elem, e.address, align); });
    llvm::PHINode* phi = b.CreatePHI(elem, 2);
    phi->addIncoming(loaded, last);
    phi->addIncoming(llvm::Constant::getNullValue(elem), before);
    values.push_back(phi);
  }
  return values;
}

void store_block_by_tma(Lowering& L, const ir::Op& op) {
  const ir::Value* block = op.operands.back();
  llvm::Value* tile = L.shared_base();
  L.reserve_shared(tma_box_of(L, op.operands[0]).block_bytes());
  L.barrier();  // earlier readers of the scratch space are done
  SharedOperand(L, block->type, tile).store(block);
  // Every thread's writes, through the generic proxy, are ordered before the copy's reads.
  L.fence_proxy_async();
  L.barrier();
  L.emit_if(L.b.CreateICmpEQ(L.thread_id(), L.const_i32(0)), "tma.store",
            [&] { store_tma_block(L, op.operands[0], tile, block_at(L, op)); });
  L.barrier();  // the copy has read the scratch space
}

void store_block_to_global(Lowering& L, const ir::Op& op) {
  auto& b = L.b;
  const ir::Value* block = op.operands.back();
  const Regs& regs = L.home(block);
  llvm::Type* elem = L.memory_type(block->type.dtype);
  llvm::Align align(static_cast<uint64_t>(dtype_storage_bytes(block->type.dtype)));
  // Threads holding copies of another thread's elements leave the store to it.
  llvm::Value* owner = L.owns_data(regs.layout);
  BlockOrigin origin = block_origin(L, op, elem);
  for (int r = 0; r < regs.layout.num_regs(); ++r) {
    BlockElement e = block_element(L, op, origin, regs.layout, r, elem);
    L.emit_if(b.CreateAnd(e.inside, owner), "desc.store",
              [&] { b.CreateAlignedStore(regs.values[static_cast<size_t>(r)], e.address, align); });
  }
}

// Where the axis analysis cannot prove the column offset of `op` a whole number of 16 bytes
// (tma.h), the test that picks TMA at run time, the block taking the path of the GPUs without
// TMA otherwise; null where it is proven. Offsets are scalars, the same in every thread (a
// scalar each thread reads from memory another CTA is writing would not be, and is not
// supported as an offset), so the branch is uniform and the TMA path's barriers are met.
llvm::Value* tma_column_test(Lowering& L, const ir::Op& op) {
  if (tma_column_proven(L, op)) return nullptr;
  const auto low_bits = static_cast<int32_t>(tma_column_step(op) - 1);  // the step is a power of two
  return L.b.CreateICmpEQ(L.b.CreateAnd(L.scalar(tma_column(op)), L.const_i32(low_bits)), L.const_i32(0));
}

// `by_tma()` where `test` holds, `otherwise()` where not: each in its own region, their values
// (one per register; none for a store) merged after.
template <typename ByTma, typename Otherwise>
std::vector<llvm::Value*> either_path(Lowering& L, llvm::Value* test, ByTma by_tma, Otherwise otherwise) {
  auto& b = L.b;
  llvm::Function* f = b.GetInsertBlock()->getParent();
  auto* tma = llvm::BasicBlock::Create(L.ctx, "desc.tma", f);
  auto* global = llvm::BasicBlock::Create(L.ctx, "desc.global", f);
  auto* merge = llvm::BasicBlock::Create(L.ctx, "desc.end", f);
  // The TMA path takes the scratch space: a wait for its readers belongs before the branch.
  L.complete_scratch_readers();
  L.fence_copies();
  b.CreateCondBr(test, tma, global);
  auto path = [&](llvm::BasicBlock* start, auto&& body) {
    b.SetInsertPoint(start);
    L.enter_region();  // nothing computed on one path is reused on the other
    std::vector<llvm::Value*> values = body();
    L.enter_region();
    llvm::BasicBlock* end = b.GetInsertBlock();
    b.CreateBr(merge);
    return std::make_pair(end, values);
  };
  auto [tma_end, tma_values] = path(tma, by_tma);
  auto [global_end, global_values] = path(global, otherwise);
  b.SetInsertPoint(merge);
  std::vector<llvm::Value*> values;
  for (size_t r = 0; r < tma_values.size(); ++r) {
    llvm::PHINode* phi = b.CreatePHI(tma_values[r]->getType(), 2);
    phi->addIncoming(tma_values[r], tma_end);
    phi->addIncoming(global_values[r], global_end);
    values.push_back(phi);
  }
  return values;
}

}  // namespace

void Lowering::lower_desc_store(const ir::Op& op) {
  if (!has_tma()) return store_block_to_global(*this, op);
  llvm::Value* test = tma_column_test(*this, op);
  if (!test) return store_block_by_tma(*this, op);
  auto by_tma = [&] {
    store_block_by_tma(*this, op);
    return std::vector<llvm::Value*>{};
  };
  auto to_global = [&] {
    store_block_to_global(*this, op);
    return std::vector<llvm::Value*>{};
  };
  either_path(*this, test, by_tma, to_global);
}

void Lowering::lower_desc_load(const ir::Op& op) {
  if (staged_operands.count(op.result())) return;  // its loop pipeline copies it
  LinearLayout layout = transposed_b_load_layout(op.result()).value_or(default_layout(op.result()->type.shape));
  auto by_tma = [&] { return load_block_by_tma(*this, op, layout); };
  auto from_global = [&] { return load_block_from_global(*this, op, layout); };
  std::vector<llvm::Value*> values;
  if (!has_tma()) values = from_global();
  else if (llvm::Value* test = tma_column_test(*this, op)) values = either_path(*this, test, by_tma, from_global);
  else values = by_tma();
  define(op.result(), Regs{layout, std::move(values)});
}

}  // namespace tilejit::codegen::lowering
