// The GEMM family: out = epilogue(op(A) · op(B)) on tensor cores, batched and strided.
//
//   GemmOptions o;
//   o.transpose_b = true;                       // B is (N, K)
//   o.bias = bias; o.activation = Activation::gelu_tanh;
//   Tensor y = gemm(x, w, o);                   // bf16[M, N] for bf16 x (M, K), w (N, K)
//
// Operands: A (M, K) and B (K, N), or (batch, M, K) / (batch, K, N); a rank-2 operand of a
// batched product is shared by every batch (numpy broadcasting of the batch dim), as is a
// batch dim of size 1. Any strides (elements; a stride of 1 along the contiguous dim gives
// full-width loads); transpose_a / transpose_b read A as (K, M) and B as (N, K) instead.
//
// dtypes (A, B -> accumulator):
//   f32 x f32          -> f32 (tf32 tensor cores by default; precision ieee or tf32x3)
//   f16 x f16, bf16 x bf16 -> f32
//   f8e4m3 / f8e5m2 in any pairing -> f32 (sm_89+; with per-tensor scale_inv tensors)
//   i8 x i8            -> i32
//
// The epilogue, in this order, on the f32 (or i32, kept exact when nothing below applies)
// accumulator:
//   acc *= a_scale_inv[0] * b_scale_inv[0]          (fp8 per-tensor scales, if given)
//   acc *= row_scale[m] * col_scale[n]              (if given)
//   acc  = alpha * acc + beta * C[m, n]             (C only when beta != 0)
//   acc += bias[n] (BiasAxis::column) or bias[m] (BiasAxis::row)
//   acc  = activation(acc)
//   acc += residual[m, n]
//   out  = cast(acc, out_dtype)                     (round to nearest even; fp8 saturates)
// C and residual have the output's shape (batched like it, or rank 2 and shared).
//
// Long K splits into `split_k` slices computed in parallel into an f32 workspace and summed
// in a fixed order by a second kernel that applies the epilogue (deterministic).
#pragma once

#include <optional>

#include "dsl/builder.h"
#include "runtime/device.h"
#include "runtime/tensor.h"

namespace tilejit::ops {

enum class Activation { none, relu, gelu_tanh, gelu_erf, silu };
const char* activation_name(Activation activation);

enum class BiasAxis { column, row };  // bias[n] (shape (N)) or bias[m] (shape (M))

struct GemmOptions {
  bool transpose_a = false;  // A is (K, M) (or (batch, K, M))
  bool transpose_b = false;  // B is (N, K) (or (batch, N, K))
  float alpha = 1;
  float beta = 0;
  std::optional<Tensor> c;  // read when beta != 0
  std::optional<Tensor> bias;
  BiasAxis bias_axis = BiasAxis::column;
  Activation activation = Activation::none;
  std::optional<Tensor> row_scale;  // (M), f32
  std::optional<Tensor> col_scale;  // (N), f32
  std::optional<Tensor> residual;
  std::optional<Tensor> a_scale_inv;  // f32 [1]: fp8 operands only
  std::optional<Tensor> b_scale_inv;
  // fp8 operands only. false (the default): each K block's product (at most four tensor-core
  // instructions) is added into an f32 accumulator, as SEMANTICS.md's fp8 GEMM asks. true: the
  // whole K loop chains into the tensor cores' own sum, which cuts each product to 13 fraction
  // bits of the running sum, so the error grows with K; faster, with half the accumulator registers
  // (Transformer Engine's use_split_accumulator = false, cuBLASLt's FAST_ACCUM).
  bool fp8_fast_accumulation = false;
  // The output dtype; unset: A's dtype for f32 / f16 / bf16, bf16 for fp8, i32 for i8.
  std::optional<DType> out_dtype;
  dsl::Precision precision = dsl::Precision::tf32;  // f32 operands only
  int split_k = 0;  // slices of K; 0: the config's choice (tuned or heuristic)
};

// The output dtype of operands of dtype `a` under `options`.
DType gemm_out_dtype(DType a, const GemmOptions& options);

// A new output: (M, N), or (batch, M, N) when either operand is batched.
Tensor gemm(const Tensor& a, const Tensor& b, const GemmOptions& options = {}, Stream* stream = nullptr);
// The same into `out`, of any strides. out must not overlap itself, a, b, the bias or the
// scales (ops/common/memory_overlap.h: column blocks of one matrix are apart; layouts it
// cannot tell apart are refused); C and the residual may be out itself (the same data,
// strides and element size).
void gemm(const Tensor& a, const Tensor& b, const Tensor& out, const GemmOptions& options = {},
          Stream* stream = nullptr);

// numpy's matmul over gemm: operands of rank >= 1 (1-D ones as numpy treats them), batch dims
// broadcast as numpy broadcasts them; the options apply to every product (c and residual
// are not broadcast: an error).
Tensor matmul(const Tensor& a, const Tensor& b, const GemmOptions& options = {}, Stream* stream = nullptr);

}  // namespace tilejit::ops
