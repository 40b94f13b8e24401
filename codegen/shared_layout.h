// How a row-major tile is laid out in shared memory so that the warp-wide 16-byte row
// accesses of the tensor-core path are free of bank conflicts: ldmatrix reads eight rows of
// 16 bytes per phase, and threads store 16-byte vectors. The 16-byte chunks of a row are
// XOR-permuted by the row's position within a group of eight 128-byte lines, which is the
// 32 / 64 / 128-byte swizzle of TMA and wgmma when a row is that wide.
#pragma once

#include <cstdint>

namespace tilejit::codegen {

struct SwizzledTile {
  int64_t rows = 0, row_bytes = 0;  // row_bytes: a power of two, at least 16

  // Where byte `col_byte` of row `row` lives, from the tile's start.
  int64_t byte_offset(int64_t row, int64_t col_byte) const {
    return row * row_bytes + ((chunk(col_byte) ^ xor_mask(row)) << 4) + (col_byte & 15);
  }
  int64_t bytes() const { return rows * row_bytes; }

  // The parts of byte_offset, for code that computes it at run time.
  int64_t chunks_per_row() const { return row_bytes / 16; }
  int64_t rows_per_line() const { return chunks_per_row() >= 8 ? 1 : 8 / chunks_per_row(); }  // 128-byte lines
  int64_t xor_mask(int64_t row) const {
    int64_t phase = chunks_per_row() < 8 ? chunks_per_row() : 8;
    return (row / rows_per_line()) % phase;
  }
  static int64_t chunk(int64_t col_byte) { return col_byte >> 4; }
};

}  // namespace tilejit::codegen
