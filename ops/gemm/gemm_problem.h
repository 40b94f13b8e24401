// A gemm call checked and normalized: every operand as a (batch, rows, cols) view given by
// strides (a batch stride of 0 shares a rank-2 operand across the batch), the problem sizes,
// and the features the kernel's code depends on. Everything a call can get wrong is found
// here, before any device work.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ops/gemm.h"

namespace tilejit::ops::gemm_detail {

// Element strides of a (batch, rows, cols) view.
struct MatrixStrides {
  int64_t batch = 0, row = 0, col = 0;
};

// What the kernel's code depends on besides its constants: one compiled kernel per value.
struct GemmFeatures {
  DType a = DType::f32, b = DType::f32, out = DType::f32;
  dsl::Precision precision = dsl::Precision::tf32;
  bool fp8_scales = false;   // a_scale_inv, b_scale_inv
  bool fast_accumulation = false;  // fp8_fast_accumulation
  bool row_scale = false, col_scale = false;
  bool alpha = false;        // alpha != 1
  bool c = false;            // beta != 0
  std::optional<BiasAxis> bias;
  Activation activation = Activation::none;
  bool residual = false;

  DType accumulator() const { return a == DType::i8 ? DType::i32 : DType::f32; }
  // The accumulator tiles the K loop holds at once (ops/common/f32_dot.h).
  int accumulator_tiles() const;
  // Whether the epilogue leaves an integer accumulator exact (i8 -> i32 with nothing to apply).
  bool integer_epilogue() const;
  std::string key() const;  // names every field
};

struct GemmProblem {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool batched = false;  // the output has a batch dim
  std::vector<int64_t> out_shape;
  const Tensor* a = nullptr;  // the caller's operands and options, alive for the call
  const Tensor* b = nullptr;
  const GemmOptions* options = nullptr;
  std::optional<Tensor> out;  // set by set_output
  MatrixStrides a_strides, b_strides, out_strides;  // A as (M, K), B as (K, N), out as (M, N)
  std::optional<Tensor> c, residual;
  MatrixStrides c_strides, residual_strides;
  GemmFeatures features;
};

// The output's shape for operands a and b (checked as by check_gemm).
std::vector<int64_t> gemm_out_shape(const Tensor& a, const Tensor& b, const GemmOptions& options);
// Checks everything (throws tilejit::Error starting "gemm: ") and normalizes; the output
// too when given, else it is set (and checked) later with set_output.
GemmProblem check_gemm(const Tensor& a, const Tensor& b, const GemmOptions& options, const Tensor* out);
void set_output(GemmProblem& p, const Tensor& out);

}  // namespace tilejit::ops::gemm_detail
