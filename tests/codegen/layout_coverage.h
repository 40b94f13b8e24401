// The check the layout tests make of a whole layout: which tile elements its inputs hold.
#pragma once

#include <gtest/gtest.h>

#include <map>

#include "codegen/layout.h"

namespace tilejit::codegen {

// Every element of the tile is held by some (register, lane, warp), and no coordinate is out
// of range; returns how many inputs hold each element at most.
inline int coverage(const LinearLayout& l) {
  std::map<Coord, int> count;
  for (int w = 0; w < l.num_warps(); ++w)
    for (int lane = 0; lane < 32; ++lane)
      for (int r = 0; r < l.num_regs(); ++r) {
        Coord c = l.apply(r, lane, w);
        for (int d = 0; d < l.rank(); ++d) {
          EXPECT_GE(c[d], 0);
          EXPECT_LT(c[d], l.shape[d]);
        }
        ++count[c];
      }
  int64_t numel = 1;
  for (auto s : l.shape) numel *= s;
  EXPECT_EQ(static_cast<int64_t>(count.size()), numel) << l.str();
  int most = 0;
  for (auto& [c, n] : count) most = std::max(most, n);
  return most;
}

}  // namespace tilejit::codegen
