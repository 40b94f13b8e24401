// Elementwise ops: arithmetic, comparisons, math, select, casts and pointer offsets,
// computed register by register in one layout.
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include "codegen/lowering/lowering.h"

namespace tilejit::codegen::lowering {

using K = ir::OpKind;

namespace {

// Integer division defined for every input, as PTX's div and rem are: a divisor of 0 gives an
// unspecified value (here a / 1 and 0) and INT_MIN / -1 wraps, where LLVM's sdiv and srem are
// undefined and the emulator's CPU traps (a masked lane's divisor reads as 0). A divisor known
// when the kernel is compiled folds the checks away.
llvm::Value* emit_integer_division(Lowering& L, llvm::Value* a, llvm::Value* b, bool remainder) {
  auto& B = L.b;
  llvm::Type* type = b->getType();
  llvm::Value* zero = llvm::Constant::getNullValue(type);
  llvm::Value* by_minus_one = B.CreateICmpEQ(b, llvm::Constant::getAllOnesValue(type));
  llvm::Value* divisor =
      B.CreateSelect(B.CreateOr(B.CreateICmpEQ(b, zero), by_minus_one), llvm::ConstantInt::get(type, 1), b);
  if (remainder) return B.CreateSelect(by_minus_one, zero, B.CreateSRem(a, divisor));
  return B.CreateSelect(by_minus_one, B.CreateSub(zero, a), B.CreateSDiv(a, divisor));
}

// Shift amounts read as unsigned and clamped to the width, as PTX's shl and shr do: past the
// width a << n is 0 and a >> n is the sign (0 or -1). LLVM's shl and ashr are poison there, and
// the emulator's CPU would take the amount modulo the width.
llvm::Value* emit_shift(Lowering& L, bool left, llvm::Value* a, llvm::Value* n) {
  auto& B = L.b;
  llvm::Type* type = a->getType();
  const unsigned bits = type->getIntegerBitWidth();
  if (left) {
    llvm::Value* past_width = B.CreateICmpUGE(n, llvm::ConstantInt::get(type, bits));
    return B.CreateSelect(past_width, llvm::Constant::getNullValue(type), B.CreateShl(a, n));
  }
  return B.CreateAShr(a, L.call_intrinsic(llvm::Intrinsic::umin, {type}, {n, llvm::ConstantInt::get(type, bits - 1)}));
}

// Float % is C's fmod, exact, through libdevice (f16 / bf16 widened: their remainder is exact in
// f32 too). LLVM's frem is not: NVPTX computes a - trunc(a / b) * b, which is off (even in
// sign) once a / b rounds, while the emulator's CPU calls fmodf.
llvm::Value* emit_float_remainder(Lowering& L, llvm::Value* a, llvm::Value* b) {
  auto& B = L.b;
  llvm::Type* type = a->getType();
  if (type->isFloatTy()) return L.call_libdevice("__nv_fmodf", {a, b});
  llvm::Value* r = L.call_libdevice("__nv_fmodf", {B.CreateFPExt(a, B.getFloatTy()), B.CreateFPExt(b, B.getFloatTy())});
  return B.CreateFPTrunc(r, type);
}

}  // namespace

llvm::Value* emit_binary(Lowering& L, K kind, DType dtype, llvm::Value* a, llvm::Value* b) {
  auto& B = L.b;
  bool f = is_float(dtype);
  switch (kind) {
    case K::add: return f ? B.CreateFAdd(a, b) : B.CreateAdd(a, b);
    case K::sub: return f ? B.CreateFSub(a, b) : B.CreateSub(a, b);
    case K::mul: return f ? B.CreateFMul(a, b) : B.CreateMul(a, b);
    case K::div: return f ? B.CreateFDiv(a, b) : emit_integer_division(L, a, b, false);
    case K::rem: return f ? emit_float_remainder(L, a, b) : emit_integer_division(L, a, b, true);
    case K::minimum:
      return L.call_intrinsic(f ? llvm::Intrinsic::minnum : llvm::Intrinsic::smin, {a->getType()}, {a, b});
    case K::maximum:
      return L.call_intrinsic(f ? llvm::Intrinsic::maxnum : llvm::Intrinsic::smax, {a->getType()}, {a, b});
    case K::bit_and: return B.CreateAnd(a, b);
    case K::bit_or: return B.CreateOr(a, b);
    case K::bit_xor: return B.CreateXor(a, b);
    case K::shl: return emit_shift(L, true, a, b);
    case K::shr: return emit_shift(L, false, a, b);
    default: TJ_CHECK(false);
  }
}

llvm::Value* emit_compare(Lowering& L, const std::string& predicate, DType dtype, llvm::Value* a, llvm::Value* b) {
  auto& B = L.b;
  using P = llvm::CmpInst::Predicate;
  bool f = is_float(dtype);
  P p;
  if (predicate == "eq") p = f ? P::FCMP_OEQ : P::ICMP_EQ;
  else if (predicate == "ne") p = f ? P::FCMP_UNE : P::ICMP_NE;
  else if (predicate == "lt") p = f ? P::FCMP_OLT : P::ICMP_SLT;
  else if (predicate == "le") p = f ? P::FCMP_OLE : P::ICMP_SLE;
  else if (predicate == "gt") p = f ? P::FCMP_OGT : P::ICMP_SGT;
  else if (predicate == "ge") p = f ? P::FCMP_OGE : P::ICMP_SGE;
  else TJ_CHECK(false);
  return f ? B.CreateFCmp(p, a, b) : B.CreateICmp(p, a, b);
}

namespace {

// Math in f32 through libdevice; f16 / bf16 are widened first and narrowed after. An exp2
// that may flush subnormal results (dsl::exp2_flushing_subnormals) is ex2.approx.ftz.f32.
llvm::Value* emit_math(Lowering& L, K kind, llvm::Value* x, bool flush_subnormals) {
  auto& B = L.b;
  llvm::Type* type = x->getType();
  if (!type->isFloatTy()) x = B.CreateFPExt(x, B.getFloatTy());
  llvm::Value* r = nullptr;
  switch (kind) {
    case K::exp: r = L.call_libdevice("__nv_expf", {x}); break;
    case K::exp2:
      r = flush_subnormals ? L.call_intrinsic(llvm::Intrinsic::nvvm_ex2_approx_ftz, {B.getFloatTy()}, {x})
                           : L.call_libdevice("__nv_exp2f", {x});
      break;
    case K::log: r = L.call_libdevice("__nv_logf", {x}); break;
    case K::log2: r = L.call_libdevice("__nv_log2f", {x}); break;
    case K::sqrt: r = L.call_libdevice("__nv_sqrtf", {x}); break;
    case K::rsqrt: r = L.call_libdevice("__nv_rsqrtf", {x}); break;
    case K::sin: r = L.call_libdevice("__nv_sinf", {x}); break;
    case K::cos: r = L.call_libdevice("__nv_cosf", {x}); break;
    case K::tanh: r = L.call_libdevice("__nv_tanhf", {x}); break;
    case K::erf: r = L.call_libdevice("__nv_erff", {x}); break;
    case K::rint: r = L.call_libdevice("__nv_rintf", {x}); break;
    case K::sigmoid: {
      llvm::Value* e = L.call_libdevice("__nv_expf", {B.CreateFNeg(x)});
      r = B.CreateFDiv(llvm::ConstantFP::get(B.getFloatTy(), 1.0), B.CreateFAdd(llvm::ConstantFP::get(B.getFloatTy(), 1.0), e));
      break;
    }
    default: TJ_CHECK(false);
  }
  return type->isFloatTy() ? r : B.CreateFPTrunc(r, type);
}

llvm::Value* emit_unary(Lowering& L, const ir::Op& op, DType dtype, llvm::Value* x) {
  const K kind = op.kind;
  auto& B = L.b;
  switch (kind) {
    case K::neg: return is_float(dtype) ? B.CreateFNeg(x) : B.CreateNeg(x);
    case K::bit_not: return B.CreateNot(x);
    case K::abs:
      if (is_float(dtype)) return L.call_intrinsic(llvm::Intrinsic::fabs, {x->getType()}, {x});
      return L.call_intrinsic(llvm::Intrinsic::abs, {x->getType()}, {x, B.getFalse()});
    default: return emit_math(L, kind, x, op.has_attr("flush_subnormals"));
  }
}

}  // namespace

bool is_elementwise(K kind) {
  switch (kind) {
    case K::cmp:
    case K::fma:
    case K::select:
    case K::cast:
    case K::bitcast:
    case K::addptr: return true;
    default: return ir::is_elementwise_binary(kind) || ir::is_elementwise_unary(kind);
  }
}

std::vector<llvm::Value*> Lowering::compute_elementwise(const ir::Op& op,
                                                        const std::vector<std::vector<llvm::Value*>>& in,
                                                        int count) {
  const ir::Type& operand_type = op.operands[0]->type;
  DType dtype = operand_type.dtype;
  if (op.kind == K::cast)
    return emit_casts(*this, in[0], count, dtype, op.attr_dtype("to"), op.attr_int("saturate") != 0);
  std::vector<llvm::Value*> out;
  for (int i = 0; i < count; ++i) {
    auto x = [&](size_t k) { return in[k][i]; };
    llvm::Value* r = nullptr;
    if (ir::is_elementwise_binary(op.kind)) r = emit_binary(*this, op.kind, dtype, x(0), x(1));
    else if (ir::is_elementwise_unary(op.kind)) r = emit_unary(*this, op, dtype, x(0));
    else switch (op.kind) {
      case K::cmp: r = emit_compare(*this, op.attr_str("predicate"), dtype, x(0), x(1)); break;
      case K::fma: r = call_intrinsic(llvm::Intrinsic::fma, {x(0)->getType()}, {x(0), x(1), x(2)}); break;
      case K::select: r = b.CreateSelect(x(0), x(1), x(2)); break;
      case K::bitcast: r = b.CreateBitCast(x(0), llvm_type(ir::Type::scalar(op.attr_dtype("to")))); break;
      case K::addptr: r = b.CreateGEP(memory_type(dtype), x(0), x(1)); break;
      default: TJ_CHECK(false);
    }
    out.push_back(r);
  }
  return out;
}

void Lowering::lower_elementwise(const ir::Op& op) {
  const ir::Value* result = op.result();
  if (result->type.is_scalar()) {
    std::vector<std::vector<llvm::Value*>> in;
    for (auto* operand : op.operands) in.push_back({scalar(operand)});
    define_scalar(result, compute_elementwise(op, in, 1)[0]);
    return;
  }
  // The result lives where its first computed (not cheaply recomputable) operand lives.
  LinearLayout layout = default_layout(result->type.shape);
  for (auto* operand : op.operands)
    if (!operand->type.is_scalar() && !rematerializable(operand)) {
      layout = home(operand).layout;
      break;
    }
  std::vector<std::vector<llvm::Value*>> in;
  for (auto* operand : op.operands)
    in.push_back(operand->type.is_scalar() ? std::vector<llvm::Value*>(layout.num_regs(), scalar(operand))
                                           : in_layout(operand, layout));
  define(result, Regs{layout, compute_elementwise(op, in, layout.num_regs())});
}

}  // namespace tilejit::codegen::lowering
