// Blocks the CTAs of a thread-block cluster share (desc_load with ClusterShared): outside a
// producer's pipeline each CTA copies the whole block itself, in the row slices its tensor
// map's box holds (one per sharing CTA), bit for bit the block; kernels declare their cluster
// with the cluster_x / cluster_y constants, the launch runs them in it, and misuse is named.
#include <gtest/gtest.h>

#include "../error_message.h"
#include "ops_test_util.h"

namespace tjops {
namespace {

using namespace tilejit::dsl;
using tilejit::testing_util::error_of;

// The CTAs of a cluster along `axis` read the same block of `src`: block (x / CX, y) or
// (x, y / CY). CTA (x, y) writes it to block (x, y) of `out` (OUT_COLS columns).
template <DType D>
Kernel shared_block_copy_kernel(int axis) {
  return define_kernel("cluster_block_copy_" + name_of(D), {"src", "out", "OUT_COLS"}, {{"cluster_x", 1}, {"cluster_y", 1}},
                       [axis](const Constants& c, TensorDesc<D> src, Ptr<D> out, Scalar<i32> out_cols) {
                         int64_t bm = src.shape()[0], bn = src.shape()[1];
                         Tile x = program_id(0), y = program_id(1);
                         Tile bx = axis == 0 ? x / c["cluster_x"] : x, by = axis == 1 ? y / c["cluster_y"] : y;
                         Tile block = desc_load(src, {bx * bm, by * bn}, ClusterShared{axis});
                         Tile rows = x * bm + arange(0, bm), cols = y * bn + arange(0, bn);
                         store(out + expand_dims(rows, 1) * out_cols + expand_dims(cols, 0), block);
                       });
}

struct SharedCopyCase {
  DType dtype;
  int64_t block_rows, block_cols;
  int axis, ctas;  // the cluster's extent along the axis the block is shared on
};

template <DType D>
std::shared_ptr<LoadedKernel> run_shared_copy(const SharedCopyCase& c, const TensorDescriptor& desc, const Tensor& out,
                                              int64_t out_cols, Dim3 grid) {
  JitKernel kernel(shared_block_copy_kernel<D>(c.axis));
  BoundKernel bound = kernel.with({{c.axis == 0 ? "cluster_x" : "cluster_y", c.ctas}});
  bound.launch(emu().default_stream(), grid, desc, out, int32_t(out_cols));
  return bound.prepare(emu(), std::vector<KernelArg>{desc, out, int32_t(out_cols)});
}

void check_shared_copy(const SharedCopyCase& c) {
  SCOPED_TRACE(fmt::format("{} block {}x{} shared by {} CTAs along axis {}", name_of(c.dtype), c.block_rows,
                           c.block_cols, c.ctas, c.axis));
  TJ_SEEDED_RNG(rng);
  // Two blocks each way, the second hanging over the tensor's edges; the grid repeats each
  // along the cluster's axis.
  int64_t rows = c.block_rows + c.block_rows / 2 + 1, cols = c.block_cols + 3, stride = c.block_cols * 2;
  Host src(c.dtype, size_t(rows * stride));
  for (size_t i = 0; i < src.size(); ++i) src.set_raw(i, rng.bits());
  Tensor src_tensor = upload(src, {rows, stride}, emu());
  TensorDescriptor desc{src_tensor.data(), c.dtype, {rows, cols}, stride, {c.block_rows, c.block_cols}, {}};
  Dim3 grid{uint32_t(2 * (c.axis == 0 ? c.ctas : 1)), uint32_t(2 * (c.axis == 1 ? c.ctas : 1)), 1};
  int64_t out_rows = grid.x * c.block_rows, out_cols = grid.y * c.block_cols;
  Tensor out = poisoned(c.dtype, {out_rows * out_cols}, emu());
  std::shared_ptr<LoadedKernel> k;
  dispatch(c.dtype, [&](auto d) { k = run_shared_copy<decltype(d)::value>(c, desc, out, out_cols, grid); });
  const KernelReport& report = k->report();
  EXPECT_EQ(report.cluster, (Dim3{uint32_t(c.axis == 0 ? c.ctas : 1), uint32_t(c.axis == 1 ? c.ctas : 1), 1}));
  EXPECT_EQ(report.descriptor_row_slices, std::vector<int>{c.ctas});

  Host got = download(out);
  int bad = 0;
  for (int64_t r = 0; r < out_rows; ++r) {
    for (int64_t col = 0; col < out_cols; ++col) {
      int64_t bx = r / c.block_rows, by = col / c.block_cols;
      if (c.axis == 0) bx /= c.ctas;
      else by /= c.ctas;
      int64_t sr = bx * c.block_rows + r % c.block_rows, sc = by * c.block_cols + col % c.block_cols;
      uint64_t want = sr < rows && sc < cols ? src.raw(size_t(sr * stride + sc)) : 0;
      uint64_t have = got.raw(size_t(r * out_cols + col));
      if (have != want && bad++ < 8) ADD_FAILURE() << "out (" << r << ", " << col << ") = " << have << ", want " << want;
    }
  }
  EXPECT_EQ(bad, 0);
}

TEST(ClusterSharedBlocks, CopiedInRowSlicesBitForBit) {
  check_shared_copy({DType::bf16, 16, 64, 0, 2});   // 128-byte swizzle, two slices of 8 rows
  check_shared_copy({DType::f32, 16, 4, 0, 2});     // 16-byte rows: no swizzle
  check_shared_copy({DType::bf16, 32, 32, 1, 2});   // 64-byte swizzle, shared along y
  check_shared_copy({DType::i8, 64, 256, 0, 4});    // two 128-byte boxes per row, four slices of 16 rows
  check_shared_copy({DType::f16, 64, 16, 0, 8});    // 32-byte swizzle, eight slices of 8 rows
  check_shared_copy({DType::bf16, 16, 64, 0, 1});   // a cluster of one: the whole block in one box
}

// --- misuse ---------------------------------------------------------------------------------

std::string trace_error_with_block(const Kernel& k, const std::vector<std::pair<std::string, int64_t>>& constants,
                                   ir::Shape block) {
  std::vector<ir::ArgFacts> facts(k.params().size());
  facts[0].block = std::move(block);
  return error_of([&] { k.trace(k.constants(constants), facts); });
}

TEST(ClusterSharedBlocks, MisuseIsNamed) {
  Kernel copy = shared_block_copy_kernel<DType::bf16>(0);
  // Rows that do not split evenly, or into shares of fewer than 8 rows.
  std::string e = trace_error_with_block(copy, {{"cluster_x", 3}}, {16, 64});
  EXPECT_NE(e.find("a block of 16 rows cannot be shared by the cluster's 3 CTAs along axis 0"), std::string::npos) << e;
  e = trace_error_with_block(copy, {{"cluster_x", 4}}, {16, 64});
  EXPECT_NE(e.find("a block of 16 rows cannot be shared by the cluster's 4 CTAs"), std::string::npos) << e;
  e = trace_error_with_block(copy, {{"cluster_x", 9}}, {16, 64});
  EXPECT_NE(e.find("cluster_x must be in [1, 8], got 9"), std::string::npos) << e;
  e = trace_error_with_block(copy, {{"cluster_x", 4}, {"cluster_y", 4}}, {64, 64});
  EXPECT_NE(e.find("a cluster of 4 x 4 x 1 CTAs exceeds the portable 8"), std::string::npos) << e;

  Kernel bad_axis = define_kernel("bad_axis", {"src"}, {}, [](const Constants&, TensorDesc<DType::f32> src) {
    (void)desc_load(src, {0, 0}, ClusterShared{3});
  });
  e = trace_error_with_block(bad_axis, {}, {8, 8});
  EXPECT_NE(e.find("cluster axis 3 is not 0 (x), 1 (y) or 2 (z)"), std::string::npos) << e;

  Kernel two_axes = define_kernel("two_axes", {"src", "out"}, {{"cluster_x", 2}, {"cluster_y", 2}},
                                  [](const Constants&, TensorDesc<DType::f32> src, Ptr<DType::f32> out) {
                                    Tile first = desc_load(src, {0, 0}, ClusterShared{0});
                                    Tile second = desc_load(src, {16, 0}, ClusterShared{1});
                                    store(out + expand_dims(arange(0, 16), 1) * 4 + expand_dims(arange(0, 4), 0),
                                          first + second);
                                  });
  e = trace_error_with_block(two_axes, {}, {16, 4});
  EXPECT_NE(e.find("the blocks of one descriptor are shared along one cluster axis: 1 here, 0 at"), std::string::npos)
      << e;
}

TEST(ClusterSharedBlocks, ClustersNeedSm90) {
  Device& sm80 = Device::by_name("emu:sm_80");
  Tensor src = Tensor::empty(sm80, DType::bf16, {16, 64});
  Tensor out = Tensor::empty(sm80, DType::bf16, {2 * 16 * 64});
  TensorDescriptor desc = TensorDescriptor::of(src, {16, 64});
  JitKernel kernel(shared_block_copy_kernel<DType::bf16>(0));
  std::string e = error_of([&] {
    kernel.with({{"cluster_x", 2}}).launch(sm80.default_stream(), {2, 1, 1}, desc, out, int32_t(64));
  });
  EXPECT_NE(e.find("thread-block clusters (2 x 1 x 1 CTAs) need sm_90 or newer; the target is sm_80"),
            std::string::npos)
      << e;
}

TEST(ClusterSharedBlocks, TheLaunchRunsTheKernelsClusters) {
  Tensor src = Tensor::empty(emu(), DType::bf16, {16, 64});
  Tensor out = Tensor::empty(emu(), DType::bf16, {4 * 16 * 64});
  TensorDescriptor desc = TensorDescriptor::of(src, {16, 64});
  JitKernel kernel(shared_block_copy_kernel<DType::bf16>(0));
  BoundKernel clustered = kernel.with({{"cluster_x", 2}});
  // The kernel's own clusters, given or not, run; others are refused, as is a grid they do not tile.
  clustered.launch_args(emu().default_stream(), {{2, 1, 1}, {2, 1, 1}}, std::vector<KernelArg>{desc, out, int32_t(64)});
  std::string e = error_of([&] {
    clustered.launch_args(emu().default_stream(), {{4, 1, 1}, {4, 1, 1}}, std::vector<KernelArg>{desc, out, int32_t(64)});
  });
  EXPECT_NE(e.find("clusters of (4, 1, 1) CTAs given; the kernel is compiled for clusters of (2, 1, 1)"),
            std::string::npos)
      << e;
  e = error_of([&] { clustered.launch(emu().default_stream(), {3, 1, 1}, desc, out, int32_t(64)); });
  EXPECT_NE(e.find("the kernel runs in clusters of (2, 1, 1) CTAs, which do not tile the grid (3, 1, 1)"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace tjops
