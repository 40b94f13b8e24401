// bf16 fma as the GPU computes it (fma.rn.bf16): a * b + c rounded once. The x86 backend fuses
// in f32 and rounds again, which can land on the wrong side of a tie (1.0625 * 1.0625 + 2^-40
// gives 1.125, not 1.1328125). Here the sum is kept exact enough instead: the product of two
// 8-bit significands is exact in double, the sum is rounded to odd (its error found by TwoSum),
// then to odd again in f32, and only then to nearest even in bf16. Rounding to odd with at
// least two spare bits composes with a final rounding to nearest, so the result is the exact
// sum's. (f16 needs none of this: x86 fuses it in f64, exact for every finite f16 result.)
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "runtime/emu/half_registers.h"
#include "runtime/emu/runtime_symbols.h"

namespace tilejit::emu {
namespace {

bool last_bit_even(double d) { return (std::bit_cast<uint64_t>(d) & 1) == 0; }
bool last_bit_even(float f) { return (std::bit_cast<uint32_t>(f) & 1) == 0; }

// An inexact result is moved to whichever of its two neighbours around the exact value has an
// odd last bit; `above` says on which side the exact value lies.
template <typename T>
T to_odd(T rounded, bool inexact, bool above) {
  if (!inexact || !last_bit_even(rounded)) return rounded;
  return std::nextafter(rounded, above ? std::numeric_limits<T>::infinity() : -std::numeric_limits<T>::infinity());
}

// a * b + c of bf16 values, rounded to odd in f32.
float fma_to_odd_f32(float a, float b, float c) {
  const double product = double(a) * double(b);  // exact: 2 x 8 significant bits
  const double sum = product + double(c);
  if (!std::isfinite(sum)) return static_cast<float>(sum);
  const double back = sum - product, error = (product - (sum - back)) + (double(c) - back);  // TwoSum
  const double odd_sum = to_odd(sum, error != 0, error > 0);
  const float narrowed = static_cast<float>(odd_sum);
  return to_odd(narrowed, double(narrowed) != odd_sum, odd_sum > double(narrowed));
}

float bf16_value(float r) { return std::bit_cast<float>(uint32_t{from_half_register(r)} << 16); }

float fma_bf16(float a, float b, float c) {
  const float odd = fma_to_odd_f32(bf16_value(a), bf16_value(b), bf16_value(c));
  return in_half_register(f32_bits_to_bf16(std::bit_cast<uint32_t>(odd)));
}

}  // namespace

void add_bf16_fma_symbols(codegen::HostSymbols& out) {
  out.emplace_back(codegen::kHostFmaBf16, reinterpret_cast<void*>(fma_bf16));
}

}  // namespace tilejit::emu
