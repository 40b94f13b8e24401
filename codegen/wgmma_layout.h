// The warpgroup-level tensor-core instruction of sm_90a, wgmma.mma_async.m64nNkK, as the
// compiler uses it: B in shared memory, named by a matrix descriptor; A there too, or in
// registers; the accumulator in registers. A warpgroup is four consecutive warps; warp w of
// it holds rows 16w .. 16w+15 of the 64-row accumulator in the mma.sync accumulator fragment
// repeated over N (codegen/mma_layout.h), and, when A comes from registers, the same rows of
// A in the mma.sync A fragment. A dot over a whole tile spreads warpgroups over M (then N)
// and repeats the instruction per warpgroup along M and N.
//
// Operand tiles are the swizzled tiles of codegen/shared_layout.h: rows of up to 128 bytes,
// XOR-swizzled in 32/64/128-byte spans, which are the canonical layouts the descriptor's
// swizzle modes name. A tile whose rows run along K is "K-major"; one whose rows run along M
// (A held as (K, M)) or N (B held as (K, N)) is "MN-major", which wgmma reads transposed
// (16-bit elements only).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "codegen/layout.h"
#include "codegen/mma_layout.h"
#include "codegen/shared_layout.h"

namespace tilejit::codegen {

// Where a wgmma reads A from: a shared tile held K-major or MN-major, or registers.
enum class WgmmaA { k_major, mn_major, registers };

struct WgmmaInstr {
  MmaKind a_kind, b_kind;
  int n = 8, k = 16;
  int element_bits = 16;
  WgmmaA a_source = WgmmaA::k_major;
  bool b_mn_major = false;  // the B tile held transposed
  bool a_mn_major() const { return a_source == WgmmaA::mn_major; }
  bool a_in_registers() const { return a_source == WgmmaA::registers; }
  // The PTX spelling, e.g. "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16".
  std::string ptx_name() const;
};

struct WgmmaTiling {
  WgmmaInstr instr;
  int groups_m = 1, groups_n = 1;  // warpgroups along M and N
  int reps_m = 1, reps_n = 1;      // instructions per warpgroup along M and N
  int reps_k = 1;
  LinearLayout acc;                // (M, N)
  // (M, K): A as the instructions take it from registers (WgmmaA::registers): the mma.sync A
  // fragment per warp, repeated along K, then M; the warpgroups along N hold the same rows.
  LinearLayout a;
  // The tile register holding accumulator register `i` of instruction (rep_m, rep_n).
  int acc_register(int rep_m, int rep_n, int i) const { return i + instr.n / 2 * (rep_n + reps_n * rep_m); }
  // The register of `a` holding A fragment element `f` (of k / 2) of instruction (rep_m, K step).
  int a_register(int rep_m, int rep_k, int f) const { return f + instr.k / 2 * (rep_k + reps_k * rep_m); }
};

// The wgmma tiling of an (M, K) x (K, N) dot on `num_warps` warps with A read from where
// `a_source` says and the B tile held K-major or MN-major as `b_mn_major` says, or nullopt
// where wgmma does not apply: no sm_90a, tf32 (its operands need rounding on the way in),
// fewer than 64 rows or 4 warps, MN-major 8-bit operands, or N slices that do not start on a
// swizzle span.
std::optional<WgmmaTiling> wgmma_tiling(DType a, DType b, int64_t m, int64_t n, int64_t k, int num_warps,
                                        WgmmaA a_source, bool b_mn_major, const Target& target);

// The parts of a shared-memory matrix descriptor the compiler knows before run time.
struct MatrixDescriptor {
  int64_t leading_byte_offset = 0, stride_byte_offset = 0;
  int swizzle_mode = 0;  // the descriptor's bits 62-63: 1 = 128-byte, 2 = 64-byte, 3 = 32-byte
  // The 64-bit descriptor for a matrix that starts at shared address `start`.
  uint64_t encode(uint32_t start) const;
};

// The descriptor of the matrices in `tile` (K-major: rows along M or N; MN-major: rows along K).
MatrixDescriptor matrix_descriptor(const SwizzledTile& tile, bool mn_major);

// The byte offset in `tile` of one instruction's matrix: rows (or, MN-major, columns)
// `outer` onwards, K step `k_step` of `k_bytes` bytes (MN-major: of `k_rows` rows).
int64_t matrix_offset(const SwizzledTile& tile, bool mn_major, int64_t outer, int64_t k_step, int k_elements,
                      int element_bytes);

}  // namespace tilejit::codegen
