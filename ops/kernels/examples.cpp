#include "ops/kernels/examples.h"

#include <limits>

namespace tilejit::ops {

using namespace tilejit::dsl;

Kernel vector_add_kernel() {
  return define_kernel(
      "vector_add", {"x", "y", "out", "n"}, {{"BLOCK", 1024}},
      [](const Constants& c, Ptr<f32> x, Ptr<f32> y, Ptr<f32> out, Scalar<i32> n) {
        Tile offs = program_id(0) * c["BLOCK"] + arange(0, c["BLOCK"]);  // (BLOCK)
        Tile mask = offs < n;
        store(out + offs, load(x + offs, mask) + load(y + offs, mask), mask);
      });
}

Kernel softmax_kernel() {
  return define_kernel(
      "softmax", {"x", "out", "n_cols", "row_stride"}, {{"BLOCK_N", 1024}},
      [](const Constants& c, Ptr<f32> x, Ptr<f32> out, Scalar<i32> n_cols, Scalar<i32> row_stride) {
        Tile row = program_id(0);
        Tile cols = arange(0, c["BLOCK_N"]);  // (BLOCK_N)
        Tile mask = cols < n_cols;
        Tile v = load(x + row * row_stride + cols, mask, -std::numeric_limits<double>::infinity());
        Tile e = exp(v - max(v, 0));
        store(out + row * row_stride + cols, e / sum(e, 0), mask);
      });
}

Kernel layernorm_kernel() {
  return define_kernel(
      "layernorm", {"x", "gamma", "beta", "y", "mean", "rsigma", "n_cols", "row_stride", "eps"}, {{"BLOCK_N", 1024}},
      [](const Constants& c, Ptr<f32> x, Ptr<f32> gamma, Ptr<f32> beta, Ptr<f32> y, Ptr<f32> mean_out,
         Ptr<f32> rsigma_out, Scalar<i32> n_cols, Scalar<i32> row_stride, Scalar<f32> eps) {
        Tile row = program_id(0);
        Tile cols = arange(0, c["BLOCK_N"]);  // (BLOCK_N)
        Tile mask = cols < n_cols;
        Tile v = load(x + row * row_stride + cols, mask, 0.0);
        Tile n = cast(n_cols, DType::f32);
        Tile mean = sum(v, 0) / n;
        Tile centered = where(mask, v - mean, 0.0);
        Tile rsigma = rsqrt(sum(centered * centered, 0) / n + eps);
        Tile out = centered * rsigma * load(gamma + cols, mask) + load(beta + cols, mask);
        store(y + row * row_stride + cols, out, mask);
        store(mean_out + row, mean);
        store(rsigma_out + row, rsigma);
      });
}

Kernel gemm_kernel() {
  return define_kernel(
      "gemm", {"a", "b", "c", "M", "N", "K", "stride_am", "stride_bk", "stride_cm"},
      {{"BLOCK_M", 64}, {"BLOCK_N", 64}, {"BLOCK_K", 8}},
      [](const Constants& c, Ptr<f32> a, Ptr<f32> b, Ptr<f32> out, Scalar<i32> M, Scalar<i32> N, Scalar<i32> K,
         Scalar<i32> stride_am, Scalar<i32> stride_bk, Scalar<i32> stride_cm) {
        int64_t bm = c["BLOCK_M"], bn = c["BLOCK_N"], bk = c["BLOCK_K"];
        Tile rows = program_id(0) * bm + arange(0, bm);  // (BLOCK_M)
        Tile cols = program_id(1) * bn + arange(0, bn);  // (BLOCK_N)
        Tile ks = arange(0, bk);                         // (BLOCK_K)
        Tile a_ptrs = a + expand_dims(rows, 1) * stride_am + expand_dims(ks, 0);  // (BLOCK_M, BLOCK_K)
        Tile b_ptrs = b + expand_dims(ks, 1) * stride_bk + expand_dims(cols, 0);  // (BLOCK_K, BLOCK_N)
        Tile acc = for_range(0, K, bk, zeros({bm, bn}, DType::f32), [&](Tile k, Tile acc) {
          Tile a_mask = expand_dims(rows < M, 1) && expand_dims(ks + k < K, 0);
          Tile b_mask = expand_dims(ks + k < K, 1) && expand_dims(cols < N, 0);
          Tile a_tile = load(a_ptrs + k, a_mask, 0.0);               // (BLOCK_M, BLOCK_K)
          Tile b_tile = load(b_ptrs + k * stride_bk, b_mask, 0.0);   // (BLOCK_K, BLOCK_N)
          return dot(a_tile, b_tile, acc, Precision::ieee);          // (BLOCK_M, BLOCK_N)
        });
        Tile c_mask = expand_dims(rows < M, 1) && expand_dims(cols < N, 0);
        store(out + expand_dims(rows, 1) * stride_cm + expand_dims(cols, 0), acc, c_mask);
      });
}

Kernel argmax_kernel() {
  return define_kernel(
      "argmax", {"x", "out", "n_cols", "row_stride"}, {{"BLOCK_N", 1024}},
      [](const Constants& c, Ptr<f32> x, Ptr<i32> out, Scalar<i32> n_cols, Scalar<i32> row_stride) {
        Tile row = program_id(0);
        Tile cols = arange(0, c["BLOCK_N"]);  // (BLOCK_N)
        Tile v = load(x + row * row_stride + cols, cols < n_cols, -std::numeric_limits<double>::infinity());
        store(out + row, argmax(v, 0));
      });
}

}  // namespace tilejit::ops
