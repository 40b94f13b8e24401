// A (batch, rows, cols) matrix handed to a gemm kernel: its pointer NAME and its strides
// NAME_batch_stride (i64: batches may lie far apart), NAME_row_stride and NAME_col_stride
// (i32: one batch is indexed in 32 bits). A stride of 1 is specialized at compile time, so
// the contiguous dim gets full-width loads.
#pragma once

#include <string>

#include "dsl/tile.h"
#include "ops/common/named_arguments.h"
#include "ops/gemm/gemm_problem.h"

namespace tilejit::ops::gemm_detail {

void add_matrix_argument(NamedArguments& args, const std::string& name, const Tensor& t, const MatrixStrides& s);

// The pointers of the elements (rows, cols) of batch `batch` (an i64 scalar): rows (R) and
// cols (C) give an (R, C) tile.
dsl::Tile matrix_pointers(const NamedTiles& in, const std::string& name, const dsl::Tile& batch,
                          const dsl::Tile& rows, const dsl::Tile& cols);
// The same elements as a (C, R) tile: the pointers of the transposed view.
dsl::Tile transposed_matrix_pointers(const NamedTiles& in, const std::string& name, const dsl::Tile& batch,
                                     const dsl::Tile& rows, const dsl::Tile& cols);

}  // namespace tilejit::ops::gemm_detail
