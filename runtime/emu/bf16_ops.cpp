// bf16 conversions as the GPU performs them, for the host code the emulator runs: f32 -> bf16
// rounds to nearest even and keeps subnormals (x86's bf16 instructions flush them), and an
// integer converts in one rounding. A bf16 travels in the low 16 bits of a float register, so
// these return a float whose bit pattern holds the bf16 in its low half.
#include <bit>
#include <cstdint>

#include "codegen/host_compiler.h"
#include "runtime/emu/half_registers.h"
#include "runtime/emu/runtime_symbols.h"

namespace tilejit::emu {
namespace {

float truncsfbf2(float x) { return in_half_register(f32_bits_to_bf16(std::bit_cast<uint32_t>(x))); }

// |v| as sign, 8 significant bits and exponent, rounded once to nearest even.
float i64_to_bf16(int64_t v) {
  if (v == 0) return in_half_register(0);
  uint16_t sign = v < 0 ? 0x8000 : 0;
  uint64_t m = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);  // |INT64_MIN| = 2^63 fits
  int exponent = 63 - __builtin_clzll(m);
  uint64_t significand = exponent > 7 ? m >> (exponent - 7) : m << (7 - exponent);  // 1.xxxxxxx
  if (exponent > 7) {
    uint64_t rest = m & ((uint64_t{1} << (exponent - 7)) - 1), half = uint64_t{1} << (exponent - 8);
    if (rest > half || (rest == half && (significand & 1))) ++significand;
    if (significand == 0x100) significand >>= 1, ++exponent;  // the rounding carried into a new bit
  }
  return in_half_register(static_cast<uint16_t>(sign | ((exponent + 127) << 7) | (significand & 0x7f)));
}

}  // namespace

void add_bf16_symbols(codegen::HostSymbols& out) {
  out.emplace_back("__truncsfbf2", reinterpret_cast<void*>(truncsfbf2));
  out.emplace_back(codegen::kHostIntToBf16, reinterpret_cast<void*>(i64_to_bf16));
}

}  // namespace tilejit::emu
