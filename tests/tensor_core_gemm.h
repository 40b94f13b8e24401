// A tiled GEMM written in the DSL for every operand pairing the tensor cores take, for the
// tests of the tensor-core lowering (PTX and ptxas in tests/codegen, numerics in the
// emulator in tests/emu): C (M, N) = A (M, K) @ B (K, N), all row-major, any M, N, K
// (masked edges), accumulated over a K loop. With B_TRANSPOSED, B is stored as (N, K)
// row-major (the layout of a linear layer's weight) and the kernel multiplies by its trans;
// with A_TRANSPOSED, A is stored as (K, M). With A_COMPUTED, the A tile the dot reads is
// computed in registers (the loaded tile cast to f32 / i32 and back, exactly), which sm_90a's
// wgmma reads from registers.
#pragma once

#include <optional>
#include <string>

#include "dsl/kernel.h"

namespace tilejit::testing_kernels {

// Constants: BLOCK_M, BLOCK_N, BLOCK_K, PRECISION (dsl::Precision of f32 operands:
// 0 tf32, 1 ieee, 2 tf32x3), A_TRANSPOSED, B_TRANSPOSED and A_COMPUTED (0 or 1).
// Parameters: a, b, c, M, N, K.
template <DType DA, DType DB>
dsl::Kernel tensor_core_gemm() {
  using namespace tilejit::dsl;
  constexpr DType ACC = DA == DType::i8 ? DType::i32 : DType::f32;
  return define_kernel(
      "tc_gemm_" + std::string(dtype_name(DA)) + "_" + std::string(dtype_name(DB)), {"a", "b", "c", "M", "N", "K"},
      {{"BLOCK_M", 64},
       {"BLOCK_N", 64},
       {"BLOCK_K", 32},
       {"PRECISION", 0},
       {"A_TRANSPOSED", 0},
       {"B_TRANSPOSED", 0},
       {"A_COMPUTED", 0}},
      [](const Constants& c, Ptr<DA> a, Ptr<DB> b, Ptr<ACC> out, Scalar<i32> M, Scalar<i32> N, Scalar<i32> K) {
        int64_t bm = c["BLOCK_M"], bn = c["BLOCK_N"], bk = c["BLOCK_K"];
        auto precision = static_cast<Precision>(c["PRECISION"]);
        Tile rows = program_id(0) * bm + arange(0, bm);  // (BLOCK_M)
        Tile cols = program_id(1) * bn + arange(0, bn);  // (BLOCK_N)
        Tile ks = arange(0, bk);                         // (BLOCK_K)
        Tile acc = for_range(0, K, bk, zeros({bm, bn}, ACC), [&](Tile k, Tile acc) {
          Tile a_tile = c["A_TRANSPOSED"]
                            ? trans(load(a + expand_dims(ks + k, 1) * M + expand_dims(rows, 0),
                                         expand_dims(ks + k < K, 1) && expand_dims(rows < M, 0)))  // of (BLOCK_K, BLOCK_M)
                            : load(a + expand_dims(rows, 1) * K + expand_dims(ks + k, 0),
                                   expand_dims(rows < M, 1) && expand_dims(ks + k < K, 0));  // (BLOCK_M, BLOCK_K)
          if (c.flag("A_COMPUTED")) a_tile = cast(cast(a_tile, ACC), DA);
          Tile b_tile = c["B_TRANSPOSED"]
                            ? trans(load(b + expand_dims(cols, 1) * K + expand_dims(ks + k, 0),
                                         expand_dims(cols < N, 1) && expand_dims(ks + k < K, 0)))  // of (BLOCK_N, BLOCK_K)
                            : load(b + expand_dims(ks + k, 1) * N + expand_dims(cols, 0),
                                   expand_dims(ks + k < K, 1) && expand_dims(cols < N, 0));  // (BLOCK_K, BLOCK_N)
          return dot(a_tile, b_tile, acc, precision);                                 // (BLOCK_M, BLOCK_N)
        });
        store(out + expand_dims(rows, 1) * N + expand_dims(cols, 0), acc,
              expand_dims(rows < M, 1) && expand_dims(cols < N, 0));
      });
}

// The same GEMM reading A (M, K) and B (K, N), or with B_TRANSPOSED B (N, K), through tensor
// descriptors, whose block shapes give the tile: (BLOCK_M, BLOCK_K) and (BLOCK_K, BLOCK_N) or
// (BLOCK_N, BLOCK_K). Constants: PRECISION, B_TRANSPOSED, warp_specialize, PERSISTENT (the
// programs loop over the output tiles, row by row, on a 1-D grid of any size), cluster_x and
// cluster_y (one tile per program: the cluster's CTAs along x share their B block, along y
// their A block). Parameters: a, b, c, M, N, K.
template <DType DA, DType DB>
dsl::Kernel tensor_core_gemm_desc() {
  using namespace tilejit::dsl;
  constexpr DType ACC = DA == DType::i8 ? DType::i32 : DType::f32;
  return define_kernel(
      "tc_gemm_desc_" + std::string(dtype_name(DA)) + "_" + std::string(dtype_name(DB)), {"a", "b", "c", "M", "N", "K"},
      {{"PRECISION", 0}, {"B_TRANSPOSED", 0}, {"warp_specialize", 0}, {"PERSISTENT", 0}, {"cluster_x", 1}, {"cluster_y", 1}},
      [](const Constants& c, TensorDesc<DA> a, TensorDesc<DB> b, Ptr<ACC> out, Scalar<i32> M, Scalar<i32> N,
         Scalar<i32> K) {
        bool b_transposed = c.flag("B_TRANSPOSED");
        int64_t bm = a.shape()[0], bk = a.shape()[1], bn = b.shape()[b_transposed ? 0 : 1];
        auto precision = static_cast<Precision>(c["PRECISION"]);
        bool persistent = c.flag("PERSISTENT");
        auto output_tile = [&](const Tile& row0, const Tile& col0) {
          // Persistent, a zero from a reduction across the warps (through shared memory, with
          // a barrier) before the K loop: the copies do not need it, and a producer warpgroup
          // running across tiles must leave it to the consumers.
          std::optional<Tile> zero;
          if (persistent) zero = sum(arange(0, bm), 0) - static_cast<int32_t>(bm * (bm - 1) / 2);
          Tile acc = for_range(0, K, bk, zeros({bm, bn}, ACC), [&](Tile k, Tile acc) {
            Tile a_tile = desc_load(a, {row0, k}, ClusterShared{1});
            Tile b_tile = b_transposed ? trans(desc_load(b, {col0, k}, ClusterShared{0}))
                                       : desc_load(b, {k, col0}, ClusterShared{0});
            return dot(a_tile, b_tile, acc, precision);
          });
          Tile rows = row0 + arange(0, bm), cols = col0 + arange(0, bn);
          if (zero) rows = rows + *zero;
          store(out + expand_dims(rows, 1) * N + expand_dims(cols, 0), acc,
                expand_dims(rows < M, 1) && expand_dims(cols < N, 0));
        };
        if (!persistent) return output_tile(program_id(0) * bm, program_id(1) * bn);
        Tile tiles_n = cdiv(N, bn);
        for_range(program_id(0), cdiv(M, bm) * tiles_n, num_programs(0),
                  [&](Tile tile) { output_tile(tile / tiles_n * bm, tile % tiles_n * bn); });
      });
}

}  // namespace tilejit::testing_kernels
