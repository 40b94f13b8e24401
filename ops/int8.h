// Int8 quantized matrix products as FJFormer's bits module defines them (SEMANTICS.md, "Int8
// quantized matrix product"):
//
//   quant_int8(x)          = clip(round_half_to_even(x), -127, 127) as i8 (never -128; NaN is 0,
//                            as XLA converts it)
//   matmul_true_int8(a, b) = the exact i32 product of i8 operands (from K = 133,145 on, sums of
//                            127 * 127 can pass 2^31 and wrap, as XLA's i32 dot does)
//   q_matmul_int8(a, w)    = i32_matmul(quant_int8(a * a_s), quant_int8(w * w_s)) / (a_s * w_s)
//                            with a_s = 127 / max|a| per row, w_s = 127 / max|w| per column
//
// q_matmul_int8 runs as two fused quantization kernels (each computes its row / column
// maxima and quantizes in one launch) and one i8 tensor-core GEMM whose epilogue
// dequantizes and casts. The scales and the scaled values are computed in the inputs' float
// type, as the reference does. Where the reference divides by zero (an all-zero row of a or
// column of w, giving NaN), the result's row / column is 0 instead. A row of a or column of w
// that holds a NaN or an infinity gives a NaN row / column, as the reference's does, also
// where it meets an all-zero column / row. The division is a multiplication by the scales'
// f32 reciprocals, rounded once to the output type: within a few ulps of the reference. For
// f16 it stays finite where the reference overflows: where its i32 sums, rounded to f16 first,
// pass 65504 (inf), and where a_s * w_s does (max|a row| * max|w column| below
// 127^2 / 65504 = 0.246, which makes the reference's result 0). K = 0 is an error, as the
// reference's maxima over no elements are.
#pragma once

#include "runtime/device.h"
#include "runtime/tensor.h"

namespace tilejit::ops {

// x: f32, f16 or bf16, any shape; returns i8 of x's shape.
Tensor quant_int8(const Tensor& x, Stream* stream = nullptr);

// a (..., M, K) and b (..., K, N), both i8, with numpy's batch broadcasting (matmul); i32 out.
Tensor matmul_true_int8(const Tensor& a, const Tensor& b, Stream* stream = nullptr);

// a (M, K) and w (K, N), one float dtype (f32, f16 or bf16); the result (M, N) in that dtype.
Tensor q_matmul_int8(const Tensor& a, const Tensor& w, Stream* stream = nullptr);
// The same into `out` ((M, N), a's dtype, any strides).
void q_matmul_int8(const Tensor& a, const Tensor& w, const Tensor& out, Stream* stream = nullptr);

// The per-row quantization q_matmul_int8 applies to its left operand: for x (R, C) (any
// strides), q = quant_int8(x * s) with s = 127 / max|x| per row, and inv_scale = 1 / s (f32, (R)),
// both 0 for an all-zero row; a row holding a NaN or an infinity has s = 0 and inv_scale = inf
// (its products are 0 * inf = NaN). Columns of w are rows of w's transposed view.
struct RowQuantized {
  Tensor q;          // i8 (R, C), row-major
  Tensor inv_scale;  // f32 (R)
};
RowQuantized quantize_rows_int8(const Tensor& x, Stream* stream = nullptr);

}  // namespace tilejit::ops
