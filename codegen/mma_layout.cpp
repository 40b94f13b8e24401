#include "codegen/mma_layout.h"

#include <fmt/format.h>

#include "dsl/error.h"

namespace tilejit::codegen {
namespace {

// A warp fragment of shape (rows, cols) from its register and lane bases, each given as
// (row, col) steps. In every fragment the lane's low two bits ("threadID_in_group") and high
// three bits ("groupID") step along different dims.
LinearLayout fragment(int64_t rows, int64_t cols, std::vector<Coord> reg, std::vector<Coord> lane) {
  LinearLayout l;
  l.shape = {rows, cols};
  l.reg = std::move(reg);
  l.lane = std::move(lane);
  return l;
}

// A: (16, k) row-major; B: (k, 8) column-major; C: (16, 8). Bases transcribe the PTX ISA's
// fragment tables: e.g. for m16n8k16 A, element a_i sits at row groupID (+8 when bit 1 of i
// is set) and column 2 * threadID_in_group + (i & 1) (+8 when bit 2 of i is set).
const Coord kRow1{1, 0}, kRow2{2, 0}, kRow4{4, 0}, kRow8{8, 0}, kRow16{16, 0};
const Coord kCol1{0, 1}, kCol2{0, 2}, kCol4{0, 4}, kCol8{0, 8}, kCol16{0, 16};

LinearLayout accumulator_fragment() { return fragment(16, 8, {kCol1, kRow8}, {kCol2, kCol4, kRow1, kRow2, kRow4}); }

void set_fragments(MmaInstr& i) {
  switch (i.k) {
    case 8:  // tf32: one element per register
      i.frag_a = fragment(16, 8, {kRow8, kCol4}, {kCol1, kCol2, kRow1, kRow2, kRow4});
      i.frag_b = fragment(8, 8, {kRow4}, {kRow1, kRow2, kCol1, kCol2, kCol4});
      break;
    case 16:  // f16 / bf16: two elements per register
      i.frag_a = fragment(16, 16, {kCol1, kRow8, kCol8}, {kCol2, kCol4, kRow1, kRow2, kRow4});
      i.frag_b = fragment(16, 8, {kRow1, kRow8}, {kRow2, kRow4, kCol1, kCol2, kCol4});
      break;
    case 32:  // 8-bit: four elements per register
      i.frag_a = fragment(16, 32, {kCol1, kCol2, kRow8, kCol16}, {kCol4, kCol8, kRow1, kRow2, kRow4});
      i.frag_b = fragment(32, 8, {kRow1, kRow2, kRow16}, {kRow4, kRow8, kCol1, kCol2, kCol4});
      break;
    default: TJ_CHECK(false);
  }
  i.frag_c = accumulator_fragment();
}

MmaInstr make(MmaKind a, MmaKind b, int k, int bits) {
  MmaInstr i{a, b, 16, 8, k, bits, {}, {}, {}};
  set_fragments(i);
  return i;
}

std::optional<MmaKind> kind_of(DType d) {
  switch (d) {
    case DType::f16: return MmaKind::f16;
    case DType::bf16: return MmaKind::bf16;
    case DType::f32: return MmaKind::tf32;
    case DType::f8e4m3: return MmaKind::e4m3;
    case DType::f8e5m2: return MmaKind::e5m2;
    case DType::i8: return MmaKind::s8;
    default: return std::nullopt;
  }
}

}  // namespace

const char* mma_kind_name(MmaKind k) {
  static constexpr const char* names[] = {"f16", "bf16", "tf32", "e4m3", "e5m2", "s8"};
  return names[static_cast<int>(k)];
}

int log2_ceil(int64_t v) {
  int b = 0;
  while ((int64_t{1} << b) < v) ++b;
  return b;
}

// Bases stepping `step`, 2*step, ... along `dim`, `count` of them.
void append_steps(std::vector<Coord>& bases, int dim, int64_t step, int count) {
  for (int i = 0; i < count; ++i) {
    Coord c(2, 0);
    c[dim] = step << i;
    bases.push_back(c);
  }
}

std::string MmaInstr::ptx_name() const {
  bool integer = a_kind == MmaKind::s8;
  const char* acc = integer ? "s32" : "f32";
  return fmt::format("mma.sync.aligned.m{}n{}k{}.row.col.{}.{}.{}.{}", m, n, k, acc, mma_kind_name(a_kind),
                     mma_kind_name(b_kind), acc);
}

std::optional<MmaInstr> select_mma(DType a, DType b, const Target& target) {
  auto ka = kind_of(a), kb = kind_of(b);
  if (!ka || !kb || target.compute_capability < 80) return std::nullopt;
  auto is_fp8 = [](MmaKind k) { return k == MmaKind::e4m3 || k == MmaKind::e5m2; };
  if (is_fp8(*ka) && is_fp8(*kb)) {
    if (target.compute_capability < 89) return std::nullopt;
    return make(*ka, *kb, 32, 8);
  }
  if (*ka != *kb) return std::nullopt;
  switch (*ka) {
    case MmaKind::f16:
    case MmaKind::bf16: return make(*ka, *kb, 16, 16);
    case MmaKind::tf32: return make(*ka, *kb, 8, 32);
    case MmaKind::s8: return make(*ka, *kb, 32, 8);
    default: return std::nullopt;
  }
}

std::optional<MmaTiling> mma_tiling(const MmaInstr& instr, int64_t m, int64_t n, int64_t k, int num_warps) {
  if (m < instr.m || n < instr.n || k < instr.k) return std::nullopt;
  MmaTiling t;
  t.instr = instr;
  // Warps go where more instructions remain per warp, so each warp's share stays square-ish
  // and operand registers are reused across as many instructions as possible.
  while (t.warps_m * t.warps_n < num_warps) {
    int64_t left_m = m / (instr.m * t.warps_m), left_n = n / (instr.n * t.warps_n);
    if (left_m >= 2 && left_m * instr.m >= left_n * instr.n) t.warps_m *= 2;
    else if (left_n >= 2) t.warps_n *= 2;
    else if (left_m >= 2) t.warps_m *= 2;
    else break;
  }
  t.reps_m = static_cast<int>(m / (instr.m * t.warps_m));
  t.reps_n = static_cast<int>(n / (instr.n * t.warps_n));
  t.reps_k = static_cast<int>(k / instr.k);
  int bits_wm = log2_ceil(t.warps_m), bits_wn = log2_ceil(t.warps_n);
  int spare_warp_bits = log2_ceil(num_warps) - bits_wm - bits_wn;
  auto zeros = [](std::vector<Coord>& bases, int count) { bases.insert(bases.end(), count, Coord(2, 0)); };

  // Accumulator: fragment, then repeats along N, then along M; warps along M, then N.
  t.acc = instr.frag_c;
  t.acc.shape = {m, n};
  append_steps(t.acc.reg, 1, instr.n * t.warps_n, log2_ceil(t.reps_n));
  append_steps(t.acc.reg, 0, instr.m * t.warps_m, log2_ceil(t.reps_m));
  append_steps(t.acc.warp, 0, instr.m, bits_wm);
  append_steps(t.acc.warp, 1, instr.n, bits_wn);
  zeros(t.acc.warp, spare_warp_bits);

  // A: fragment, repeats along K, then M; the warps along N hold the same rows.
  t.a = instr.frag_a;
  t.a.shape = {m, k};
  append_steps(t.a.reg, 1, instr.k, log2_ceil(t.reps_k));
  append_steps(t.a.reg, 0, instr.m * t.warps_m, log2_ceil(t.reps_m));
  append_steps(t.a.warp, 0, instr.m, bits_wm);
  zeros(t.a.warp, bits_wn + spare_warp_bits);

  // B: fragment, repeats along K, then N; the warps along M hold the same columns.
  t.b = instr.frag_b;
  t.b.shape = {k, n};
  append_steps(t.b.reg, 0, instr.k, log2_ceil(t.reps_k));
  append_steps(t.b.reg, 1, instr.n * t.warps_n, log2_ceil(t.reps_n));
  zeros(t.b.warp, bits_wm);
  append_steps(t.b.warp, 1, instr.n, bits_wn);
  zeros(t.b.warp, spare_warp_bits);
  return t;
}

int MmaTiling::a_register(int rep_m, int rep_k, int f) const {
  return f + instr.frag_a.num_regs() * (rep_k + reps_k * rep_m);
}
int MmaTiling::b_register(int rep_k, int rep_n, int f) const {
  return f + instr.frag_b.num_regs() * (rep_k + reps_k * rep_n);
}
int MmaTiling::acc_register(int rep_m, int rep_n, int f) const {
  return f + instr.frag_c.num_regs() * (rep_n + reps_n * rep_m);
}

}  // namespace tilejit::codegen
