// Tensor descriptors with outer dims: blocks of one (batch, head) matrix of a (B, S, N, H)
// tensor viewed as (B, N, S, H), through TMA (sm_90a: cp.async.bulk.tensor.4d) and through
// global loads and stores (sm_80). A block hanging past S or H reads zeros (not the next
// head's or batch's rows) and writes nothing there; a block at an outer index outside the
// tensor reads zeros and writes nothing. The rank is part of a kernel's specialization.
#include <gtest/gtest.h>

#include "../error_message.h"
#include "../ptx_dump.h"
#include "ops_test_util.h"

namespace tjops {
namespace {

using tilejit::testing_util::error_of;

constexpr int64_t kBatch = 2, kSeq = 37, kHeads = 3, kHeadDim = 40;

struct OuterCase {
  int64_t block_rows, block_cols;
  int32_t row_shift;
  const char* arch;
};

std::string case_name(const OuterCase& c) {
  return "block" + std::to_string(c.block_rows) + "x" + std::to_string(c.block_cols) + "_shift" +
         (c.row_shift < 0 ? "m" : "") + std::to_string(std::abs(c.row_shift)) + "_" + c.arch;
}

// The grid: block rows over S (one past it), every (batch, head) pair with one batch and one
// head past the tensor's, block columns over H (one past it).
struct Grid {
  int64_t row_blocks, pairs, col_blocks;
  Dim3 dims() const { return {uint32_t(row_blocks), uint32_t(pairs), uint32_t(col_blocks)}; }
};
Grid grid_of(const OuterCase& c) {
  return {kSeq / c.block_rows + 2, (kBatch + 1) * (kHeads + 1), kHeadDim / c.block_cols + 2};
}

// The tensor element a grid element (pair, r, col) stands for, or -1 outside the tensor.
int64_t source_index(const OuterCase& c, int64_t pair, int64_t r, int64_t col) {
  int64_t b = pair / (kHeads + 1), n = pair % (kHeads + 1), s = r + c.row_shift;
  if (b >= kBatch || n >= kHeads || s < 0 || s >= kSeq || col >= kHeadDim) return -1;
  return ((b * kSeq + s) * kHeads + n) * kHeadDim + col;
}

// Block (i, pair, j) of `src` at (b, n) = divmod(pair, HEADS), shifted by ROW_SHIFT rows, to
// the same block of `out` ((pairs, OUT_ROWS, OUT_COLS) row-major); with STORE the other way.
dsl::Kernel outer_block_kernel(bool store_blocks) {
  using namespace tilejit::dsl;
  return define_kernel(store_blocks ? "desc_outer_store" : "desc_outer_copy",
                       {"tensor", "plain", "HEADS", "OUT_ROWS", "OUT_COLS", "ROW_SHIFT"}, {},
                       [store_blocks](const Constants&, TensorDesc<bf16> tensor, Ptr<bf16> plain, Scalar<i32> heads,
                                      Scalar<i32> out_rows, Scalar<i32> out_cols, Scalar<i32> row_shift) {
                         ir::Shape tile = tensor.type().block_tile();
                         Tile r0 = program_id(0) * tile[0], pair = program_id(1), c0 = program_id(2) * tile[1];
                         std::vector<Operand> at = {pair / heads, pair % heads, r0 + row_shift, c0};
                         Tile rows = r0 + arange(0, tile[0]), cols = c0 + arange(0, tile[1]);
                         Tile ptrs = plain + pair * out_rows * out_cols + expand_dims(rows, 1) * out_cols +
                                     expand_dims(cols, 0);
                         if (store_blocks) desc_store(tensor, at, load(ptrs));
                         else store(ptrs, desc_load(tensor, at));
                       });
}

class DescriptorOuterDims : public ::testing::TestWithParam<OuterCase> {
 protected:
  Device& device() { return Device::by_name(std::string("emu:") + GetParam().arch); }
  // The (B, S, N, H) tensor's descriptor as (B, N, S, H).
  TensorDescriptor descriptor_of(const Tensor& t) {
    return TensorDescriptor::of(t.permute({0, 2, 1, 3}), {GetParam().block_rows, GetParam().block_cols});
  }
  void launch(const JitKernel& kernel, const TensorDescriptor& d, const Tensor& plain) {
    const OuterCase& c = GetParam();
    Grid g = grid_of(c);
    bind(kernel).launch(device().default_stream(), g.dims(), d, plain, int32_t(kHeads + 1),
                        int32_t(g.row_blocks * c.block_rows), int32_t(g.col_blocks * c.block_cols), c.row_shift);
  }
};

TEST_P(DescriptorOuterDims, BlocksReadOneMatrixAndZerosPastIt) {
  const OuterCase& c = GetParam();
  TJ_SEEDED_RNG(rng);
  Host src(DType::bf16, size_t(kBatch * kSeq * kHeads * kHeadDim));
  for (size_t i = 0; i < src.size(); ++i) src.set_raw(i, rng.bits());
  Tensor src_tensor = upload(src, {kBatch, kSeq, kHeads, kHeadDim}, device());
  Grid g = grid_of(c);
  int64_t out_rows = g.row_blocks * c.block_rows, out_cols = g.col_blocks * c.block_cols;
  Tensor out = poisoned(DType::bf16, {g.pairs * out_rows * out_cols}, device());
  static JitKernel kernel(outer_block_kernel(false));
  launch(kernel, descriptor_of(src_tensor), out);

  Host got = download(out);
  int bad = 0;
  for (int64_t pair = 0; pair < g.pairs; ++pair)
    for (int64_t r = 0; r < out_rows; ++r)
      for (int64_t col = 0; col < out_cols; ++col) {
        int64_t from = source_index(c, pair, r, col);
        uint64_t want = from < 0 ? 0 : src.raw(size_t(from));
        uint64_t have = got.raw(size_t((pair * out_rows + r) * out_cols + col));
        if (have != want && bad++ < 8)
          ADD_FAILURE() << "pair " << pair << " (" << r << ", " << col << ") = " << std::hex << have << ", want "
                        << want << (from < 0 ? " (outside the tensor)" : "");
      }
  EXPECT_EQ(bad, 0);
}

TEST_P(DescriptorOuterDims, BlocksWriteOneMatrixAndNothingPastIt) {
  const OuterCase& c = GetParam();
  TJ_SEEDED_RNG(rng);
  Grid g = grid_of(c);
  int64_t out_rows = g.row_blocks * c.block_rows, out_cols = g.col_blocks * c.block_cols;
  Host blocks(DType::bf16, size_t(g.pairs * out_rows * out_cols)), before(DType::bf16, size_t(kBatch * kSeq * kHeads * kHeadDim));
  for (size_t i = 0; i < blocks.size(); ++i) blocks.set_raw(i, rng.bits());
  for (size_t i = 0; i < before.size(); ++i) before.set_raw(i, rng.bits());
  Tensor dst = upload(before, {kBatch, kSeq, kHeads, kHeadDim}, device());
  static JitKernel kernel(outer_block_kernel(true));
  launch(kernel, descriptor_of(dst), upload(blocks, {}, device()));

  // Each tensor element is written by exactly the grid element that stands for it.
  Host want = before;
  for (int64_t pair = 0; pair < g.pairs; ++pair)
    for (int64_t r = 0; r < out_rows; ++r)
      for (int64_t col = 0; col < out_cols; ++col)
        if (int64_t to = source_index(c, pair, r, col); to >= 0)
          want.set_raw(size_t(to), blocks.raw(size_t((pair * out_rows + r) * out_cols + col)));
  Host got = download(dst);
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (got.raw(i) != want.raw(i) && bad++ < 8)
      ADD_FAILURE() << "element " << i << " = " << std::hex << got.raw(i) << ", want " << want.raw(i);
  EXPECT_EQ(bad, 0);
}

INSTANTIATE_TEST_SUITE_P(Emulator, DescriptorOuterDims,
                         ::testing::Values(OuterCase{16, 32, 0, "sm_90a"}, OuterCase{32, 64, -3, "sm_90a"},
                                           OuterCase{8, 16, 5, "sm_90a"}, OuterCase{16, 32, -3, "sm_80"},
                                           OuterCase{32, 64, 5, "sm_80"}),
                         [](const auto& info) { return case_name(info.param); });

// sm_90a copies a rank-4 block by one 4-d TMA copy per box, sm_80 by loads.
TEST(DescriptorOuterDimsLowering, Sm90CopiesByFourDimensionalTma) {
  Tensor src = Tensor::empty(Device::by_name("emu:sm_90a"), DType::bf16, {kBatch, kSeq, kHeads, kHeadDim});
  Tensor out = Tensor::empty(Device::by_name("emu:sm_90a"), DType::bf16, {1 << 16});
  TensorDescriptor d = TensorDescriptor::of(src.permute({0, 2, 1, 3}), {16, 64});
  JitKernel kernel(outer_block_kernel(false));
  std::vector<std::string> ptx = tilejit::testing_util::ptx_built_by([&] {
    bind(kernel).launch(Device::by_name("emu:sm_90a").default_stream(), {1, 1, 1}, d, out, int32_t(kHeads + 1),
                        int32_t(16), int32_t(64), int32_t(0));
  });
  ASSERT_EQ(ptx.size(), 1u);
  EXPECT_NE(ptx[0].find("cp.async.bulk.tensor.4d"), std::string::npos) << ptx[0];
  EXPECT_EQ(ptx[0].find("cp.async.bulk.tensor.2d"), std::string::npos);
}

TEST(DescriptorOuterDimsArguments, TheRankIsPartOfTheSpecialization) {
  Device& device = Device::by_name("emu:sm_90a");
  Tensor src = Tensor::empty(device, DType::bf16, {kBatch, kSeq, kHeads, kHeadDim});
  JitKernel kernel(outer_block_kernel(false));
  Tensor out = Tensor::empty(device, DType::bf16, {1 << 16});
  auto launch = [&](const TensorDescriptor& d) {
    bind(kernel).launch(device.default_stream(), {1, 1, 1}, d, out, int32_t(kHeads + 1), int32_t(16), int32_t(64),
                        int32_t(0));
  };
  launch(TensorDescriptor::of(src.permute({0, 2, 1, 3}), {16, 64}));
  EXPECT_EQ(bind(kernel).builds(), 1);
  // The same block of a rank-3 view: another kernel, which the rank-4 offsets do not fit.
  std::string e = error_of([&] { launch(TensorDescriptor::of(src.select(0, 0).permute({1, 0, 2}), {16, 64})); });
  EXPECT_NE(e.find("4 offsets for a descriptor of rank 3"), std::string::npos) << e;
}

TEST(DescriptorOuterDimsArguments, BrokenRulesAreNamed) {
  Device& device = Device::by_name("emu:sm_90a");
  Tensor src = Tensor::empty(device, DType::bf16, {kBatch, kSeq, kHeads, kHeadDim});
  TensorDescriptor d = TensorDescriptor::of(src.permute({0, 2, 1, 3}), {16, 32});
  EXPECT_EQ(d.describe(), "bf16[2, 3, 37, 40] (strides 4440, 40, 120) in blocks of 16x32");
  TensorDescriptor odd = d;
  odd.outer[1].stride = 36;  // 72 bytes
  EXPECT_NE(odd.problem().find("the stride of outer dim 1 (72 bytes) must be a multiple of 16 bytes"),
            std::string::npos)
      << odd.problem();
  TensorDescriptor empty = d;
  empty.outer[0].size = 0;
  EXPECT_NE(empty.problem().find("dims must be in [1,"), std::string::npos) << empty.problem();
  TensorDescriptor deep = d;
  deep.outer.resize(4, {1, 16});
  EXPECT_NE(deep.problem().find("4 outer dims: at most 3"), std::string::npos) << deep.problem();
  Tensor rank6 = Tensor::empty(device, DType::bf16, {1, 1, 1, 1, 16, 16});
  std::string e = error_of([&] { TensorDescriptor::of(rank6, {16, 16}); });
  EXPECT_NE(e.find("must have rank 2 to 5"), std::string::npos) << e;
}

}  // namespace
}  // namespace tjops
