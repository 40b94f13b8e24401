// dot on the CUDA cores: every thread computes its accumulator registers with FMAs. The
// operands are brought into layouts derived from the accumulator's: each thread holds the
// full K extent of the rows (of a) and columns (of b) its accumulator registers need.
// Where the target's tensor cores take the operands, lower_dot_wgmma.cpp (sm_90a) or
// lower_dot_mma.cpp is used instead.
#include <llvm/IR/Intrinsics.h>

#include "codegen/lowering/lowering.h"

namespace tilejit::codegen::lowering {

namespace {

// Each thread's multiply-adds are unrolled into straight-line IR; past this many in one dot
// LLVM would take minutes, or run out of memory, on that one function.
constexpr int64_t kMaxUnrolledFmas = int64_t{1} << 18;

// The operand layout for an accumulator layout: `keep` is the accumulator dim the operand
// shares (0 for a: rows, 1 for b: columns), `k_dim` where K goes in the operand. Register
// bits: first all of K, then the accumulator's register bits along `keep`.
struct OperandLayout {
  LinearLayout layout;
  std::vector<int> acc_bits;  // accumulator register bits that select operand registers
};

OperandLayout operand_layout(const LinearLayout& acc, int keep, int k_dim, int64_t k) {
  OperandLayout out;
  auto map = [&](const Coord& basis) {
    Coord c(2, 0);
    c[1 - k_dim] = basis[keep];
    return c;
  };
  out.layout.shape = k_dim == 1 ? ir::Shape{acc.shape[0], k} : ir::Shape{k, acc.shape[1]};
  for (int64_t bit = 1; bit < k; bit *= 2) {
    Coord c(2, 0);
    c[k_dim] = bit;
    out.layout.reg.push_back(c);
  }
  for (size_t i = 0; i < acc.reg.size(); ++i)
    if (acc.reg[i][keep]) {
      out.layout.reg.push_back(map(acc.reg[i]));
      out.acc_bits.push_back(static_cast<int>(i));
    }
  for (auto& basis : acc.lane) out.layout.lane.push_back(map(basis));
  for (auto& basis : acc.warp) out.layout.warp.push_back(map(basis));
  return out;
}

int operand_register(const OperandLayout& op, int acc_reg, int64_t kk, int64_t k) {
  int r = 0;
  for (size_t i = 0; i < op.acc_bits.size(); ++i)
    if (acc_reg >> op.acc_bits[i] & 1) r |= 1 << i;
  return static_cast<int>(kk + k * r);
}

}  // namespace

std::optional<MmaTiling> Lowering::dot_tiling(const ir::Op& op) const {
  const ir::Type& a = op.operands[0]->type;
  const ir::Type& bt = op.operands[1]->type;
  if (a.dtype == DType::f32 && op.attr_str("precision") == "ieee") return std::nullopt;
  auto instr = select_mma(a.dtype, bt.dtype, target);
  if (!instr) return std::nullopt;
  return mma_tiling(*instr, a.shape[0], bt.shape[1], a.shape[1], fn.num_warps);
}

LinearLayout Lowering::dot_result_layout(const ir::Op& op) const {
  if (auto tiling = wgmma_dot_tiling(op)) return tiling->acc;
  if (auto tiling = dot_tiling(op)) return tiling->acc;
  return default_layout(op.result()->type.shape);
}

void Lowering::lower_dot(const ir::Op& op) {
  if (auto tiling = wgmma_dot_tiling(op)) return lower_dot_wgmma(op, *tiling);
  if (auto tiling = dot_tiling(op)) return lower_dot_mma(op, *tiling);
  const ir::Value* a = op.operands[0];
  const ir::Value* bv = op.operands[1];
  const ir::Value* acc = op.operands[2];
  int64_t k = a->type.shape[1];
  LinearLayout acc_layout = dot_result_layout(op);
  if (acc_layout.num_regs() * k > kMaxUnrolledFmas)
    fail("{}: dot of [{}] by [{}] on the CUDA cores ({} operands{}, {}) unrolls {} multiply-adds per thread, more "
         "than {}; use smaller tiles, more warps, or operands the tensor cores take",
         op.loc.str(), ir::shape_str(a->type.shape), ir::shape_str(bv->type.shape), dtype_name(a->type.dtype),
         op.attr_str("precision") == "ieee" ? " in ieee precision" : "", target.arch, acc_layout.num_regs() * k,
         kMaxUnrolledFmas);
  OperandLayout a_layout = operand_layout(acc_layout, 0, 1, k);
  OperandLayout b_layout = operand_layout(acc_layout, 1, 0, k);
  std::vector<llvm::Value*> av = in_layout(a, a_layout.layout);
  std::vector<llvm::Value*> bvals = in_layout(bv, b_layout.layout);
  std::vector<llvm::Value*> cv = in_layout(acc, acc_layout);
  DType acc_dtype = acc->type.dtype;
  bool integer = acc_dtype == DType::i32;
  // Operands are widened once, not once per use.
  for (auto& v : av) v = emit_cast(*this, v, a->type.dtype, acc_dtype, false);
  for (auto& v : bvals) v = emit_cast(*this, v, bv->type.dtype, acc_dtype, false);
  std::vector<llvm::Value*> out;
  for (int r = 0; r < acc_layout.num_regs(); ++r) {
    llvm::Value* sum = cv[r];
    for (int64_t kk = 0; kk < k; ++kk) {
      llvm::Value* x = av[operand_register(a_layout, r, kk, k)];
      llvm::Value* y = bvals[operand_register(b_layout, r, kk, k)];
      sum = integer ? b.CreateAdd(sum, b.CreateMul(x, y))
                    : call_intrinsic(llvm::Intrinsic::fma, {sum->getType()}, {x, y, sum});
    }
    out.push_back(sum);
  }
  define(op.result(), Regs{acc_layout, out});
}

}  // namespace tilejit::codegen::lowering
