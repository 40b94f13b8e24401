// The swizzled shared-memory tiles on the host: the swizzle permutes bytes within each row's
// 128-byte line (nothing is lost or doubled), keeps 16-byte chunks whole, equals the TMA swizzle modes,
// and every access pattern of the tensor-core path is free of bank conflicts.
#include <gtest/gtest.h>

#include <set>

#include "codegen/shared_layout.h"

namespace tilejit::codegen {
namespace {

constexpr int64_t kRowBytes[] = {16, 32, 64, 128, 256};

TEST(SwizzledTile, PermutesBytesWithinEachRowAndKeepsChunksWhole) {
  for (int64_t row_bytes : kRowBytes) {
    SwizzledTile t{64, row_bytes};
    std::set<int64_t> seen;
    for (int64_t r = 0; r < t.rows; ++r)
      for (int64_t c = 0; c < row_bytes; ++c) {
        int64_t o = t.byte_offset(r, c);
        EXPECT_EQ(o % t.block_bytes() / t.line_bytes(), r);
        EXPECT_EQ(o / t.block_bytes(), c / 128);
        EXPECT_EQ(o % 16, c % 16);
        if (c % 16) {
          EXPECT_EQ(o, t.byte_offset(r, c - 1) + 1);
        }
        seen.insert(o);
      }
    EXPECT_EQ(static_cast<int64_t>(seen.size()), t.bytes()) << row_bytes;
  }
}

// TMA's SWIZZLE_32B / 64B / 128B: byte-offset bits [4, 4+b) XOR bits [7, 7+b), b = 1, 2, 3.
TEST(SwizzledTile, EqualsTheTmaSwizzleModesWhenARowIsTheSwizzleSpan) {
  for (int b = 1; b <= 3; ++b) {
    SwizzledTile t{32, int64_t{16} << b};
    for (int64_t o = 0; o < t.bytes(); ++o) {
      int64_t mask = (int64_t{1} << b) - 1;
      int64_t tma = o ^ (((o >> 7) & mask) << 4);
      EXPECT_EQ(t.byte_offset(o / t.row_bytes, o % t.row_bytes), tma) << "swizzle span " << t.row_bytes;
    }
  }
}

// Rows wider than 128 bytes: each column block holds the TMA box of its 128 columns, and the
// 128-byte swizzle follows the address across the blocks, also where a block has fewer than
// eight rows (its 128-byte lines end mid-way through a group of eight).
TEST(SwizzledTile, ColumnBlocksFollowTheAddressesSwizzle) {
  for (int64_t rows : {1, 2, 4, 8, 12, 64})
    for (int64_t row_bytes : {256, 512}) {
      SwizzledTile t{rows, row_bytes};
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < row_bytes; ++c) {
          int64_t unswizzled = c / 128 * rows * 128 + r * 128 + c % 128;  // boxes of (rows, 128 bytes) one after another
          int64_t tma = unswizzled ^ (((unswizzled >> 7) & 7) << 4);
          ASSERT_EQ(t.byte_offset(r, c), tma) << rows << " rows of " << row_bytes << " bytes, row " << r << ", byte " << c;
        }
    }
}

// Shared memory has 32 banks of 4 bytes: a set of 16-byte accesses of one phase (8 of them,
// 128 bytes) is conflict free when they fall in 8 different 16-byte slots of the 128-byte
// bank cycle.
bool conflict_free(const std::vector<int64_t>& offsets) {
  std::set<int64_t> slots;
  for (int64_t o : offsets) slots.insert((o / 16) % 8);
  return slots.size() == offsets.size();
}

TEST(SwizzledTile, LdmatrixPhasesAreConflictFree) {
  // An ldmatrix phase reads the same 16-byte column chunk of 8 consecutive rows.
  for (int64_t row_bytes : kRowBytes)
    for (int64_t first_row = 0; first_row < 64; first_row += 8)
      for (int64_t col = 0; col < row_bytes; col += 16) {
        SwizzledTile t{64, row_bytes};
        std::vector<int64_t> offsets;
        for (int64_t r = 0; r < 8; ++r) offsets.push_back(t.byte_offset(first_row + r, col));
        EXPECT_TRUE(conflict_free(offsets)) << "row bytes " << row_bytes << " rows " << first_row << "+ col " << col;
      }
}

TEST(SwizzledTile, RowMajorVectorStoresAreConflictFree) {
  // Eight consecutive 16-byte vectors of the row-major tile (threads along rows first).
  for (int64_t row_bytes : kRowBytes) {
    SwizzledTile t{64, row_bytes};
    for (int64_t first = 0; first < t.bytes(); first += 128) {
      std::vector<int64_t> offsets;
      for (int64_t v = first; v < first + 128; v += 16) offsets.push_back(t.byte_offset(v / row_bytes, v % row_bytes));
      EXPECT_TRUE(conflict_free(offsets)) << "row bytes " << row_bytes << " from " << first;
    }
  }
}

}  // namespace
}  // namespace tilejit::codegen
