#include "codegen/lowering/tma.h"

#include <algorithm>

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

namespace tilejit::codegen::lowering {

TmaBox tma_box_of(const Lowering& L, const ir::Value* desc) {
  return tma_box(desc->type.dtype, desc->type.block_tile(), block_row_slices(L.fn, desc));
}

BlockAt block_at(Lowering& L, const ir::Op& op) {
  const size_t rank = op.operands[0]->type.shape.size();
  BlockAt at;
  for (size_t i = 1; i + 2 <= rank; ++i) at.outer.push_back(L.scalar(op.operands[i]));
  at.row = L.scalar(op.operands[rank - 1]);
  at.column = L.scalar(tma_column(op));
  return at;
}

const ir::Value* tma_column(const ir::Op& op) { return op.operands[op.operands[0]->type.shape.size()]; }

int64_t tma_column_step(const ir::Op& op) {
  return std::max<int64_t>(16 / dtype_storage_bytes(op.operands[0]->type.dtype), 1);
}

bool tma_column_proven(const Lowering& L, const ir::Op& op) {
  const AxisInfo& info = L.axis().info(tma_column(op));
  return (info.value ? *info.value : info.scalar_divisibility) % tma_column_step(op) == 0;
}

namespace {

// The copy intrinsics by tensor rank (2 to 5), global to shared and back.
llvm::Intrinsic::ID load_intrinsic(size_t rank) {
  static constexpr llvm::Intrinsic::ID kIds[] = {
      llvm::Intrinsic::nvvm_cp_async_bulk_tensor_g2s_tile_2d, llvm::Intrinsic::nvvm_cp_async_bulk_tensor_g2s_tile_3d,
      llvm::Intrinsic::nvvm_cp_async_bulk_tensor_g2s_tile_4d, llvm::Intrinsic::nvvm_cp_async_bulk_tensor_g2s_tile_5d};
  return kIds[rank - 2];
}
llvm::Intrinsic::ID store_intrinsic(size_t rank) {
  static constexpr llvm::Intrinsic::ID kIds[] = {
      llvm::Intrinsic::nvvm_cp_async_bulk_tensor_s2g_tile_2d, llvm::Intrinsic::nvvm_cp_async_bulk_tensor_s2g_tile_3d,
      llvm::Intrinsic::nvvm_cp_async_bulk_tensor_s2g_tile_4d, llvm::Intrinsic::nvvm_cp_async_bulk_tensor_s2g_tile_5d};
  return kIds[rank - 2];
}

// Calls `copy(shared byte offset, coordinates)` for every box of a block at `at` whose boxes
// are `box`: every row slice of each column box, or only `slice`. The coordinates are TMA's,
// innermost dim first: column, row, then the outer dims from the innermost out.
template <typename F>
void for_each_box(Lowering& L, const TmaBox& box, const BlockAt& at, llvm::Value* slice, F&& copy) {
  auto& b = L.b;
  auto one = [&](int c, llvm::Value* s) {
    llvm::Value* box_index = b.CreateAdd(L.const_i32(c * box.slices), s);
    std::vector<llvm::Value*> coordinates = {b.CreateAdd(at.column, L.const_i32(c * box.columns)),
                                             b.CreateAdd(at.row, b.CreateMul(s, L.const_i32(box.rows)))};
    coordinates.insert(coordinates.end(), at.outer.rbegin(), at.outer.rend());
    copy(b.CreateMul(box_index, L.const_i32(box.bytes())), coordinates);
  };
  for (int c = 0; c < box.copies; ++c) {
    if (slice) one(c, slice);
    else
      for (int s = 0; s < box.slices; ++s) one(c, L.const_i32(s));
  }
}

}  // namespace

void issue_tma_block(Lowering& L, const ir::Value* desc, llvm::Value* tile, llvm::Value* bar, const BlockAt& at,
                     const TmaMulticast* multicast) {
  auto& b = L.b;
  llvm::Value* map = L.descriptors.at(desc).map;
  // The cluster-wide form of the copy: a CTA's own shared address is valid in its cluster's window.
  constexpr unsigned kSharedCluster = 7;
  llvm::Value* mask = multicast ? multicast->cta_mask : b.getInt16(0);
  for_each_box(L, tma_box_of(L, desc), at, multicast ? multicast->slice : nullptr,
               [&](llvm::Value* offset, const std::vector<llvm::Value*>& coordinates) {
                 llvm::Value* to = b.CreateGEP(b.getInt8Ty(), tile, offset);
                 std::vector<llvm::Value*> args = {
                     b.CreateAddrSpaceCast(to, llvm::PointerType::get(L.ctx, kSharedCluster)), bar, map};
                 args.insert(args.end(), coordinates.begin(), coordinates.end());
                 args.insert(args.end(), {mask, b.getInt64(0), b.getInt1(multicast != nullptr), b.getFalse(),
                                          b.getInt32(0)});
                 L.call_intrinsic(load_intrinsic(coordinates.size()), {}, args);
               });
}

void store_tma_block(Lowering& L, const ir::Value* desc, llvm::Value* tile, const BlockAt& at) {
  auto& b = L.b;
  llvm::Value* map = L.descriptors.at(desc).map;
  for_each_box(L, tma_box_of(L, desc), at, nullptr,
               [&](llvm::Value* offset, const std::vector<llvm::Value*>& coordinates) {
                 std::vector<llvm::Value*> args = {b.CreateGEP(b.getInt8Ty(), tile, offset), map};
                 args.insert(args.end(), coordinates.begin(), coordinates.end());
                 args.insert(args.end(), {b.getInt64(0), b.getFalse()});
                 L.call_intrinsic(store_intrinsic(coordinates.size()), {}, args);
               });
  L.call_intrinsic(llvm::Intrinsic::nvvm_cp_async_bulk_commit_group, {}, {});
  L.call_intrinsic(llvm::Intrinsic::nvvm_cp_async_bulk_wait_group_read, {}, {L.const_i32(0)});
}

void mbarrier_init(Lowering& L, llvm::Value* bar, int arrivals) {
  L.call_intrinsic(llvm::Intrinsic::nvvm_mbarrier_init_shared, {}, {bar, L.const_i32(arrivals)});
}

void mbarrier_inval(Lowering& L, llvm::Value* bar) {
  L.call_intrinsic(llvm::Intrinsic::nvvm_mbarrier_inval_shared, {}, {bar});
}

void mbarrier_arrive(Lowering& L, llvm::Value* bar) {
  L.call_intrinsic(llvm::Intrinsic::nvvm_mbarrier_arrive_shared, {}, {bar});
}

void mbarrier_arrive_expect_tx(Lowering& L, llvm::Value* bar, int64_t bytes) {
  L.call_intrinsic(llvm::Intrinsic::nvvm_mbarrier_arrive_expect_tx_scope_cta_space_cta, {}, {bar, L.const_i32(bytes)});
}

void mbarrier_wait(Lowering& L, llvm::Value* bar, llvm::Value* parity, bool cluster_scope) {
  auto& b = L.b;
  llvm::Function* f = b.GetInsertBlock()->getParent();
  auto* poll = llvm::BasicBlock::Create(L.ctx, "mbarrier.wait", f);
  auto* done = llvm::BasicBlock::Create(L.ctx, "mbarrier.done", f);
  b.CreateBr(poll);
  b.SetInsertPoint(poll);
  llvm::Value* complete =
      L.call_intrinsic(cluster_scope ? llvm::Intrinsic::nvvm_mbarrier_try_wait_parity_scope_cluster_space_cta
                                     : llvm::Intrinsic::nvvm_mbarrier_try_wait_parity_scope_cta_space_cta,
                       {}, {bar, parity});
  b.CreateCondBr(complete, done, poll);
  b.SetInsertPoint(done);
}

llvm::Value* cluster_rank(Lowering& L) {
  return L.call_intrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_ctarank, {}, {});
}

llvm::Value* cluster_place(Lowering& L, int axis) {
  static constexpr llvm::Intrinsic::ID kPlace[] = {llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_ctaid_x,
                                                   llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_ctaid_y,
                                                   llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_ctaid_z};
  return L.call_intrinsic(kPlace[axis], {}, {});
}

void cluster_barrier(Lowering& L) {
  L.call_intrinsic(llvm::Intrinsic::nvvm_barrier_cluster_arrive, {}, {});
  L.call_intrinsic(llvm::Intrinsic::nvvm_barrier_cluster_wait, {}, {});
}

}  // namespace tilejit::codegen::lowering
