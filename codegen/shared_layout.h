// How a row-major tile is laid out in shared memory so that the warp-wide 16-byte row
// accesses of the tensor-core path are free of bank conflicts: ldmatrix reads eight rows of
// 16 bytes per phase, and threads store 16-byte vectors. The 16-byte chunks of a row are
// XOR-permuted by the place of the row's 128-byte line within a group of eight, which is the
// 32 / 64 / 128-byte swizzle of TMA and wgmma when a row is that wide.
//
// Rows wider than 128 bytes are cut into 128-byte column blocks, each stored whole after the
// previous one (block c holds bytes 128c .. 128c+127 of every row), so every block is a stack
// of 128-byte lines: the canonical 128-byte-swizzled layout wgmma's matrix descriptors name.
// The hardware takes a line's place from its shared address (the tile starts at a multiple of
// 1024 bytes), not from its row: a block of fewer than 8 rows ends mid-way through a group of
// eight lines, and the next block's first row continues that group.
#pragma once

#include <algorithm>
#include <cstdint>

namespace tilejit::codegen {

struct SwizzledTile {
  int64_t rows = 0, row_bytes = 0;  // row_bytes: a power of two, at least 16

  // Where byte `col_byte` of row `row` lives, from the tile's start.
  int64_t byte_offset(int64_t row, int64_t col_byte) const {
    int64_t start = line_start(row, col_byte);
    return start + ((chunk(col_byte % line_bytes()) ^ xor_mask(start)) << 4) + (col_byte & 15);
  }
  int64_t bytes() const { return rows * row_bytes; }

  // The parts of byte_offset, for code that computes it at run time.
  int64_t line_bytes() const { return std::min<int64_t>(row_bytes, 128); }  // of a row within one block
  int64_t block_bytes() const { return rows * line_bytes(); }
  int64_t chunks_per_line() const { return line_bytes() / 16; }
  // Where the line of `row` holding `col_byte` starts, before the swizzle.
  int64_t line_start(int64_t row, int64_t col_byte) const {
    return col_byte / line_bytes() * block_bytes() + row * line_bytes();
  }
  // The chunk permutation of the line starting at `line_start`: its 128-byte line's place.
  int64_t xor_mask(int64_t line_start) const { return (line_start >> 7) % chunks_per_line(); }
  static int64_t chunk(int64_t col_byte) { return col_byte >> 4; }
};

}  // namespace tilejit::codegen
