// Internal to the emulator: the element encodings the tensor-core instructions take
// (mma.sync, wgmma), decoded exactly into doubles, and how an instruction's exact sum
// becomes its f32 result.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace tilejit::emu {

enum class Encoding { f16, bf16, tf32, e4m3, e5m2, s8 };

inline int element_bits(Encoding e) {
  switch (e) {
    case Encoding::f16:
    case Encoding::bf16: return 16;
    case Encoding::tf32: return 32;
    default: return 8;
  }
}

// A small float format with the given field widths; formats without infinities (e4m3) use
// only S.1111.111 for NaN.
inline double decode_minifloat(uint32_t bits, int exp_bits, int mant_bits, bool has_inf) {
  uint32_t mant = bits & ((1u << mant_bits) - 1);
  uint32_t exp = (bits >> mant_bits) & ((1u << exp_bits) - 1);
  bool negative = (bits >> (exp_bits + mant_bits)) & 1;
  int bias = (1 << (exp_bits - 1)) - 1;
  uint32_t top = (1u << exp_bits) - 1;
  double v;
  if (exp == top && (has_inf || mant == (1u << mant_bits) - 1))
    v = has_inf && mant == 0 ? INFINITY : NAN;
  else if (exp == 0)
    v = std::ldexp(static_cast<double>(mant), 1 - bias - mant_bits);
  else
    v = std::ldexp(static_cast<double>(mant | (1u << mant_bits)), static_cast<int>(exp) - bias - mant_bits);
  return negative ? -v : v;
}

inline double decode(Encoding e, uint32_t bits) {
  switch (e) {
    case Encoding::f16: return decode_minifloat(bits, 5, 10, true);
    case Encoding::bf16: return std::bit_cast<float>(bits << 16);
    case Encoding::tf32: return std::bit_cast<float>(bits & 0xffffe000u);
    case Encoding::e4m3: return decode_minifloat(bits, 4, 3, false);
    case Encoding::e5m2: return decode_minifloat(bits, 5, 2, true);
    case Encoding::s8: return static_cast<int8_t>(bits);
  }
  return NAN;
}

inline bool is_fp8(Encoding e) { return e == Encoding::e4m3 || e == Encoding::e5m2; }

// The f32 result of a tensor-core instruction whose operands are `operands` and whose exact
// sum (C plus the products) is `exact`.
//
// fp8 operands: the tensor cores of sm_89 and sm_90 sum them in an accumulator narrower than
// f32. Published measurements of H100 and Ada agree that the result leaves each instruction
// with 13 fraction bits, the rest cut off toward zero (an "e8m13" accumulator; DeepSeek-V3's
// report: "around 14 bits"), so a chain of instructions over a long K drifts from an f32 sum
// as the sum grows. The emulator models that loss between instructions, which is what a
// kernel must work around (by adding each block's product into an f32 accumulator); the
// finer rounding of the products inside one instruction is not modelled.
//
// Other operands: one rounding to nearest, PTX's most accurate reading (the ISA leaves the
// order and intermediate precision of the sum unspecified).
inline float tensor_core_result(Encoding operands, double exact) {
  if (!is_fp8(operands) || exact == 0 || !std::isfinite(exact)) return static_cast<float>(exact);
  int exponent;
  const double fraction = std::frexp(exact, &exponent);  // 0.5 <= |fraction| < 1
  return static_cast<float>(std::ldexp(std::trunc(std::ldexp(fraction, 14)), exponent - 14));
}

}  // namespace tilejit::emu
