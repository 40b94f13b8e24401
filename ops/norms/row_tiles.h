// Internal to ops/norms: the DSL pieces every norm kernel is built from. A kernel sees x as a
// row-major (rows, hidden) matrix and works on (BLOCK_ROWS, BLOCK_H) tiles of it; row
// offsets are i64, so tensors past 2^31 elements work.
#pragma once

#include <vector>

#include "dsl/kernel.h"

namespace tilejit::ops {

// The constants of the row kernels with their defaults: RowTiling's (BLOCK_ROWS, BLOCK_H,
// WHOLE_ROW; num_warps is implicit) and ZERO_CENTERED.
std::vector<dsl::ConstantDecl> row_kernel_constants();

// Columns [first, first + block) of rows of `hidden` columns.
struct ColumnBlock {
  dsl::Tile cols;  // (BLOCK_H) i32
  dsl::Tile mask;  // (BLOCK_H) cols < hidden
};
ColumnBlock column_block(const dsl::Tile& first, int64_t block, const dsl::Tile& hidden);

// Rows [first, first + block) below `row_end` (an i64 scalar) of those columns.
struct RowBlock {
  ColumnBlock columns;
  dsl::Tile rows;      // (BLOCK_ROWS) i64
  dsl::Tile row_mask;  // (BLOCK_ROWS)
  dsl::Tile offsets;   // (BLOCK_ROWS, BLOCK_H) i64 element offsets
  dsl::Tile mask;      // (BLOCK_ROWS, BLOCK_H)
};
RowBlock row_block(const dsl::Tile& first, int64_t block, const dsl::Tile& row_end, const dsl::Tile& hidden,
                   const ColumnBlock& columns);

// The block of a (rows, hidden) matrix as f32 (BLOCK_ROWS, BLOCK_H), 0 outside.
dsl::Tile load_block(const dsl::Tile& matrix, const RowBlock& block);
// One value per row of a vector of rows (mean, rsigma) as f32 (BLOCK_ROWS, 1), 0 outside.
dsl::Tile load_per_row(const dsl::Tile& vector, const RowBlock& block);
// The columns of a (hidden) vector (gamma, beta) as f32 (1, BLOCK_H), 0 outside, plus
// `offset` inside (1 for a zero-centered gamma).
dsl::Tile load_per_column(const dsl::Tile& vector, const ColumnBlock& columns, double offset = 0);

}  // namespace tilejit::ops
