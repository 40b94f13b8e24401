// Pairs of 8-bit floats widened to f16 pairs, as cvt.rn.f16x2.e4m3x2 and cvt.rn.f16x2.e5m2x2
// (sm_89+) widen them: every e4m3 and e5m2 value is an f16 value, so the results are exact;
// e4m3's NaN becomes f16's canonical NaN. Byte i of the pair is element i of the result.
#include <cstdint>

#include "codegen/host_compiler.h"
#include "runtime/emu/runtime_symbols.h"

namespace tilejit::emu {
namespace {

uint16_t e4m3_to_f16(uint8_t byte) {
  const uint16_t sign = static_cast<uint16_t>((byte & 0x80) << 8);
  const int exponent = (byte >> 3) & 0xf, mantissa = byte & 7;
  if ((byte & 0x7f) == 0x7f) return 0x7fff;
  if (exponent == 0) {
    if (mantissa == 0) return sign;
    // mantissa x 2^-9: normal in f16, its leading bit 2^top.
    const int top = mantissa >= 4 ? 2 : mantissa >= 2 ? 1 : 0;
    return static_cast<uint16_t>(sign | ((top - 9 + 15) << 10) | ((mantissa - (1 << top)) << (10 - top)));
  }
  return static_cast<uint16_t>(sign | ((exponent - 7 + 15) << 10) | (mantissa << 7));
}

// e5m2 is f16's upper byte.
uint16_t e5m2_to_f16(uint8_t byte) { return static_cast<uint16_t>(byte << 8); }

template <uint16_t (*Widen)(uint8_t)>
uint32_t pair_to_f16x2(uint16_t pair) {
  return uint32_t{Widen(static_cast<uint8_t>(pair))} | uint32_t{Widen(static_cast<uint8_t>(pair >> 8))} << 16;
}

}  // namespace

void add_fp8_symbols(codegen::HostSymbols& out) {
  auto add = [&](const char* nvvm, void* fn) { out.emplace_back(codegen::host_intrinsic_name(nvvm), fn); };
  add("llvm.nvvm.e4m3x2.to.f16x2.rn", reinterpret_cast<void*>(pair_to_f16x2<e4m3_to_f16>));
  add("llvm.nvvm.e5m2x2.to.f16x2.rn", reinterpret_cast<void*>(pair_to_f16x2<e5m2_to_f16>));
}

}  // namespace tilejit::emu
