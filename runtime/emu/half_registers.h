// Internal to the emulator: 16-bit floats as the host code the emulator runs passes them (in
// the low 16 bits of a float register), and f32 -> bf16 rounding as the GPU does it.
#pragma once

#include <bit>
#include <cstdint>

namespace tilejit::emu {

inline float in_half_register(uint16_t bits) { return std::bit_cast<float>(uint32_t{bits}); }
inline uint16_t from_half_register(float r) { return static_cast<uint16_t>(std::bit_cast<uint32_t>(r)); }

// Rounds the f32 bit pattern to its upper 16 bits, to nearest even. NaNs keep their payload's
// upper bits (quieted only when those are all zero, so they stay NaNs), as a bf16 that was
// widened and narrowed again must come back unchanged.
inline uint16_t f32_bits_to_bf16(uint32_t bits) {
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    uint16_t upper = static_cast<uint16_t>(bits >> 16);
    return (upper & 0x7f) ? upper : static_cast<uint16_t>(upper | 0x40);
  }
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

}  // namespace tilejit::emu
