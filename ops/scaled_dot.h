// Block-scaled matrix products with jax.lax.scaled_dot's semantics, and the MX quantizer that
// makes their operands (SEMANTICS.md, "scaled_dot" and "MX quantization helper"):
//
//   MxQuantized a = mx_quantize(x);   // x f32[M, K]   -> data f8e4m3[M, K], scales e8m0[M, K/32]
//   MxQuantized b = mx_quantize(w);   // w f32[N, K]   -> data f8e4m3[N, K], scales e8m0[N, K/32]
//   ScaledDotOptions options;
//   options.dimension_numbers = DotDimensionNumbers{{1}, {1}, {}, {}};   // contract K with K
//   Tensor y = scaled_dot(a.data, b.data, a.scales, b.scales, options);  // bf16[M, N]
//
// The scales are applied inside the product's kernel; no dequantized operand is ever written to
// memory. How (ops/scaled_dot/kernel.h): when every scale block is a whole number of the kernel's
// K tiles, each block's f32 partial product is multiplied by lhs_scale[m] * rhs_scale[n], and fp8
// operands meet on fp8 tensor cores (sm_89+); otherwise each operand tile is scaled in
// registers before the product (in bf16 for fp8 / bf16 operands, in f32 otherwise). Any
// dimension numbers become one (batch, M, K) x (batch, K, N) problem through strides; an operand
// whose dims of one role do not nest in memory is copied once into that order (its stored values
// or scales, never dequantized ones), and a scale blocked along several contracting dims is
// repeated along all but the last blocked one (ops/scaled_dot/grouped_view.h, scaled_dot.cpp).
//
// Numerics: products accumulate in f32 (fp8 x fp8 on the tensor cores: each K block's product,
// summed there in their own narrower way, added into f32; ops/common/f32_dot.h)
// and are rounded once to the output type. JAX multiplies
// each operand by its scale in bf16 before the product; with e8m0 scales and fp8 or bf16 operands
// that product is exact while it stays in bf16's normal range (>= 2^-126), so the results agree
// within the accumulation's rounding. Scales applied to partial products keep operand * scale
// exact for every scale dtype; scales applied in registers round it to bf16 for fp8 / bf16
// operands as JAX does, which matters for bf16 scales and for products below 2^-126 (e8m0's 0x00
// is 2^-127), where bf16 keeps multiples of 2^-133 only; f16 / f32 operands stay in f32. f16 and f32 operands keep their precision
// (f32 through three tf32 products, about 2^-22 relative per product), where JAX's bf16 step
// rounds them to 8 significant bits.
#pragma once

#include <optional>
#include <vector>

#include "runtime/device.h"
#include "runtime/tensor.h"

namespace tilejit::ops {

// ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)) as jax.lax.dot_general takes
// them: lhs_contracting[i] contracts with rhs_contracting[i], lhs_batch[i] pairs with
// rhs_batch[i]. Negative dims count from the end.
struct DotDimensionNumbers {
  std::vector<int> lhs_contracting, rhs_contracting;
  std::vector<int> lhs_batch, rhs_batch;
};

struct ScaledDotOptions {
  // Unset: jax's default for operands of rank n >= 2 (contract lhs dim n-1 with rhs dim n-2;
  // dims 0 to n-3 are batch dims on both sides). Operands of rank 0 or 1 must set it.
  std::optional<DotDimensionNumbers> dimension_numbers;
  DType preferred_element_type = DType::bf16;  // the result's dtype: bf16 or f32
};

// dot_general(lhs * expand(lhs_scale), rhs * expand(rhs_scale)) with the result's dims in the
// order batch dims, lhs's free dims, rhs's free dims. Operands: f8e4m3, f8e5m2, bf16, f16 or
// f32 (lhs and rhs may differ), any strides. Scales: e8m0 or bf16, of their operand's rank;
// along a contracting dim the operand's size must be a multiple (>= 2, the block size) of the
// scale's, each scale element covering that many consecutive elements; along every other dim
// the sizes are equal (an empty contracting dim takes an empty scale dim; the sums are then
// empty: zeros). A missing scale is all ones. Throws tilejit::Error naming the dims for
// any violation, before any device work.
Tensor scaled_dot(const Tensor& lhs, const Tensor& rhs, const std::optional<Tensor>& lhs_scale = std::nullopt,
                  const std::optional<Tensor>& rhs_scale = std::nullopt, const ScaledDotOptions& options = {},
                  Stream* stream = nullptr);

struct MxQuantized {
  Tensor data;    // f8e4m3, x's shape
  Tensor scales;  // e8m0, x's shape with the last dim divided by 32
};

// MX (mxfp8) quantization of x (f32, bf16 or f16, contiguous, rank >= 1) in blocks of 32
// consecutive elements along its last dim, which must be a multiple of 32. Each block's scale
// byte is amax / 448 rounded up to a power of two on its f32 bits (SEMANTICS.md's rule; amax 0
// gives byte 0), and data = clip(x / scale, -448, 448) rounded to nearest even, where byte 0
// decodes as 2^-127. A block holding an inf or NaN gets the NaN scale 0xff and NaN data.
MxQuantized mx_quantize(const Tensor& x, Stream* stream = nullptr);

}  // namespace tilejit::ops
