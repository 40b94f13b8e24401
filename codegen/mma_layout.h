// The warp-level tensor-core instructions (mma.sync, sm_80 and later) as linear layouts.
// Each instruction multiplies an (m x k) A fragment by a (k x n) B fragment into an (m x n)
// accumulator fragment, spread over the 32 lanes of a warp as the PTX ISA's "matrix
// fragments for mma.m16n8kK" tables say. A dot over a whole tile repeats the instruction:
// warps split the tile's M and N, and each warp loops over its share of M, N and K in
// registers. All of it is a LinearLayout (register bits, then lane bits, then warp bits), so
// the lowering moves operands into these layouts with the same machinery as any other.
#pragma once

#include <optional>
#include <string>

#include "codegen/layout.h"
#include "codegen/target.h"
#include "dsl/dtype.h"

namespace tilejit::codegen {

// The operand encodings mma.sync understands.
enum class MmaKind { f16, bf16, tf32, e4m3, e5m2, s8 };

struct MmaInstr {
  MmaKind a_kind, b_kind;
  int m = 16, n = 8, k = 0;
  int element_bits = 0;      // of A and B elements in registers (tf32 travels in 32 bits)
  LinearLayout frag_a;       // (m, k): register and lane bases of one warp's A fragment
  LinearLayout frag_b;       // (k, n)
  LinearLayout frag_c;       // (m, n): the accumulator, f32 or i32

  int elements_per_word() const { return 32 / element_bits; }
  // The PTX spelling, e.g. "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32".
  std::string ptx_name() const;
};

// "f16", "bf16", "tf32", "e4m3", "e5m2", "s8": the PTX type names.
const char* mma_kind_name(MmaKind k);

// Layout-building helpers: ceil(log2(v)), and `count` bases stepping `step`, 2*step, ...
// along `dim` of a rank-2 tile.
int log2_ceil(int64_t v);
void append_steps(std::vector<Coord>& bases, int dim, int64_t step, int count);

// The instruction a dot of these operand dtypes uses on `target`, or nullopt when the
// target's tensor cores do not take them (fp8 needs sm_89). f32 operands use tf32.
std::optional<MmaInstr> select_mma(DType a, DType b, const Target& target);

// A dot of an (M, K) by (K, N) tile on `num_warps` warps with one instruction shape.
struct MmaTiling {
  MmaInstr instr;
  int warps_m = 1, warps_n = 1;  // warps along M and N; any others repeat the work
  int reps_m = 1, reps_n = 1, reps_k = 1;  // instructions per warp along each dim
  LinearLayout a, b, acc;        // the tiles' layouts

  // The tile register holding fragment register `f` of the instruction at (rep_m, rep_k)
  // for A, (rep_k, rep_n) for B and (rep_m, rep_n) for the accumulator.
  int a_register(int rep_m, int rep_k, int f) const;
  int b_register(int rep_k, int rep_n, int f) const;
  int acc_register(int rep_m, int rep_n, int f) const;
};

// nullopt when the tile is smaller than one instruction (M < 16, N < 8 or K < k).
std::optional<MmaTiling> mma_tiling(const MmaInstr& instr, int64_t m, int64_t n, int64_t k, int num_warps);

}  // namespace tilejit::codegen
