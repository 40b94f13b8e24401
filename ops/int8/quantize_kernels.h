// The int8 quantization kernels of ops/int8.h: quant_int8 elementwise, and the fused per-row
// quantization (row or column maxima, scales and quantized lines in one launch).
#pragma once

#include "dsl/kernel.h"

namespace tilejit::ops::int8_detail {

// clip(round_half_to_even(x), -127, 127) as i8, in the dtype's arithmetic; `x` a tile of
// any float dtype.
dsl::Tile quantize_to_int8(const dsl::Tile& x);

// x (N) of `dtype` -> q (N) i8. Constants: BLOCK.
dsl::Kernel quant_int8_kernel(DType dtype);

// x (R, C) of `dtype` with strides (x_row_stride, x_col_stride), quantized per row, or with
// `columns` per column: q (R, C) and inv_scale (R), or q (C, R) and inv_scale (C); q i8 row-major,
// inv_scale f32. Each program owns BLOCK_R rows (BLOCK_C columns) and steps along them in tiles
// of (BLOCK_R, BLOCK_C): a per-column program reads x's rows where they are contiguous.
dsl::Kernel quantize_lines_kernel(DType dtype, bool columns);

}  // namespace tilejit::ops::int8_detail
