// The tensor-core layouts on the host: each instruction's fragments hold every element of
// their matrix exactly once and put chosen elements where the PTX ISA's fragment figures
// do; tile layouts cover the tile, split it over warps as intended, and the register
// indexing the lowering uses finds each instruction's fragment inside the tile layout.
#include <gtest/gtest.h>

#include "codegen/mma_layout.h"
#include "layout_coverage.h"

namespace tilejit::codegen {
namespace {

const Target& sm80() { return find_target("sm_80"); }
const Target& sm89() { return find_target("sm_89"); }

struct Pairing {
  DType a, b;
  int k;
  const char* ptx;
};

const Pairing kPairings[] = {
    {DType::f16, DType::f16, 16, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"},
    {DType::bf16, DType::bf16, 16, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"},
    {DType::f32, DType::f32, 8, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"},
    {DType::i8, DType::i8, 32, "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"},
    {DType::f8e4m3, DType::f8e4m3, 32, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"},
    {DType::f8e4m3, DType::f8e5m2, 32, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32"},
    {DType::f8e5m2, DType::f8e4m3, 32, "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e4m3.f32"},
    {DType::f8e5m2, DType::f8e5m2, 32, "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32"},
};

TEST(MmaLayout, SelectsTheInstructionForEachOperandPairing) {
  for (const Pairing& p : kPairings) {
    auto instr = select_mma(p.a, p.b, sm89());
    ASSERT_TRUE(instr) << dtype_name(p.a) << " x " << dtype_name(p.b);
    EXPECT_EQ(instr->k, p.k);
    EXPECT_EQ(instr->ptx_name(), p.ptx);
  }
  EXPECT_FALSE(select_mma(DType::f8e4m3, DType::f8e5m2, sm80())) << "fp8 tensor cores start at sm_89";
  EXPECT_TRUE(select_mma(DType::bf16, DType::bf16, sm80()));
  EXPECT_FALSE(select_mma(DType::f16, DType::bf16, sm89())) << "mixed 16-bit operands have no instruction";
  EXPECT_FALSE(select_mma(DType::i32, DType::i32, sm89()));
}

TEST(MmaLayout, FragmentsHoldEachElementOnce) {
  for (const Pairing& p : kPairings) {
    MmaInstr i = *select_mma(p.a, p.b, sm89());
    SCOPED_TRACE(i.ptx_name());
    EXPECT_EQ(i.frag_a.shape, (ir::Shape{16, i.k}));
    EXPECT_EQ(i.frag_b.shape, (ir::Shape{i.k, 8}));
    EXPECT_EQ(coverage(i.frag_a), 1);
    EXPECT_EQ(coverage(i.frag_b), 1);
    EXPECT_EQ(coverage(i.frag_c), 1);
    // Four A words and two B words per lane, whatever the element width.
    EXPECT_EQ(i.frag_a.num_regs() / i.elements_per_word(), 4);
    EXPECT_EQ(i.frag_b.num_regs() / i.elements_per_word(), 2);
    EXPECT_EQ(i.frag_c.num_regs(), 4);
  }
}

// Spot checks read off the PTX ISA's fragment figures (lane 6: groupID 1, threadID_in_group 2).
TEST(MmaLayout, FragmentsMatchThePtxFigures) {
  MmaInstr bf16 = *select_mma(DType::bf16, DType::bf16, sm80());
  EXPECT_EQ(bf16.frag_a.apply(3, 6, 0), (Coord{9, 5}));    // a3: row groupID+8, col 2*tig+1
  EXPECT_EQ(bf16.frag_a.apply(6, 6, 0), (Coord{9, 12}));   // a6: row groupID+8, col 2*tig+8
  EXPECT_EQ(bf16.frag_b.apply(3, 6, 0), (Coord{13, 1}));   // b3: row 2*tig+9, col groupID
  EXPECT_EQ(bf16.frag_c.apply(2, 6, 0), (Coord{9, 4}));    // c2: row groupID+8, col 2*tig
  MmaInstr tf32 = *select_mma(DType::f32, DType::f32, sm80());
  EXPECT_EQ(tf32.frag_a.apply(1, 6, 0), (Coord{9, 2}));    // a1: row groupID+8, col tig
  EXPECT_EQ(tf32.frag_a.apply(2, 6, 0), (Coord{1, 6}));    // a2: row groupID, col tig+4
  EXPECT_EQ(tf32.frag_b.apply(1, 6, 0), (Coord{6, 1}));    // b1: row tig+4, col groupID
  MmaInstr s8 = *select_mma(DType::i8, DType::i8, sm80());
  EXPECT_EQ(s8.frag_a.apply(5, 6, 0), (Coord{9, 9}));      // a5: row groupID+8, col 4*tig+1
  EXPECT_EQ(s8.frag_a.apply(11, 6, 0), (Coord{1, 27}));    // a11: row groupID, col 4*tig+3+16
  EXPECT_EQ(s8.frag_b.apply(6, 6, 0), (Coord{26, 1}));     // b6: row 4*tig+2+16, col groupID
}

struct TileCase {
  int64_t m, n, k;
  int warps;
  int expect_warps_m, expect_warps_n;
};

class MmaTileLayout : public ::testing::TestWithParam<TileCase> {};

TEST_P(MmaTileLayout, CoversTheTileAndIndexesFragments) {
  const TileCase& c = GetParam();
  for (const Pairing& p : kPairings) {
    MmaInstr instr = *select_mma(p.a, p.b, sm89());
    SCOPED_TRACE(instr.ptx_name());
    auto t = mma_tiling(instr, c.m, c.n, std::max<int64_t>(c.k, instr.k), c.warps);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->warps_m, c.expect_warps_m);
    EXPECT_EQ(t->warps_n, c.expect_warps_n);
    int working_warps = t->warps_m * t->warps_n;
    EXPECT_EQ(coverage(t->acc), c.warps / working_warps);
    EXPECT_EQ(coverage(t->a), c.warps / t->warps_m);  // warps along N share A's rows
    EXPECT_EQ(coverage(t->b), c.warps / t->warps_n);
    // Instruction (rm, rn, rk) of warp (wm, wn) covers A rows 16*(wm + warps_m*rm), K
    // columns k*rk, and the matching B and accumulator blocks.
    for (int w = 0; w < working_warps; ++w) {
      int64_t wm = w % t->warps_m, wn = w / t->warps_m;
      for (int rm = 0; rm < t->reps_m; ++rm)
        for (int rn = 0; rn < t->reps_n; ++rn)
          for (int rk = 0; rk < t->reps_k; ++rk)
            for (int lane = 0; lane < 32; lane += 5) {
              int64_t row0 = 16 * (wm + t->warps_m * rm), col0 = 8 * (wn + t->warps_n * rn), k0 = instr.k * rk;
              for (int f = 0; f < instr.frag_a.num_regs(); ++f) {
                Coord in_frag = instr.frag_a.apply(f, lane, 0);
                EXPECT_EQ(t->a.apply(t->a_register(rm, rk, f), lane, w), (Coord{row0 + in_frag[0], k0 + in_frag[1]}));
              }
              for (int f = 0; f < instr.frag_b.num_regs(); ++f) {
                Coord in_frag = instr.frag_b.apply(f, lane, 0);
                EXPECT_EQ(t->b.apply(t->b_register(rk, rn, f), lane, w), (Coord{k0 + in_frag[0], col0 + in_frag[1]}));
              }
              for (int f = 0; f < 4; ++f) {
                Coord in_frag = instr.frag_c.apply(f, lane, 0);
                EXPECT_EQ(t->acc.apply(t->acc_register(rm, rn, f), lane, w),
                          (Coord{row0 + in_frag[0], col0 + in_frag[1]}));
              }
            }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Tiles, MmaTileLayout,
                         ::testing::Values(TileCase{16, 8, 16, 1, 1, 1}, TileCase{64, 64, 32, 4, 2, 2},
                                           TileCase{128, 128, 64, 4, 2, 2}, TileCase{128, 256, 32, 8, 2, 4},
                                           TileCase{256, 128, 32, 8, 4, 2}, TileCase{16, 64, 64, 4, 1, 4},
                                           TileCase{64, 8, 32, 4, 4, 1},
                                           // more warps than 16x8 blocks: the spare warps repeat the work
                                           TileCase{16, 16, 16, 4, 1, 2}),
                         [](const auto& info) {
                           const TileCase& c = info.param;
                           return std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) + "_w" +
                                  std::to_string(c.warps);
                         });

TEST(MmaLayout, TilesSmallerThanOneInstructionHaveNoTiling) {
  MmaInstr bf16 = *select_mma(DType::bf16, DType::bf16, sm80());
  EXPECT_FALSE(mma_tiling(bf16, 8, 64, 64, 4));
  EXPECT_FALSE(mma_tiling(bf16, 64, 4, 64, 4));
  EXPECT_FALSE(mma_tiling(bf16, 64, 64, 8, 4));
}

}  // namespace
}  // namespace tilejit::codegen
