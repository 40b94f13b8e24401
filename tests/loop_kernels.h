// Kernels whose loops cross layout and shared-memory boundaries, for the tests of how the
// lowering handles them (PTX in tests/codegen, numerics in tests/emu).
#pragma once

#include <limits>

#include "dsl/kernel.h"

namespace tilejit::testing_kernels {

// For each of BLOCK_M query rows, the running max m and sum l of exp(q . k - m) over all S
// keys, BLOCK_N keys per iteration (S a multiple of BLOCK_N): an online softmax, which
// carries row statistics of a dot's result. q is (BLOCK_M, HEAD), k (S, HEAD), row-major.
inline dsl::Kernel online_softmax_kernel() {
  using namespace tilejit::dsl;
  return define_kernel(
      "online_softmax_rows", {"q", "k", "m_out", "l_out", "S"}, {{"BLOCK_M", 64}, {"BLOCK_N", 16}, {"HEAD", 32}},
      [](const Constants& c, Ptr<bf16> q, Ptr<bf16> k, Ptr<f32> m_out, Ptr<f32> l_out, Scalar<i32> S) {
        int64_t bm = c["BLOCK_M"], bn = c["BLOCK_N"], h = c["HEAD"];
        Tile rows = arange(0, bm), cols = arange(0, h);
        Tile q_tile = load(q + expand_dims(rows, 1) * h + expand_dims(cols, 0));  // (BLOCK_M, HEAD)
        std::vector<Tile> init = {full({bm}, -std::numeric_limits<double>::infinity(), DType::f32),
                                  zeros({bm}, DType::f32)};
        std::vector<Tile> r = for_range(0, S, bn, init, [&](Tile first, std::vector<Tile> carried) {
          Tile keys = first + arange(0, bn);
          Tile k_tile = load(k + expand_dims(keys, 1) * h + expand_dims(cols, 0));  // (BLOCK_N, HEAD)
          Tile logits = dot(q_tile, trans(k_tile), zeros({bm, bn}, DType::f32));   // (BLOCK_M, BLOCK_N)
          Tile m = maximum(carried[0], max(logits, 1));
          Tile p = exp(logits - expand_dims(m, 1));
          Tile l = carried[1] * exp(carried[0] - m) + sum(p, 1);
          return std::vector<Tile>{m, l};
        });
        store(m_out + rows, r[0]);
        store(l_out + rows, r[1]);
      });
}

// out (BLOCK_M, N) = sum over the K / BLOCK_K column blocks x_i of x (BLOCK_M, K) of
// x_i . w^T, with one w (N, BLOCK_K) loaded before the loop: a dot operand that every
// iteration reads, given transposed (K a multiple of BLOCK_K; row-major).
inline dsl::Kernel invariant_weight_kernel() {
  using namespace tilejit::dsl;
  return define_kernel(
      "invariant_weight", {"x", "w", "out", "K"}, {{"BLOCK_M", 64}, {"N", 16}, {"BLOCK_K", 32}},
      [](const Constants& c, Ptr<bf16> x, Ptr<bf16> w, Ptr<f32> out, Scalar<i32> K) {
        int64_t bm = c["BLOCK_M"], n = c["N"], bk = c["BLOCK_K"];
        Tile rows = arange(0, bm), cols = arange(0, n), ks = arange(0, bk);
        Tile w_tile = load(w + expand_dims(cols, 1) * bk + expand_dims(ks, 0));  // (N, BLOCK_K)
        Tile acc = for_range(0, K, bk, zeros({bm, n}, DType::f32), [&](Tile k, Tile acc) {
          Tile x_tile = load(x + expand_dims(rows, 1) * K + expand_dims(ks + k, 0));  // (BLOCK_M, BLOCK_K)
          return dot(x_tile, trans(w_tile), acc);
        });
        store(out + expand_dims(rows, 1) * n + expand_dims(cols, 0), acc);
      });
}

}  // namespace tilejit::testing_kernels
