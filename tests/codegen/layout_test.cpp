#include <gtest/gtest.h>

#include <set>

#include "codegen/layout.h"
#include "layout_coverage.h"

namespace tilejit::codegen {
namespace {

TEST(LinearLayout, BlockedIsABijectionWhenTheTileFillsTheCta) {
  LinearLayout l = LinearLayout::blocked({64, 64}, 4, 4);
  EXPECT_EQ(l.num_regs(), 32);
  EXPECT_EQ(coverage(l), 1);
  // Four consecutive columns per thread (one 16-byte vector of f32), lanes along columns.
  EXPECT_EQ(l.reg[0], (Coord{0, 1}));
  EXPECT_EQ(l.reg[1], (Coord{0, 2}));
  EXPECT_EQ(l.lane[0], (Coord{0, 4}));
  EXPECT_EQ(l.replicated_lane_mask(), 0u);
}

TEST(LinearLayout, SmallTilesReplicate) {
  LinearLayout l = LinearLayout::blocked({16}, 4, 4);
  EXPECT_EQ(l.num_regs(), 4);
  EXPECT_EQ(coverage(l), 32);  // 128 threads hold 4 of 16 elements each
  EXPECT_EQ(l.replicated_lane_mask(), 0b11100u);
  EXPECT_EQ(l.replicated_warp_mask(), 0b11u);
}

TEST(LinearLayout, ReshapeAndPermuteRoundTrip) {
  LinearLayout l = LinearLayout::blocked({32, 16, 8}, 8, 2);
  EXPECT_EQ(l.reshape({4096}).reshape({32, 16, 8}), l);
  EXPECT_EQ(l.permute({2, 0, 1}).permute({1, 2, 0}), l);
  EXPECT_EQ(coverage(l.reshape({64, 64})), 1);
  EXPECT_EQ(coverage(l.permute({2, 0, 1})), 1);
}

TEST(LinearLayout, ReshapeKeepsRowMajorOrder) {
  LinearLayout l = LinearLayout::blocked({8, 32}, 1, 4);
  LinearLayout flat = l.reshape({256});
  for (int r = 0; r < l.num_regs(); ++r)
    for (int lane = 0; lane < 32; ++lane) EXPECT_EQ(flat.apply(r, lane, 0)[0], linear_index(l.shape, l.apply(r, lane, 0)));
}

TEST(LinearLayout, SliceAndExpandDims) {
  LinearLayout l = LinearLayout::blocked({64, 32}, 4, 4);
  LinearLayout rows = l.remove_dim(1);
  EXPECT_EQ(rows.shape, (ir::Shape{64}));
  EXPECT_EQ(coverage(rows), 32);  // 16 registers x 32 lanes x 4 warps over 64 rows
  EXPECT_EQ(rows.insert_dim(1), l.squash({1}));
}

TEST(LinearLayout, RegisterMap) {
  LinearLayout l = LinearLayout::blocked({64, 64}, 4, 4);
  auto same = register_map(l, l);
  ASSERT_TRUE(same.has_value());
  for (int r = 0; r < l.num_regs(); ++r) EXPECT_EQ((*same)[r], r);
  // A broadcast along dim 1 reads the data of its source without moving it between threads.
  LinearLayout source = l.remove_dim(1).insert_dim(1);
  EXPECT_TRUE(register_map(source, l.squash({1})).has_value());
  // Different thread assignments need shared memory.
  EXPECT_FALSE(register_map(l, LinearLayout::blocked({64, 64}, 4, 1)).has_value());
}

TEST(LinearLayout, DuplicateRegisters) {
  LinearLayout l = LinearLayout::blocked({64, 64}, 4, 4).squash({1});
  std::vector<bool> dup = l.duplicate_registers();
  EXPECT_FALSE(dup[0]);
  EXPECT_TRUE(dup[1]);  // register bit 0 walked along the squashed dim
  EXPECT_EQ(std::count(dup.begin(), dup.end(), false), 8);
}

}  // namespace
}  // namespace tilejit::codegen
