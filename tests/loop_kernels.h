// Kernels whose tiles cross layout and shared-memory boundaries (most of them at loops), for
// the tests of how the lowering handles them (PTX in tests/codegen, numerics in tests/emu).
#pragma once

#include <functional>
#include <limits>
#include <vector>

#include "dsl/kernel.h"

namespace tilejit::testing_kernels {

// The running max m and sum l of exp(logit - m) of BLOCK_M rows over S keys, BLOCK_N keys per
// iteration (S a multiple of BLOCK_N): `logits(keys)` gives the (BLOCK_M, BLOCK_N) logits of
// the keys `keys` (BLOCK_N). With `shifted_rescale`, l's factor is exp2(m_before * log2(e) -
// m * log2(e)) instead of exp(m_before - m): its first operand comes from the carried max alone.
inline std::vector<dsl::Tile> online_softmax(int64_t bm, int64_t bn, const dsl::Tile& S,
                                             const std::function<dsl::Tile(const dsl::Tile&)>& logits_of,
                                             bool shifted_rescale = false) {
  using namespace tilejit::dsl;
  std::vector<Tile> init = {full({bm}, -std::numeric_limits<double>::infinity(), DType::f32), zeros({bm}, DType::f32)};
  return for_range(0, S, bn, init, [&](Tile first, std::vector<Tile> carried) {
    Tile logits = logits_of(first + arange(0, bn));
    Tile m = maximum(carried[0], max(logits, 1));
    Tile p = exp(logits - expand_dims(m, 1));
    constexpr double kLog2e = 1.4426950408889634;
    Tile rescale = shifted_rescale ? exp2(carried[0] * kLog2e - m * kLog2e) : exp(carried[0] - m);
    Tile l = carried[1] * rescale + sum(p, 1);
    return std::vector<Tile>{m, l};
  });
}

// For each of BLOCK_M query rows, the running max m and sum l of exp(q . k - m) over all S
// keys, BLOCK_N keys per iteration (S a multiple of BLOCK_N): an online softmax, which
// carries row statistics of a dot's result. q is (BLOCK_M, HEAD), k (S, HEAD), row-major.
// `shifted_rescale` as online_softmax's.
inline dsl::Kernel online_softmax_kernel(bool shifted_rescale = false) {
  using namespace tilejit::dsl;
  return define_kernel(
      "online_softmax_rows", {"q", "k", "m_out", "l_out", "S"}, {{"BLOCK_M", 64}, {"BLOCK_N", 16}, {"HEAD", 32}},
      [shifted_rescale](const Constants& c, Ptr<bf16> q, Ptr<bf16> k, Ptr<f32> m_out, Ptr<f32> l_out,
                        Scalar<i32> S) {
        int64_t bm = c["BLOCK_M"], bn = c["BLOCK_N"], h = c["HEAD"];
        Tile rows = arange(0, bm), cols = arange(0, h);
        Tile q_tile = load(q + expand_dims(rows, 1) * h + expand_dims(cols, 0));  // (BLOCK_M, HEAD)
        std::vector<Tile> r = online_softmax(bm, bn, S, [&](const Tile& keys) {
          Tile k_tile = load(k + expand_dims(keys, 1) * h + expand_dims(cols, 0));  // (BLOCK_N, HEAD)
          return dot(q_tile, trans(k_tile), zeros({bm, bn}, DType::f32));          // (BLOCK_M, BLOCK_N)
        }, shifted_rescale);
        store(m_out + rows, r[0]);
        store(l_out + rows, r[1]);
      });
}

// online_softmax_kernel over the logits where(mask, q . k + bias, -10) - offset: bias (f32)
// and mask (bool) are (BLOCK_M, S) row-major tiles loaded each iteration, offset (f32) one
// value per row loaded before the loop, as an attention kernel's bias, mask and row
// statistics are.
inline dsl::Kernel biased_softmax_kernel() {
  using namespace tilejit::dsl;
  return define_kernel(
      "biased_softmax_rows", {"q", "k", "bias", "mask", "offset", "m_out", "l_out", "S"},
      {{"BLOCK_M", 64}, {"BLOCK_N", 16}, {"HEAD", 32}},
      [](const Constants& c, Ptr<bf16> q, Ptr<bf16> k, Ptr<f32> bias, Ptr<i1> mask, Ptr<f32> offset,
         Ptr<f32> m_out, Ptr<f32> l_out, Scalar<i32> S) {
        int64_t bm = c["BLOCK_M"], bn = c["BLOCK_N"], h = c["HEAD"];
        Tile rows = arange(0, bm), cols = arange(0, h);
        Tile q_tile = load(q + expand_dims(rows, 1) * h + expand_dims(cols, 0));  // (BLOCK_M, HEAD)
        Tile row_offset = expand_dims(load(offset + rows), 1);                      // (BLOCK_M, 1)
        std::vector<Tile> r = online_softmax(bm, bn, S, [&](const Tile& keys) {
          Tile k_tile = load(k + expand_dims(keys, 1) * h + expand_dims(cols, 0));  // (BLOCK_N, HEAD)
          Tile at = expand_dims(rows, 1) * S + expand_dims(keys, 0);                 // (BLOCK_M, BLOCK_N)
          Tile qk = dot(q_tile, trans(k_tile), zeros({bm, bn}, DType::f32));
          return where(load(mask + at), qk + load(bias + at), -10.0) - row_offset;
        });
        store(m_out + rows, r[0]);
        store(l_out + rows, r[1]);
      });
}

// out (BLOCK_M, N) = sum over the K / BLOCK_K column blocks x_i of x (BLOCK_M, K) of
// x_i . w^T, with one w (N, BLOCK_K) loaded before the loop: a dot operand that every
// iteration reads, given transposed (K a multiple of BLOCK_K; row-major). With `two_passes`
// the loop runs in two passes of an outer loop, each over half the column blocks (K a
// multiple of 2 BLOCK_K), which carries the inner loop's accumulator.
inline dsl::Kernel invariant_weight_kernel(bool two_passes = false) {
  using namespace tilejit::dsl;
  return define_kernel(
      two_passes ? "two_pass_weight" : "invariant_weight", {"x", "w", "out", "K"},
      {{"BLOCK_M", 64}, {"N", 16}, {"BLOCK_K", 32}},
      [two_passes](const Constants& c, Ptr<bf16> x, Ptr<bf16> w, Ptr<f32> out, Scalar<i32> K) {
        int64_t bm = c["BLOCK_M"], n = c["N"], bk = c["BLOCK_K"];
        Tile rows = arange(0, bm), cols = arange(0, n), ks = arange(0, bk);
        Tile w_tile = load(w + expand_dims(cols, 1) * bk + expand_dims(ks, 0));  // (N, BLOCK_K)
        auto column_blocks = [&](const auto& first, const auto& end, const Tile& init) {
          return for_range(first, end, bk, init, [&](Tile k, Tile acc) {
            Tile x_tile = load(x + expand_dims(rows, 1) * K + expand_dims(ks + k, 0));  // (BLOCK_M, BLOCK_K)
            return dot(x_tile, trans(w_tile), acc);
          });
        };
        Tile acc = zeros({bm, n}, DType::f32);
        if (two_passes) {
          // The passes start at 0 and K / 2: a trip count LLVM cannot tell, so the outer loop
          // stays a loop.
          Tile half = K / 2;
          acc = for_range(0, K, half, acc,
                          [&](Tile first, Tile outer) { return column_blocks(first, first + half, outer); });
        } else {
          acc = column_blocks(0, K, acc);
        }
        store(out + expand_dims(rows, 1) * n + expand_dims(cols, 0), acc);
      });
}

// out (BLOCK_M) = the row max of x . w^T + an addend computed from y and z, both (BLOCK_M, N)
// f32 tiles loaded by pointers, and tiles in the blocked layout meeting a product in the tensor
// cores' layout: y's row sums (a row statistic reduced from a tile only a reduction reads,
// broadcast over the product), or with `two_tiles` y + z (two loads that meet each other before
// they meet the product). x is (BLOCK_M, K), w (N, K), row-major.
inline dsl::Kernel tiles_plus_product_kernel(bool two_tiles) {
  using namespace tilejit::dsl;
  return define_kernel(
      two_tiles ? "two_tiles_plus_product" : "row_sum_plus_product", {"x", "w", "y", "z", "out"},
      {{"BLOCK_M", 64}, {"N", 128}, {"K", 16}},
      [two_tiles](const Constants& c, Ptr<bf16> x, Ptr<bf16> w, Ptr<f32> y, Ptr<f32> z, Ptr<f32> out) {
        int64_t bm = c["BLOCK_M"], n = c["N"], k = c["K"];
        Tile rows = arange(0, bm), cols = arange(0, n), ks = arange(0, k);
        Tile x_tile = load(x + expand_dims(rows, 1) * k + expand_dims(ks, 0));  // (BLOCK_M, K)
        Tile w_tile = load(w + expand_dims(cols, 1) * k + expand_dims(ks, 0));  // (N, K)
        Tile at = expand_dims(rows, 1) * n + expand_dims(cols, 0);              // (BLOCK_M, N)
        Tile addend = two_tiles ? load(y + at) + load(z + at) : expand_dims(sum(load(y + at), 1), 1);
        Tile product = dot(x_tile, trans(w_tile), zeros({bm, n}, DType::f32));  // (BLOCK_M, N)
        store(out + rows, max(product + addend, 1));
      });
}

// dot(x, w^T) times a row scale and a column scale (scaled_dot's factor): out = (BLOCK_M, N).
// With `product_first` the factor is formed by the product, else the scales' product is one
// (BLOCK_M, N) tile of two broadcasts multiplying it.
inline dsl::Kernel scaled_product_kernel(bool product_first) {
  using namespace tilejit::dsl;
  return define_kernel(
      product_first ? "product_times_scales" : "product_times_factor", {"x", "w", "rs", "cs", "out"},
      {{"BLOCK_M", 64}, {"N", 128}, {"K", 16}},
      [product_first](const Constants& c, Ptr<bf16> x, Ptr<bf16> w, Ptr<f32> rs, Ptr<f32> cs, Ptr<f32> out) {
        int64_t bm = c["BLOCK_M"], n = c["N"], k = c["K"];
        Tile rows = arange(0, bm), cols = arange(0, n), ks = arange(0, k);
        Tile x_tile = load(x + expand_dims(rows, 1) * k + expand_dims(ks, 0));  // (BLOCK_M, K)
        Tile w_tile = load(w + expand_dims(cols, 1) * k + expand_dims(ks, 0));  // (N, K)
        Tile product = dot(x_tile, trans(w_tile), zeros({bm, n}, DType::f32));  // (BLOCK_M, N)
        Tile row_scale = expand_dims(load(rs + rows), 1), col_scale = expand_dims(load(cs + cols), 0);
        Tile scaled = product_first ? product * row_scale * col_scale : product * (row_scale * col_scale);
        store(out + expand_dims(rows, 1) * n + expand_dims(cols, 0), scaled);
      });
}

// dot(x, w^T), doubled in program 0 by one branch of an if / else and stored: with
// `branch` false, stored doubled without the if / else.
inline dsl::Kernel branch_on_product_kernel(bool branch) {
  using namespace tilejit::dsl;
  return define_kernel(
      branch ? "product_through_a_branch" : "product_doubled", {"x", "w", "out"},
      {{"BLOCK_M", 64}, {"N", 128}, {"K", 16}}, [branch](const Constants& c, Ptr<bf16> x, Ptr<bf16> w, Ptr<f32> out) {
        int64_t bm = c["BLOCK_M"], n = c["N"], k = c["K"];
        Tile rows = arange(0, bm), cols = arange(0, n), ks = arange(0, k);
        Tile x_tile = load(x + expand_dims(rows, 1) * k + expand_dims(ks, 0));  // (BLOCK_M, K)
        Tile w_tile = load(w + expand_dims(cols, 1) * k + expand_dims(ks, 0));  // (N, K)
        Tile product = dot(x_tile, trans(w_tile), zeros({bm, n}, DType::f32));  // (BLOCK_M, N)
        Tile result = branch ? if_else(
                                   program_id(0) == 0, [&]() -> std::vector<Tile> { return {product * 2.0}; },
                                   [&]() -> std::vector<Tile> { return {product}; })[0]
                             : product * 2.0;
        store(out + expand_dims(rows, 1) * n + expand_dims(cols, 0), result);
      });
}

// dot(x, w^T) times a power of two per column, 2^(bytes[column] - 127), decoded from the byte
// by integer operations (bytes 1 to 254); with `once`, the decoded scales are computed once per
// element (once_per_element) before they are broadcast over the product.
inline dsl::Kernel column_scaled_product_kernel(bool once) {
  using namespace tilejit::dsl;
  return define_kernel(
      once ? "product_times_scales_decoded_once" : "product_times_scales_decoded_in_place", {"x", "w", "bytes", "out"},
      {{"BLOCK_M", 64}, {"N", 128}, {"K", 16}}, [once](const Constants& c, Ptr<bf16> x, Ptr<bf16> w, Ptr<i8> bytes, Ptr<f32> out) {
        int64_t bm = c["BLOCK_M"], n = c["N"], k = c["K"];
        Tile rows = arange(0, bm), cols = arange(0, n), ks = arange(0, k);
        Tile x_tile = load(x + expand_dims(rows, 1) * k + expand_dims(ks, 0));  // (BLOCK_M, K)
        Tile w_tile = load(w + expand_dims(cols, 1) * k + expand_dims(ks, 0));  // (N, K)
        Tile product = dot(x_tile, trans(w_tile), zeros({bm, n}, DType::f32));  // (BLOCK_M, N)
        Tile scale = bitcast((cast(load(bytes + cols), DType::i32) & 255) << 23, DType::f32);  // (N)
        store(out + expand_dims(rows, 1) * n + expand_dims(cols, 0),
              product * expand_dims(once ? once_per_element(scale) : scale, 0));
      });
}

// 2^(byte - 127) as bf16 for bytes 1 to 254, 0 for byte 0.
inline dsl::Tile powers_of_two(const dsl::Tile& bytes) {
  using namespace tilejit::dsl;
  return cast(bitcast((cast(bytes, DType::i32) & 255) << 23, DType::f32), DType::bf16);
}

// The operands of an outer product by the tensor cores, loaded from `rows` bytes at row_bytes
// and `cols` bytes at col_bytes: the rows' bytes in column 0 of a (rows, 16) tile, the columns'
// in row 0 of a (16, cols) one, zeros elsewhere (masked-off loads read byte 0), none where
// `present` is false.
inline std::vector<dsl::Tile> rank_one_operands(const dsl::Tile& row_bytes, const dsl::Tile& col_bytes, int64_t rows,
                                                int64_t cols, const dsl::Tile& present) {
  using namespace tilejit::dsl;
  Tile first = arange(0, 16) == 0 && present;
  return {load(broadcast_to(expand_dims(row_bytes + arange(0, rows), 1), {rows, 16}), expand_dims(first, 0)),
          load(broadcast_to(expand_dims(col_bytes + arange(0, cols), 0), {16, cols}), expand_dims(first, 1))};
}

// The outer product of 2^(row_bytes[r] - 127) and 2^(col_bytes[c] - 127), (BLOCK_M, N), by the
// tensor cores (rank_one_operands).
inline dsl::Kernel rank_one_factor_kernel() {
  using namespace tilejit::dsl;
  return define_kernel("rank_one_factor", {"row_bytes", "col_bytes", "out"}, {{"BLOCK_M", 64}, {"N", 128}},
                       [](const Constants& c, Ptr<i8> row_bytes, Ptr<i8> col_bytes, Ptr<f32> out) {
                         int64_t bm = c["BLOCK_M"], n = c["N"];
                         std::vector<Tile> raw = rank_one_operands(row_bytes, col_bytes, bm, n, scalar(1, DType::i1));
                         store(out + expand_dims(arange(0, bm), 1) * n + expand_dims(arange(0, n), 0),
                               dot(powers_of_two(raw[0]), powers_of_two(raw[1]), zeros({bm, n}, DType::f32)));
                       });
}

// The sum over `steps` of rank_one_factor_kernel's products, step s reading its bytes at s *
// BLOCK_M and s * N. Each iteration loads the next step's bytes and carries them, decoded,
// into the next iteration, whose dot reads them.
inline dsl::Kernel prefetched_rank_one_factors_kernel() {
  using namespace tilejit::dsl;
  return define_kernel(
      "prefetched_rank_one_factors", {"row_bytes", "col_bytes", "out", "steps"}, {{"BLOCK_M", 64}, {"N", 128}},
      [](const Constants& c, Ptr<i8> row_bytes, Ptr<i8> col_bytes, Ptr<f32> out, Scalar<i32> steps) {
        int64_t bm = c["BLOCK_M"], n = c["N"];
        auto decoded_at = [&](const Tile& s) -> std::vector<Tile> {
          std::vector<Tile> raw = rank_one_operands(row_bytes + s * bm, col_bytes + s * n, bm, n, s < steps);
          return {powers_of_two(raw[0]), powers_of_two(raw[1])};
        };
        std::vector<Tile> first = decoded_at(scalar(0, DType::i32));
        Tile sum = for_range(0, steps, 1, {zeros({bm, n}, DType::f32), first[0], first[1]},
                             [&](Tile s, std::vector<Tile> carried) -> std::vector<Tile> {
                               std::vector<Tile> next = decoded_at(s + 1);
                               return {dot(carried[1], carried[2], carried[0]), next[0], next[1]};
                             })[0];
        store(out + expand_dims(arange(0, bm), 1) * n + expand_dims(arange(0, n), 0), sum);
      });
}

// Over `k` in steps of 32: acc += dot(x, w) * (the step's rank-one product of powers of two,
// rank_one_operands): x (BLOCK_M, 32) and w (32, N) e4m3, w given (K, N), which wgmma reads
// K-major only (stored transposed at each step). Two products per iteration, the second of
// tiles the threads compute.
inline dsl::Kernel two_products_kernel() {
  using namespace tilejit::dsl;
  return define_kernel(
      "two_products", {"x", "w", "row_bytes", "col_bytes", "out", "k"},
      {{"BLOCK_M", 128}, {"N", 128}, {"num_warps", 8}, {"num_stages", 3}},
      [](const Constants& c, Ptr<f8e4m3> x, Ptr<f8e4m3> w, Ptr<i8> row_bytes, Ptr<i8> col_bytes, Ptr<f32> out,
         Scalar<i32> k) {
        int64_t bm = c["BLOCK_M"], n = c["N"];
        Tile rows = arange(0, bm), cols = arange(0, n), ks = arange(0, 32);
        Tile zero = zeros({bm, n}, DType::f32);
        Tile acc = for_range(0, k, 32, zero, [&](Tile kk, Tile acc) {
          std::vector<Tile> raw = rank_one_operands(row_bytes + kk, col_bytes + kk, bm, n, scalar(1, DType::i1));
          Tile factor = dot(powers_of_two(raw[0]), powers_of_two(raw[1]), zero);
          Tile product = dot(load(x + expand_dims(rows, 1) * k + expand_dims(ks + kk, 0)),
                             load(w + expand_dims(ks + kk, 1) * n + expand_dims(cols, 0)), zero);
          return fma(product, factor, acc);
        });
        store(out + expand_dims(rows, 1) * n + expand_dims(cols, 0), acc);
      });
}

// x (BLOCK, BLOCK) bf16, doubled STEPS times by a loop that carries it, stored to out: a
// 16-bit tile carried across the back edge (two elements to a 32-bit word).
inline dsl::Kernel doubled_in_a_loop_kernel() {
  using namespace tilejit::dsl;
  return define_kernel("doubled_in_a_loop", {"x", "out"}, {{"BLOCK", 64}, {"STEPS", 4}},
                       [](const Constants& c, Ptr<bf16> x, Ptr<bf16> out) {
                         int64_t n = c["BLOCK"];
                         Tile at = expand_dims(arange(0, n), 1) * n + expand_dims(arange(0, n), 0);
                         Tile doubled = for_range(0, c["STEPS"], 1, load(x + at), [](Tile, Tile v) {
                           return cast(cast(v, DType::f32) * 2.0, DType::bf16);
                         });
                         store(out + at, doubled);
                       });
}

}  // namespace tilejit::testing_kernels
