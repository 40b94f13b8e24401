// sm_90a's warpgroup MMA on the host: when a dot uses wgmma, the accumulator layout equals
// the PTX ISA's fragment of wgmma.m64nNk (every register of every thread once), matrix
// descriptors encode their fields where the ISA puts them, and instruction slices start
// where the canonical layouts of the swizzled tiles say.
#include <gtest/gtest.h>

#include <set>

#include "codegen/wgmma_layout.h"

namespace tilejit::codegen {
namespace {

const Target& hopper() { return find_target("sm_90a"); }

TEST(WgmmaTiling, AccumulatorIsTheIsaFragmentRepeated) {
  struct Case {
    int64_t m, n;
    int warps;
  };
  for (const Case& c : {Case{64, 64, 4}, Case{128, 64, 4}, Case{128, 128, 8}, Case{64, 128, 8}, Case{256, 512, 8}}) {
    auto t = wgmma_tiling(DType::bf16, DType::bf16, c.m, c.n, 64, c.warps, WgmmaA::k_major, false, hopper());
    ASSERT_TRUE(t) << c.m << "x" << c.n << " on " << c.warps << " warps";
    SCOPED_TRACE(t->acc.str());
    int64_t n_per_group = c.n / t->groups_n;
    std::set<std::pair<int64_t, int64_t>> seen;
    for (int warp = 0; warp < c.warps; ++warp)
      for (int lane = 0; lane < 32; ++lane)
        for (int rep_m = 0; rep_m < t->reps_m; ++rep_m)
          for (int rep_n = 0; rep_n < t->reps_n; ++rep_n)
            for (int i = 0; i < t->instr.n / 2; ++i) {
              // PTX ISA, wgmma .m64nNk16 accumulator D: warp w of the warpgroup holds rows
              // 16w..16w+15; d_i of lane l is row l/4 + 8*((i/2)%2), column 8*(i/4) + 2*(l%4) + i%2.
              int group = warp / 4, group_m = group % t->groups_m, group_n = group / t->groups_m;
              int64_t row = 64 * (group_m + t->groups_m * rep_m) + 16 * (warp % 4) + lane / 4 + 8 * ((i >> 1) & 1);
              int64_t col = n_per_group * group_n + int64_t{t->instr.n} * rep_n + 8 * (i >> 2) + 2 * (lane % 4) + (i & 1);
              Coord got = t->acc.apply(t->acc_register(rep_m, rep_n, i), lane, warp);
              ASSERT_EQ(got, (Coord{row, col})) << "warp " << warp << " lane " << lane << " register " << i;
              seen.insert({row, col});
            }
    EXPECT_EQ(static_cast<int64_t>(seen.size()), c.m * c.n) << "every element held once";
  }
}

TEST(WgmmaTiling, RegisterAIsTheIsaFragmentOfEachWarp) {
  struct Case {
    DType dtype;
    int64_t m, n, k;
    int warps;
  };
  for (const Case& c : {Case{DType::bf16, 64, 64, 32, 4}, Case{DType::f16, 128, 64, 64, 8},
                        Case{DType::bf16, 64, 128, 16, 8}, Case{DType::f8e4m3, 256, 64, 64, 8},
                        Case{DType::i8, 128, 64, 32, 4}}) {
    auto t = wgmma_tiling(c.dtype, c.dtype, c.m, c.n, c.k, c.warps, WgmmaA::registers, false, hopper());
    ASSERT_TRUE(t) << dtype_name(c.dtype) << " " << c.m << "x" << c.n << "x" << c.k << " on " << c.warps << " warps";
    SCOPED_TRACE(t->a.str());
    const int k = t->instr.k;
    std::set<std::pair<int64_t, int64_t>> seen;
    for (int warp = 0; warp < c.warps; ++warp)
      for (int lane = 0; lane < 32; ++lane)
        for (int rep_m = 0; rep_m < t->reps_m; ++rep_m)
          for (int rep_k = 0; rep_k < t->reps_k; ++rep_k)
            for (int i = 0; i < k / 2; ++i) {
              // PTX ISA, wgmma register fragment of A: warp w of the warpgroup holds rows
              // 16w..16w+15. m64nNk16: a_i of lane l is row l/4 + 8*((i/2)%2), column
              // 2*(l%4) + i%2 + 8*(i/4); m64nNk32: row l/4 + 8*((i/4)%2), column 4*(l%4) +
              // i%4 + 16*(i/8). The warpgroups along N hold the same rows.
              int group_m = warp / 4 % t->groups_m, g = lane / 4, q = lane % 4;
              int64_t row = 64 * (group_m + t->groups_m * rep_m) + 16 * (warp % 4) + g +
                            8 * (k == 16 ? (i >> 1) & 1 : (i >> 2) & 1);
              int64_t col = int64_t{k} * rep_k + (k == 16 ? 2 * q + (i & 1) + 8 * (i >> 2) : 4 * q + (i & 3) + 16 * (i >> 3));
              Coord got = t->a.apply(t->a_register(rep_m, rep_k, i), lane, warp);
              ASSERT_EQ(got, (Coord{row, col})) << "warp " << warp << " lane " << lane << " element " << i;
              seen.insert({row, col});
            }
    EXPECT_EQ(static_cast<int64_t>(seen.size()), c.m * c.k) << "every element held";
  }
}

TEST(WgmmaTiling, AppliesWhereTheInstructionCanReadTheOperands) {
  auto tiling = [](DType d, int64_t m, int64_t n, int64_t k, int warps, bool a_mn, bool b_mn, const char* arch) {
    return wgmma_tiling(d, d, m, n, k, warps, a_mn ? WgmmaA::mn_major : WgmmaA::k_major, b_mn, find_target(arch)).has_value();
  };
  EXPECT_TRUE(tiling(DType::bf16, 64, 64, 32, 4, false, true, "sm_90a"));
  EXPECT_TRUE(tiling(DType::f16, 64, 128, 32, 8, true, false, "sm_90a"));
  EXPECT_TRUE(tiling(DType::i8, 128, 64, 64, 4, false, false, "sm_90a"));
  EXPECT_TRUE(tiling(DType::f8e4m3, 64, 64, 32, 4, false, false, "sm_90a"));
  EXPECT_FALSE(tiling(DType::bf16, 64, 64, 32, 4, false, true, "sm_89")) << "no wgmma before sm_90a";
  EXPECT_FALSE(tiling(DType::bf16, 32, 64, 32, 4, false, false, "sm_90a")) << "fewer than 64 rows";
  EXPECT_FALSE(tiling(DType::bf16, 64, 64, 32, 2, false, false, "sm_90a")) << "no whole warpgroup";
  EXPECT_FALSE(tiling(DType::f32, 64, 64, 32, 4, false, false, "sm_90a")) << "tf32 is rounded on the way in";
  EXPECT_FALSE(tiling(DType::i8, 64, 64, 64, 4, false, true, "sm_90a")) << "8-bit operands are K-major only";
  EXPECT_FALSE(tiling(DType::f8e5m2, 64, 64, 64, 4, true, false, "sm_90a")) << "8-bit operands are K-major only";
  // Two warpgroups along N of a 32-wide MN-major B: each slice would start mid-way through a
  // 64-byte swizzle span.
  EXPECT_FALSE(tiling(DType::bf16, 64, 32, 32, 8, false, true, "sm_90a"));
  EXPECT_TRUE(tiling(DType::bf16, 64, 32, 32, 8, false, false, "sm_90a"));
}

TEST(WgmmaTiling, InstructionsSplitWarpgroupsOverMThenN) {
  auto t = wgmma_tiling(DType::bf16, DType::bf16, 128, 256, 64, 8, WgmmaA::k_major, true, hopper());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->groups_m, 2);
  EXPECT_EQ(t->groups_n, 1);
  EXPECT_EQ(t->instr.n, 256);
  EXPECT_EQ(t->instr.ptx_name(), "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16");
  auto wide = wgmma_tiling(DType::i8, DType::i8, 64, 512, 64, 4, WgmmaA::k_major, false, hopper());
  ASSERT_TRUE(wide);
  EXPECT_EQ(wide->instr.n, 256);
  EXPECT_EQ(wide->reps_n, 2);
  EXPECT_EQ(wide->instr.ptx_name(), "wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8");
}

TEST(MatrixDescriptor, FieldsSitWhereTheIsaPutsThem) {
  // 128 rows of 128 bytes, K-major: 128-byte swizzle (mode 1), 8-row groups 1024 bytes apart,
  // the unused leading offset 1 (16 bytes).
  MatrixDescriptor k_major = matrix_descriptor(SwizzledTile{128, 128}, false);
  EXPECT_EQ(k_major.encode(0x12400), uint64_t{0x1240} | uint64_t{1} << 16 | uint64_t{64} << 32 | uint64_t{1} << 62);
  // 64 K rows of 512 bytes (256 bf16 along N), MN-major: the next 64 columns are the next
  // 128-byte column block, 64 x 128 bytes on.
  MatrixDescriptor mn_major = matrix_descriptor(SwizzledTile{64, 512}, true);
  EXPECT_EQ(mn_major.leading_byte_offset, 64 * 128);
  EXPECT_EQ(mn_major.stride_byte_offset, 1024);
  EXPECT_EQ(matrix_descriptor(SwizzledTile{64, 64}, false).swizzle_mode, 2);
  EXPECT_EQ(matrix_descriptor(SwizzledTile{64, 32}, false).swizzle_mode, 3);
  EXPECT_EQ(k_major.encode(0x40000 + 0x100) & 0x3fff, uint64_t{0x10}) << "addresses wrap at 2^18";
}

TEST(MatrixDescriptor, SlicesStartOnTheirUnswizzledOffsets) {
  // A K-major tile of 128 rows x 256 bytes: K steps of 32 bytes walk a 128-byte line, then
  // the next column block; rows 64 on start 64 lines down.
  SwizzledTile a{128, 256};
  EXPECT_EQ(matrix_offset(a, false, 0, 1, 16, 2), 32);
  EXPECT_EQ(matrix_offset(a, false, 0, 4, 16, 2), 128 * 128);
  EXPECT_EQ(matrix_offset(a, false, 64, 5, 16, 2), 128 * 128 + 64 * 128 + 32);
  // An MN-major tile of 32 K rows x 512 bytes: K steps of 16 rows, columns 64 on in the
  // next column block.
  SwizzledTile b{32, 512};
  EXPECT_EQ(matrix_offset(b, true, 0, 1, 16, 2), 16 * 128);
  EXPECT_EQ(matrix_offset(b, true, 128, 1, 16, 2), 2 * 32 * 128 + 16 * 128);
}

}  // namespace
}  // namespace tilejit::codegen
