// Internal to the emulator: where the elements of the warp-level tensor-core fragments sit,
// from the PTX ISA's tables for mma.m16n8kK (k = 8: tf32; 16: f16 / bf16; 32: 8-bit), written
// independently of the compiler's layouts (codegen/mma_layout.h). wgmma.mma_async's A from
// registers repeats mma's A fragment in each warp of the warpgroup, 16 rows apart.
#pragma once

#include <cstdint>

namespace tilejit::emu {

struct Position {
  int row, col;
};

// Element i of a lane's fragment ("a_i", "b_i", "c_i" in the ISA), for m16n8kK.
inline Position a_position(int k, int lane, int i) {
  int group = lane >> 2, in_group = lane & 3;
  switch (k) {
    case 8: return {group + 8 * (i & 1), in_group + 4 * (i >> 1)};
    case 16: return {group + 8 * ((i >> 1) & 1), in_group * 2 + (i & 1) + 8 * (i >> 2)};
    default: return {group + 8 * ((i >> 2) & 1), in_group * 4 + (i & 3) + 16 * (i >> 3)};
  }
}
inline Position b_position(int k, int lane, int i) {  // row is the K index, col the N index
  int group = lane >> 2, in_group = lane & 3;
  switch (k) {
    case 8: return {in_group + 4 * i, group};
    case 16: return {in_group * 2 + (i & 1) + 8 * (i >> 1), group};
    default: return {in_group * 4 + (i & 3) + 16 * (i >> 2), group};
  }
}
inline Position c_position(int lane, int i) { return {(lane >> 2) + 8 * (i >> 1), (lane & 3) * 2 + (i & 1)}; }

// Element i of a fragment held in `words`, `bits` wide each, lowest element first.
inline uint32_t fragment_element(const uint32_t* words, int bits, int i) {
  int per_word = 32 / bits;
  uint32_t word = words[i / per_word];
  return bits == 32 ? word : (word >> (bits * (i % per_word))) & ((1u << bits) - 1);
}

}  // namespace tilejit::emu
