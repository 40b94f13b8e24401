// Conversions between element types. fp8 (e4m3, e5m2) and e8m0 have no arithmetic, so they are
// encoded and decoded with integer and f32 operations that round to nearest even exactly as
// SEMANTICS.md says; sm_89+ widens fp8 with its conversion instruction.
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include "codegen/lowering/lowering.h"

namespace tilejit::codegen::lowering {

namespace {

struct Fp8Format {
  int exponent_bits, mantissa_bits, bias;
  double max_finite;
  uint32_t max_code;    // largest finite magnitude code
  uint32_t nan_code;    // magnitude code of NaN
  uint32_t overflow;    // magnitude code of a non-saturated overflow (inf, or NaN without inf)
  bool has_inf;
};

Fp8Format format_of(DType t) {
  if (t == DType::f8e4m3) return {4, 3, 7, 448.0, 0x7e, 0x7f, 0x7f, false};
  return {5, 2, 15, 57344.0, 0x7b, 0x7f, 0x7c, true};
}

llvm::Value* f32_from_bits(Lowering& L, llvm::Value* bits) { return L.b.CreateBitCast(bits, L.b.getFloatTy()); }
llvm::Value* bits_of(Lowering& L, llvm::Value* f) { return L.b.CreateBitCast(f, L.b.getInt32Ty()); }

// sm_89+ widens fp8 pairs to f16 pairs in one instruction (every fp8 value is an f16 value):
// `low` and `high` (`high` may be null) as f32.
bool widens_fp8_pairs(const Lowering& L) { return L.target.compute_capability >= 89; }

std::pair<llvm::Value*, llvm::Value*> fp8_pair_to_f32(Lowering& L, llvm::Value* low, llvm::Value* high, DType t) {
  auto& B = L.b;
  llvm::Value* pair = B.CreateZExt(low, B.getInt16Ty());
  if (high) pair = B.CreateOr(pair, B.CreateShl(B.CreateZExt(high, B.getInt16Ty()), 8));
  auto id = t == DType::f8e4m3 ? llvm::Intrinsic::nvvm_e4m3x2_to_f16x2_rn : llvm::Intrinsic::nvvm_e5m2x2_to_f16x2_rn;
  llvm::Value* halves = L.call_intrinsic(id, {}, {pair});
  auto widen = [&](uint64_t i) { return B.CreateFPExt(B.CreateExtractElement(halves, i), B.getFloatTy()); };
  return {widen(0), high ? widen(1) : nullptr};
}

llvm::Value* fp8_to_f32(Lowering& L, llvm::Value* byte, DType t) {
  auto& B = L.b;
  if (widens_fp8_pairs(L)) return fp8_pair_to_f32(L, byte, nullptr, t).first;
  Fp8Format f = format_of(t);
  llvm::Value* v = B.CreateZExt(byte, B.getInt32Ty());
  llvm::Value* sign = B.CreateShl(B.CreateLShr(v, 7), 31);
  llvm::Value* exp = B.CreateAnd(B.CreateLShr(v, f.mantissa_bits), (1 << f.exponent_bits) - 1);
  llvm::Value* mant = B.CreateAnd(v, (1 << f.mantissa_bits) - 1);
  // Normal: rebias the exponent and widen the mantissa.
  llvm::Value* normal = B.CreateOr(B.CreateShl(B.CreateAdd(exp, B.getInt32(127 - f.bias)), 23),
                                   B.CreateShl(mant, 23 - f.mantissa_bits));
  // Subnormal: mant * 2^(1 - bias - mantissa_bits), exact in f32.
  llvm::Value* sub = B.CreateFMul(B.CreateUIToFP(mant, B.getFloatTy()),
                                  llvm::ConstantFP::get(B.getFloatTy(), std::ldexp(1.0, 1 - f.bias - f.mantissa_bits)));
  llvm::Value* magnitude = B.CreateSelect(B.CreateICmpEQ(exp, B.getInt32(0)), sub, f32_from_bits(L, normal));
  llvm::Value* special;
  llvm::Value* special_value;
  if (f.has_inf) {
    special = B.CreateICmpEQ(exp, B.getInt32((1 << f.exponent_bits) - 1));
    special_value = f32_from_bits(L, B.CreateSelect(B.CreateICmpEQ(mant, B.getInt32(0)), B.getInt32(0x7f800000),
                                                    B.getInt32(0x7fc00000)));
  } else {
    special = B.CreateICmpEQ(B.CreateAnd(v, 0x7f), B.getInt32(static_cast<uint32_t>(f.nan_code)));
    special_value = f32_from_bits(L, B.getInt32(0x7fc00000));
  }
  magnitude = B.CreateSelect(special, special_value, magnitude);
  return f32_from_bits(L, B.CreateOr(bits_of(L, magnitude), sign));
}

llvm::Value* f32_to_fp8(Lowering& L, llvm::Value* x, DType t, bool saturate) {
  auto& B = L.b;
  Fp8Format f = format_of(t);
  llvm::Value* bits = bits_of(L, x);
  llvm::Value* sign = B.CreateAnd(B.CreateLShr(bits, 24), 0x80);
  llvm::Value* a_bits = B.CreateAnd(bits, 0x7fffffff);
  llvm::Value* a = f32_from_bits(L, a_bits);
  int emin = 1 - f.bias;
  // Round |x| to a multiple of its quantum 2^(e - mantissa_bits), e = max(exponent, emin):
  // scaling by powers of two is exact, and rint rounds to nearest even.
  llvm::Value* e = B.CreateSub(B.CreateLShr(a_bits, 23), B.getInt32(127));
  e = L.call_intrinsic(llvm::Intrinsic::smax, {B.getInt32Ty()}, {e, B.getInt32(static_cast<uint32_t>(emin))});
  e = L.call_intrinsic(llvm::Intrinsic::smin, {B.getInt32Ty()}, {e, B.getInt32(100)});
  llvm::Value* inv_quantum = f32_from_bits(L, B.CreateShl(B.CreateSub(B.getInt32(127 + f.mantissa_bits), e), 23));
  llvm::Value* quantum = f32_from_bits(L, B.CreateShl(B.CreateAdd(B.CreateSub(e, B.getInt32(f.mantissa_bits)), B.getInt32(127)), 23));
  llvm::Value* steps = L.call_intrinsic(llvm::Intrinsic::rint, {B.getFloatTy()}, {B.CreateFMul(a, inv_quantum)});
  llvm::Value* r = B.CreateFMul(steps, quantum);  // the rounded magnitude, exact
  llvm::Value* r_bits = bits_of(L, r);
  llvm::Value* r_exp = B.CreateSub(B.CreateLShr(r_bits, 23), B.getInt32(127));
  llvm::Value* normal_code = B.CreateOr(B.CreateShl(B.CreateAdd(r_exp, B.getInt32(f.bias)), f.mantissa_bits),
                                        B.CreateAnd(B.CreateLShr(r_bits, 23 - f.mantissa_bits), (1 << f.mantissa_bits) - 1));
  llvm::Value* sub_code = B.CreateFPToUI(
      B.CreateFMul(r, llvm::ConstantFP::get(B.getFloatTy(), std::ldexp(1.0, f.mantissa_bits - emin))), B.getInt32Ty());
  llvm::Value* is_sub = B.CreateFCmpOLT(r, llvm::ConstantFP::get(B.getFloatTy(), std::ldexp(1.0, emin)));
  llvm::Value* code = B.CreateSelect(is_sub, sub_code, normal_code);
  llvm::Value* overflow = B.CreateFCmpOGT(r, llvm::ConstantFP::get(B.getFloatTy(), f.max_finite));
  code = B.CreateSelect(overflow, B.getInt32(saturate ? f.max_code : f.overflow), code);
  code = B.CreateSelect(B.CreateFCmpUNO(x, x), B.getInt32(f.nan_code), code);
  return B.CreateTrunc(B.CreateOr(code, sign), B.getInt8Ty());
}

llvm::Value* e8m0_to_f32(Lowering& L, llvm::Value* byte) {
  auto& B = L.b;
  llvm::Value* v = B.CreateZExt(byte, B.getInt32Ty());
  llvm::Value* bits = B.CreateShl(v, 23);
  bits = B.CreateSelect(B.CreateICmpEQ(v, B.getInt32(0)), B.getInt32(0x00400000), bits);  // 2^-127
  bits = B.CreateSelect(B.CreateICmpEQ(v, B.getInt32(0xff)), B.getInt32(0x7fc00000), bits);
  return f32_from_bits(L, bits);
}

llvm::Value* f32_to_e8m0(Lowering& L, llvm::Value* x) {
  auto& B = L.b;
  llvm::Value* bits = bits_of(L, x);
  llvm::Value* exp = B.CreateAnd(B.CreateLShr(bits, 23), 0xff);
  llvm::Value* mant = B.CreateAnd(bits, 0x7fffff);
  // Between 2^e and 2^(e+1) the midpoint is 1.5 * 2^e (mantissa 0x400000); a subnormal
  // 0.m * 2^-126 lies between 2^-127 (code 0) and 2^-126, whose midpoint is mantissa 0x600000.
  llvm::Value* subnormal = B.CreateICmpEQ(exp, B.getInt32(0));
  llvm::Value* midpoint = B.CreateSelect(subnormal, B.getInt32(0x600000), B.getInt32(0x400000));
  llvm::Value* tie = B.CreateICmpEQ(mant, midpoint);
  // Ties go to the even code: up from an odd exponent field; never up from code 0.
  llvm::Value* up = B.CreateOr(B.CreateICmpUGT(mant, midpoint),
                               B.CreateAnd(tie, B.CreateICmpEQ(B.CreateAnd(exp, 1), B.getInt32(1))));
  llvm::Value* code = B.CreateAdd(exp, B.CreateZExt(up, B.getInt32Ty()));
  code = L.call_intrinsic(llvm::Intrinsic::umin, {B.getInt32Ty()}, {code, B.getInt32(0xff)});
  llvm::Value* invalid = B.CreateNot(B.CreateFCmpOGT(x, llvm::ConstantFP::get(B.getFloatTy(), 0.0)));
  invalid = B.CreateOr(invalid, B.CreateICmpEQ(exp, B.getInt32(0xff)));
  code = B.CreateSelect(invalid, B.getInt32(0xff), code);
  return B.CreateTrunc(code, B.getInt8Ty());
}

// An integer to the nearest power of two, ties to the even code, computed on the integer
// itself: going through f32 would round twice (a value just above a midpoint can round onto it).
llvm::Value* int_to_e8m0(Lowering& L, llvm::Value* x) {
  auto& B = L.b;
  llvm::Value* v = B.CreateSExt(x, B.getInt64Ty());
  llvm::Value* positive = B.CreateICmpSGT(v, B.getInt64(0));
  llvm::Value* top = B.CreateSub(B.getInt64(63), L.call_intrinsic(llvm::Intrinsic::ctlz, {B.getInt64Ty()}, {v, B.getTrue()}));
  llvm::Value* power = B.CreateShl(B.getInt64(1), top);                          // 2^top <= v
  llvm::Value* rest = B.CreateSub(v, power);
  llvm::Value* half = B.CreateLShr(power, 1);                                    // the midpoint's offset
  llvm::Value* code = B.CreateAdd(B.CreateTrunc(top, B.getInt32Ty()), B.getInt32(127));
  llvm::Value* tie = B.CreateAnd(B.CreateICmpEQ(rest, half), B.CreateICmpNE(half, B.getInt64(0)));
  llvm::Value* up = B.CreateOr(B.CreateICmpUGT(rest, half),
                               B.CreateAnd(tie, B.CreateICmpEQ(B.CreateAnd(code, 1), B.getInt32(1))));
  code = B.CreateAdd(code, B.CreateZExt(up, B.getInt32Ty()));
  return B.CreateTrunc(B.CreateSelect(positive, code, B.getInt32(0xff)), B.getInt8Ty());  // <= 0: NaN
}

// float -> i8 / i32 / i64, truncating and saturating, NaN -> 0. PTX's cvt.rzi.s32.f32 does
// exactly that; llvm.fptosi.sat, which says the same, is expanded by the NVPTX backend into
// three compares and selects around the conversion. The ftz form: LLVM's NVPTX combine turns
// llvm.nvvm.f2i.rz into fptosi, whose NaN and out-of-range results are poison, and flushing a
// subnormal input changes nothing here (it truncates to 0 either way). i8 clamps the i32 (two
// integer ops).
llvm::Value* float_to_integer(Lowering& L, llvm::Value* x, DType to) {
  auto& B = L.b;
  llvm::Type* target = L.llvm_type(ir::Type::scalar(to));
  if (to == DType::i64) return L.call_intrinsic(llvm::Intrinsic::fptosi_sat, {target, x->getType()}, {x});
  llvm::Value* f32 = x->getType()->isFloatTy() ? x : B.CreateFPExt(x, B.getFloatTy());  // exact
  llvm::Value* i32 = L.call_intrinsic(llvm::Intrinsic::nvvm_f2i_rz_ftz, {}, {f32});
  if (to == DType::i32) return i32;
  llvm::Value* clamped = L.call_intrinsic(llvm::Intrinsic::smax, {B.getInt32Ty()}, {i32, B.getInt32(-128)});
  clamped = L.call_intrinsic(llvm::Intrinsic::smin, {B.getInt32Ty()}, {clamped, B.getInt32(127)});
  return B.CreateTrunc(clamped, target);
}

}  // namespace

llvm::Value* emit_cast(Lowering& L, llvm::Value* x, DType from, DType to, bool saturate) {
  auto& B = L.b;
  if (from == to) return x;
  llvm::Type* target = L.llvm_type(ir::Type::scalar(to));
  // Formats without arithmetic go through f32 (exact for every source).
  if (is_fp8(from)) return emit_cast(L, fp8_to_f32(L, x, from), DType::f32, to, saturate);
  if (from == DType::e8m0) return emit_cast(L, e8m0_to_f32(L, x), DType::f32, to, saturate);
  if (is_fp8(to)) return f32_to_fp8(L, emit_cast(L, x, from, DType::f32, false), to, saturate);
  if (to == DType::e8m0 && is_integer(from) && from != DType::i1) return int_to_e8m0(L, x);
  if (to == DType::e8m0) return f32_to_e8m0(L, emit_cast(L, x, from, DType::f32, false));

  if (from == DType::i1) return is_float(to) ? B.CreateUIToFP(x, target) : B.CreateZExt(x, target);
  if (to == DType::i1)
    return is_float(from) ? B.CreateFCmpUNE(x, llvm::Constant::getNullValue(x->getType()))
                          : B.CreateICmpNE(x, llvm::Constant::getNullValue(x->getType()));
  if (is_integer(from) && is_integer(to)) return B.CreateSExtOrTrunc(x, target);
  if (is_integer(from)) return B.CreateSIToFP(x, target);
  if (is_integer(to)) return float_to_integer(L, x, to);
  // Between f16, bf16 and f32: through f32 when neither side is f32.
  if (from != DType::f32 && to != DType::f32) return B.CreateFPTrunc(B.CreateFPExt(x, B.getFloatTy()), target);
  return to == DType::f32 ? B.CreateFPExt(x, target) : B.CreateFPTrunc(x, target);
}

std::vector<llvm::Value*> emit_casts(Lowering& L, const std::vector<llvm::Value*>& x, int count, DType from, DType to,
                                     bool saturate) {
  std::vector<llvm::Value*> out;
  const bool pairs = is_fp8(from) && from != to && widens_fp8_pairs(L);
  for (int i = 0; i < count; i += pairs ? 2 : 1) {
    if (!pairs) {
      out.push_back(emit_cast(L, x[size_t(i)], from, to, saturate));
      continue;
    }
    auto [low, high] = fp8_pair_to_f32(L, x[size_t(i)], i + 1 < count ? x[size_t(i + 1)] : nullptr, from);
    out.push_back(emit_cast(L, low, DType::f32, to, saturate));
    if (high) out.push_back(emit_cast(L, high, DType::f32, to, saturate));
  }
  return out;
}

}  // namespace tilejit::codegen::lowering
