// The int8 quantization kernels of ops/int8.h: quant_int8 elementwise, and the fused per-row
// quantization (row maxima, scales and quantized rows in one launch).
#pragma once

#include "dsl/kernel.h"

namespace tilejit::ops::int8_detail {

// clip(round_half_to_even(x), -127, 127) as i8, in the dtype's arithmetic; `x` a tile of
// any float dtype.
dsl::Tile quantize_to_int8(const dsl::Tile& x);

// x (N) of `dtype` -> q (N) i8. Constants: BLOCK.
dsl::Kernel quant_int8_kernel(DType dtype);

// x (R, C) of `dtype` with strides (x_row_stride, x_col_stride) -> q (R, C) i8 row-major and
// inv_scale (R) f32. Constants: BLOCK_R, BLOCK_C.
dsl::Kernel quantize_rows_kernel(DType dtype);

}  // namespace tilejit::ops::int8_detail
