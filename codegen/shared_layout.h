// How a row-major tile is laid out in shared memory so that the warp-wide 16-byte row
// accesses of the tensor-core path are free of bank conflicts: ldmatrix reads eight rows of
// 16 bytes per phase, and threads store 16-byte vectors. The 16-byte chunks of a row are
// XOR-permuted by the row's position within a group of eight 128-byte lines, which is the
// 32 / 64 / 128-byte swizzle of TMA and wgmma when a row is that wide.
//
// Rows wider than 128 bytes are cut into 128-byte column blocks, each stored whole after the
// previous one (block c holds bytes 128c .. 128c+127 of every row), so every block is a stack
// of 128-byte lines: the canonical 128-byte-swizzled layout wgmma's matrix descriptors name.
#pragma once

#include <algorithm>
#include <cstdint>

namespace tilejit::codegen {

struct SwizzledTile {
  int64_t rows = 0, row_bytes = 0;  // row_bytes: a power of two, at least 16

  // Where byte `col_byte` of row `row` lives, from the tile's start.
  int64_t byte_offset(int64_t row, int64_t col_byte) const {
    int64_t in_line = col_byte % line_bytes();
    return col_byte / line_bytes() * block_bytes() + row * line_bytes() + ((chunk(in_line) ^ xor_mask(row)) << 4) +
           (col_byte & 15);
  }
  int64_t bytes() const { return rows * row_bytes; }

  // The parts of byte_offset, for code that computes it at run time.
  int64_t line_bytes() const { return std::min<int64_t>(row_bytes, 128); }  // of a row within one block
  int64_t block_bytes() const { return rows * line_bytes(); }
  int64_t chunks_per_line() const { return line_bytes() / 16; }
  int64_t rows_per_line() const { return 8 / chunks_per_line(); }  // rows sharing a 128-byte line
  int64_t xor_mask(int64_t row) const { return (row / rows_per_line()) % chunks_per_line(); }
  static int64_t chunk(int64_t col_byte) { return col_byte >> 4; }
};

}  // namespace tilejit::codegen
