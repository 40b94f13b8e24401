// Dot operands a loop reads from shared memory at every iteration although they are
// computed before it (attention's query tile, which every iteration's q . k^T takes as
// wgmma's A): rather than storing them into the scratch space at each iteration (two
// barriers around the store), the loop stores them once, before its first iteration, into
// tiles it keeps above the scratch space, and its dots read them there as they read a
// pipeline's staged tiles. Only wgmma dots, whose operands not taken from registers always
// come from shared memory, and only operands read as they are (not through a trans, whose
// lowering a staged value skips).
#include <llvm/IR/IntrinsicsNVPTX.h>

#include "codegen/lowering/lowering.h"
#include "codegen/lowering/shared_operand.h"

namespace tilejit::codegen::lowering {

InvariantTiles Lowering::hold_invariant_operands(const ir::Op& loop) {
  InvariantTiles held{scratch_offset, {}};
  auto invariant = [&](const ir::Value* v) {
    if (!home_.count(v) || staged_operands.count(v) || v->type.rank() != 2) return false;
    if (std::find(held.values.begin(), held.values.end(), v) != held.values.end()) return false;
    const auto& users = users_.at(v);
    return std::none_of(users.begin(), users.end(), [](const ir::Op* u) { return u->kind == ir::OpKind::trans; });
  };
  ir::walk(loop.region(0), [&](const ir::Op& op) {
    if (op.kind != ir::OpKind::dot) return;
    std::optional<WgmmaTiling> tiling = wgmma_dot_tiling(op);
    if (!tiling) return;
    if (!tiling->instr.a_in_registers() && invariant(op.operands[0])) held.values.push_back(op.operands[0]);
    if (invariant(op.operands[1])) held.values.push_back(op.operands[1]);
  });
  if (held.values.empty()) return held;
  barrier();  // earlier readers of the space are done
  for (const ir::Value* v : held.values) {
    int64_t offset = SharedOperand::aligned(scratch_offset);
    llvm::Value* tile = b.CreateConstGEP1_64(b.getInt8Ty(), shared_block(), static_cast<uint64_t>(offset));
    scratch_offset = offset + SharedOperand::bytes_of(v->type);
    reserve_shared(0);
    SharedOperand(*this, v->type, tile).store(v);
    staged_operands[v] = tile;
  }
  call_intrinsic(llvm::Intrinsic::nvvm_fence_proxy_async_shared_cta, {}, {});  // wgmma reads through the async proxy
  barrier();
  return held;
}

void Lowering::release_invariant_operands(const InvariantTiles& held) {
  for (const ir::Value* v : held.values) staged_operands.erase(v);
  scratch_offset = held.saved_scratch_offset;
}

}  // namespace tilejit::codegen::lowering
