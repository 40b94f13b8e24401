// The ops' bounded memory of each call's config: a remembered key is not decided again, and
// reaching the bound starts over instead of growing.
#include <gtest/gtest.h>

#include "autotune/call_memo.h"

namespace tilejit::autotune {
namespace {

TEST(CallMemo, DecidesEachKeyOnceUntilTheBoundIsReached) {
  CallMemo<int, int> memo(3);
  int decisions = 0;
  auto value_of = [&](int key) {
    return memo.get(key, [&] {
      ++decisions;
      return key * 10;
    });
  };
  EXPECT_EQ(value_of(1), 10);
  EXPECT_EQ(value_of(2), 20);
  EXPECT_EQ(value_of(1), 10);
  EXPECT_EQ(decisions, 2);
  EXPECT_EQ(value_of(3), 30);
  EXPECT_EQ(memo.size(), 3u);
  // A fourth key starts over: it alone is remembered, and key 1 is decided again.
  EXPECT_EQ(value_of(4), 40);
  EXPECT_EQ(memo.size(), 1u);
  EXPECT_EQ(value_of(1), 10);
  EXPECT_EQ(decisions, 5);
  EXPECT_EQ(value_of(4), 40);
  EXPECT_EQ(decisions, 5);
}

}  // namespace
}  // namespace tilejit::autotune
