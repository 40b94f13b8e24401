// Internal to the emulator: the element encodings the tensor-core instructions take
// (mma.sync, wgmma), decoded exactly into doubles, and how an instruction's exact sum
// becomes its f32 result.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

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

// x cut toward zero to 13 fraction bits of 2^exponent, and to f32's subnormal step.
inline double cut_to_13_fraction_bits(double x, int exponent) {
  const double step = std::ldexp(1.0, std::max(exponent - 13, -149));
  return std::trunc(x / step) * step;
}

// The f32 result of one tensor-core instruction with operands of encoding `operands`: C plus
// the k products product(0), ..., product(k - 1), each exact.
//
// fp8 operands (sm_89, sm_90): the tensor cores add in a fixed-point accumulator narrower than
// f32. As published measurements of H100 describe it (an "e8m13" accumulator, truncating;
// DeepSeek-V3's report: "around 14 bits"), every addend, C included, is aligned to the largest
// of their exponents and cut toward zero to 13 fraction bits of it, the aligned addends are
// summed, and the sum is cut toward zero to 13 fraction bits of its own exponent. So a product
// below 2^-13 of the largest addend is lost, and a chain of instructions over a long K, whose
// C outgrows the products, loses more of each product the longer it runs. (The emulator
// applies this on every target; the measurements are of sm_89 and sm_90.)
//
// Other operands: the exact sum rounded once to nearest, PTX's most accurate reading (the ISA
// leaves the order and intermediate precision of the sum unspecified).
template <typename Product>
float tensor_core_result(Encoding operands, double c, int k, Product product) {
  const bool fp8 = is_fp8(operands);
  constexpr int kNone = std::numeric_limits<int>::min();
  int largest = fp8 && c != 0 ? std::ilogb(c) : kNone;  // the nonzero addends' largest exponent (fp8)
  double exact = c;
  for (int i = 0; i < k; ++i) {
    const double p = product(i);
    exact += p;
    if (fp8 && p != 0) largest = std::max(largest, std::ilogb(p));
  }
  if (!fp8 || !std::isfinite(exact)) return static_cast<float>(exact);
  if (largest == kNone) return static_cast<float>(exact);  // all zero
  // Multiples of one step below 2^(largest + 1): their sum is exact in a double.
  double aligned = cut_to_13_fraction_bits(c, largest);
  for (int i = 0; i < k; ++i) aligned += cut_to_13_fraction_bits(product(i), largest);
  if (aligned == 0) return 0.0f;
  const double result = cut_to_13_fraction_bits(aligned, std::ilogb(aligned));
  return std::fabs(result) > std::numeric_limits<float>::max() ? std::copysign(INFINITY, result)
                                                               : static_cast<float>(result);
}

}  // namespace tilejit::emu
