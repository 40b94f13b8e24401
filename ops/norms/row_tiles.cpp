// Tiles of a (rows, hidden) matrix and of its per-row and per-column vectors (row_tiles.h).
#include "ops/norms/row_tiles.h"

namespace tilejit::ops {

using namespace tilejit::dsl;

std::vector<ConstantDecl> row_kernel_constants() {
  return {{"BLOCK_ROWS", 1}, {"BLOCK_H", 1024}, {"WHOLE_ROW", 1}, {"ZERO_CENTERED", 0}};
}

ColumnBlock column_block(const Tile& first, int64_t block, const Tile& hidden) {
  Tile cols = first + arange(0, block);
  return {cols, cols < hidden};
}

RowBlock row_block(const Tile& first, int64_t block, const Tile& row_end, const Tile& hidden,
                   const ColumnBlock& columns) {
  Tile rows = first + cast(arange(0, block), DType::i64);  // (BLOCK_ROWS)
  Tile row_mask = rows < row_end;
  Tile offsets = expand_dims(rows * cast(hidden, DType::i64), 1) + expand_dims(cast(columns.cols, DType::i64), 0);
  return {columns, rows, row_mask, offsets, expand_dims(row_mask, 1) && expand_dims(columns.mask, 0)};
}

Tile load_block(const Tile& matrix, const RowBlock& block) {
  return cast(load(matrix + block.offsets, block.mask), DType::f32);
}

Tile load_per_row(const Tile& vector, const RowBlock& block) {
  return expand_dims(cast(load(vector + block.rows, block.row_mask), DType::f32), 1);
}

Tile load_per_column(const Tile& vector, const ColumnBlock& columns, double offset) {
  Tile v = cast(load(vector + columns.cols, columns.mask), DType::f32);
  if (offset != 0) v = where(columns.mask, v + offset, 0.0);
  return expand_dims(v, 0);
}

}  // namespace tilejit::ops
