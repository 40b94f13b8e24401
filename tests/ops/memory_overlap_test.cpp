// When ops take two tensors' memory to overlap (ops/common/memory_overlap.h): never when they
// share no byte in the layouts ops meet, always when they do.
#include "ops/common/memory_overlap.h"

#include <dlpack/dlpack.h>
#include <gtest/gtest.h>

#include "tests/emu/ops_test_util.h"

namespace {

using tilejit::ops::may_overlap;
using tilejit::ops::may_overlap_itself;
using namespace tjops;

Tensor matrix(int64_t rows, int64_t cols) { return Tensor::empty(emu(), DType::f32, {rows, cols}); }

TEST(MemoryOverlap, SeparateTensorsAndTheSameOne) {
  Tensor a = matrix(8, 32), b = matrix(8, 32);
  EXPECT_FALSE(may_overlap(a, b));
  EXPECT_TRUE(may_overlap(a, a));
  EXPECT_TRUE(may_overlap(a, a.permute({1, 0})));
  EXPECT_FALSE(may_overlap(a, Tensor::empty(Device::by_name("emu:sm_80"), DType::f32, {8, 32})));
  EXPECT_FALSE(may_overlap(a, a.slice(0, 0, 0)));  // no elements
}

TEST(MemoryOverlap, BlocksOfOneMatrix) {
  Tensor x = matrix(8, 32);
  Tensor left = x.slice(1, 0, 16), right = x.slice(1, 16, 16), middle = x.slice(1, 8, 16);
  EXPECT_FALSE(may_overlap(left, right));  // interleaved rows, separate columns
  EXPECT_FALSE(may_overlap(right, left));
  EXPECT_TRUE(may_overlap(left, middle));
  EXPECT_TRUE(may_overlap(middle, right));
  EXPECT_FALSE(may_overlap(x.slice(0, 0, 4), x.slice(0, 4, 4)));  // row blocks
  EXPECT_TRUE(may_overlap(x.slice(0, 0, 5), x.slice(0, 4, 4)));
  EXPECT_TRUE(may_overlap(left, x.select(0, 2)));                    // a whole row meets every column block
  EXPECT_FALSE(may_overlap(left, x.select(0, 2).slice(0, 16, 16)));  // the right half of a row does not
  EXPECT_TRUE(may_overlap(right, x.permute({1, 0})));                // the transpose covers everything
  EXPECT_FALSE(may_overlap(x.slice(1, 0, 1), right));                // a column against a block
  EXPECT_TRUE(may_overlap(x.slice(1, 16, 1), right));
  // Batched views of one buffer: the same column blocks of every matrix.
  Tensor stacked = Tensor::empty(emu(), DType::f32, {3, 8, 32});
  EXPECT_FALSE(may_overlap(stacked.slice(2, 0, 16), stacked.slice(2, 16, 16)));
  EXPECT_TRUE(may_overlap(stacked.slice(2, 0, 17), stacked.slice(2, 16, 16)));
}

TEST(MemoryOverlap, ElementsThatShareAnAddress) {
  Tensor x = matrix(8, 32);
  EXPECT_FALSE(may_overlap_itself(x));
  EXPECT_FALSE(may_overlap_itself(x.permute({1, 0})));
  EXPECT_FALSE(may_overlap_itself(x.slice(1, 0, 16)));
  EXPECT_FALSE(may_overlap_itself(x.select(1, 3)));  // a column
  DLManagedTensor* broadcast = x.to_dlpack();
  broadcast->dl_tensor.strides[0] = 0;  // every row at one address
  EXPECT_TRUE(may_overlap_itself(Tensor::from_dlpack(broadcast)));
}

}  // namespace
