// Dot operands a loop reads from shared memory at every iteration although they are
// computed before it (attention's query tile, which every iteration's q . k^T takes as
// wgmma's A): rather than storing them into the scratch space at each iteration (two
// barriers around the store), the loop stores them once, before its first iteration, into
// tiles it keeps above the scratch space, and its dots read them there as they read a
// pipeline's staged tiles. Only wgmma dots, whose operands not taken from registers always
// come from shared memory. The tile holds what the dot's shared operand holds (x for an
// operand given as trans(x)); a trans of a staged value is not lowered (the dot reads the
// tile), so a value whose trans has other readers in the loop stays out.
#include <algorithm>

#include <llvm/IR/IntrinsicsNVPTX.h>

#include "codegen/lowering/lowering.h"
#include "codegen/lowering/shared_operand.h"

namespace tilejit::codegen::lowering {

InvariantTiles Lowering::hold_invariant_operands(const ir::Op& loop) {
  InvariantTiles held{scratch_offset, {}};
  // The value a wgmma dot reads from a shared tile as its operand `index`, or null.
  auto shared_operand = [&](const ir::Op& dot, size_t index) -> const ir::Value* {
    std::optional<WgmmaTiling> tiling = wgmma_dot_tiling(dot);
    if (!tiling) return nullptr;
    if (index == 1) {
      HeldOperand b = wgmma_held_b(dot.operands[1], tiling->instr.element_bits);
      return b.transposed ? nullptr : b.value;  // a transposed B is stored at each use
    }
    return tiling->instr.a_in_registers() ? nullptr : held_a(dot.operands[0], tiling->instr.element_bits).value;
  };
  // Whether every op reading `t` (a trans of v) is a wgmma dot that reads v's tile through it.
  auto read_as_tile = [&](const ir::Value* t, const ir::Value* v) {
    for (const ir::Op* dot : users_.at(t)) {
      if (dot->kind != ir::OpKind::dot) return false;
      for (size_t i = 0; i < 2; ++i)
        if (dot->operands[i] == t && shared_operand(*dot, i) != v) return false;
      if (dot->operands[2] == t) return false;
    }
    return true;
  };
  auto hold = [&](const ir::Value* v) {
    if (!v || !home_.count(v) || staged_operands.count(v) || v->type.rank() != 2) return;
    if (std::find(held.values.begin(), held.values.end(), v) != held.values.end()) return;
    for (const ir::Op* u : users_.at(v))
      if (u->kind == ir::OpKind::trans && !home_.count(u->result()) && !read_as_tile(u->result(), v)) return;
    held.values.push_back(v);
  };
  ir::walk(loop.region(0), [&](const ir::Op& op) {
    if (op.kind != ir::OpKind::dot) return;
    hold(shared_operand(op, 0));
    hold(shared_operand(op, 1));
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
  scratch_offset = SharedOperand::aligned(scratch_offset);  // the tiles placed above start aligned too
  fence_proxy_async();  // wgmma reads through the async proxy
  barrier();
  return held;
}

void Lowering::release_invariant_operands(const InvariantTiles& held) {
  for (const ir::Value* v : held.values) staged_operands.erase(v);
  scratch_offset = held.saved_scratch_offset;
}

}  // namespace tilejit::codegen::lowering
