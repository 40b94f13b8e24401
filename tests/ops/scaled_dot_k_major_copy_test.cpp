// The copy that gives scaled_dot an fp8 rhs stored along K (ops/scaled_dot/k_major_copy.h): its
// bytes against the rhs's, the product the kernel makes from it against the one from the rhs as
// stored, and when scaled_dot takes it.
#include "ops/scaled_dot/grouped_view.h"
#include "ops/scaled_dot/k_major_copy.h"
#include "tests/ops/scaled_dot_test_util.h"

namespace tjsdot {
namespace {

using tilejit::ops::scaled_dot_detail::grouped_view;
using tilejit::ops::scaled_dot_detail::GroupedView;
using tilejit::ops::scaled_dot_detail::k_major_copy;
using tilejit::ops::scaled_dot_detail::plan_scaled_dot;
using tilejit::ops::scaled_dot_detail::run_scaled_dot_kernel;
using tilejit::ops::scaled_dot_detail::ScaledOperandView;
using tilejit::ops::scaled_dot_detail::transposes_rhs_ahead;

constexpr DType e4m3 = DType::f8e4m3, e8m0 = DType::e8m0, bf16 = DType::bf16;

TEST(KMajorCopy, TransposesEveryTileOfAStridedRhs) {
  TJ_SEEDED_RNG(rng);
  // (2, 100, 70) inside (2, 104, 80): rows and batches apart by more than their lengths, and
  // neither K nor N a whole number of the copy's tiles.
  const int64_t batch = 2, k = 100, n = 70, row_stride = 80, batch_stride = 104 * 80;
  HostTensor stored = random_operand(e4m3, {batch, 104, 80}, rng);
  GroupedView rhs{stored.upload(), {batch, k, n}, {batch_stride, row_stride, 1}, false};
  GroupedView copy = k_major_copy(rhs, stream());
  EXPECT_EQ(copy.size, rhs.size);
  EXPECT_EQ(copy.stride, (std::array<int64_t, 3>{n * k, 1, k}));
  ASSERT_EQ(copy.storage.shape(), (std::vector<int64_t>{batch, n, k}));
  Host got = download(copy.storage);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const auto from = static_cast<size_t>(b * batch_stride + i * row_stride + j);
        const auto to = static_cast<size_t>((b * n + j) * k + i);
        ASSERT_EQ(got.raw(to), stored.values.raw(from)) << "batch " << b << ", k " << i << ", n " << j;
      }
}

// The kernel reading the copy along K computes the same products in the same order as reading
// the rhs as stored: the results agree bit for bit.
TEST(KMajorCopy, GivesTheKernelTheSameProduct) {
  TJ_SEEDED_RNG(rng);
  Device& device = Device::by_name("emu:sm_90a");
  ScaledDotCall c;
  make_operand(c.lhs, c.lhs_scale, e4m3, e8m0, {1, 160, 128}, {1, 1, 32}, rng);
  make_operand(c.rhs, c.rhs_scale, e4m3, e8m0, {1, 128, 144}, {1, 32, 1}, rng);
  const std::array<std::vector<int>, 3> lhs_groups{{{0}, {1}, {2}}}, rhs_groups{{{0}, {1}, {2}}};
  Stream& s = device.default_stream();
  auto view = [&](const HostTensor& data, const HostTensor& scale, const std::array<std::vector<int>, 3>& groups) {
    return ScaledOperandView{grouped_view(data.upload(device), groups, {}, s),
                             grouped_view(scale.upload(device), groups, {}, s), 32};
  };
  ScaledOperandView lhs = view(c.lhs, *c.lhs_scale, lhs_groups), rhs = view(c.rhs, *c.rhs_scale, rhs_groups);
  ScaledOperandView rhs_along_k{k_major_copy(rhs.data, s), rhs.scale, rhs.block};
  Tensor as_stored = poisoned(bf16, {1, 160, 144}, device), along_k = poisoned(bf16, {1, 160, 144}, device);
  run_scaled_dot_kernel(lhs, rhs, as_stored, s);
  run_scaled_dot_kernel(lhs, rhs_along_k, along_k, s);
  s.synchronize();
  Host a = download(as_stored), b = download(along_k);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a.raw(i), b.raw(i)) << "element " << i;
  // And both are the product.
  Reference ref = reference_scaled_dot(c.lhs, c.rhs, &*c.lhs_scale, &*c.rhs_scale, default_numbers(3));
  expect_scaled("rhs along K", b.values(), ref.sum, allowed_error(ref, bf16, false, true), 1.0);
}

TEST(KMajorCopy, TakenOnlyWhereItPays) {
  Tensor bytes = Tensor::empty(emu(), e4m3, {1});
  auto rhs = [&](int64_t k, int64_t n, bool along_n) {  // (1, K, N): only its sizes and strides count
    using Strides = std::array<int64_t, 3>;
    return GroupedView{bytes, {1, k, n}, along_n ? Strides{k * n, n, 1} : Strides{k * n, 1, k}, false};
  };
  auto plan = [](DType lhs, DType rhs, int cc) { return plan_scaled_dot(lhs, rhs, 32, 32, 8192, 8192, 8192, cc); };
  EXPECT_TRUE(transposes_rhs_ahead(plan(e4m3, e4m3, 90), rhs(8192, 8192, true), 8192, 90));
  EXPECT_TRUE(transposes_rhs_ahead(plan(e4m3, e4m3, 90), rhs(4096, 4096, true), 4096, 90));
  EXPECT_FALSE(transposes_rhs_ahead(plan(e4m3, e4m3, 90), rhs(8192, 8192, true), 1024, 90));  // few row blocks
  EXPECT_FALSE(transposes_rhs_ahead(plan(e4m3, e4m3, 90), rhs(1024, 1024, true), 8192, 90));  // a small rhs
  EXPECT_FALSE(transposes_rhs_ahead(plan(e4m3, e4m3, 90), rhs(8192, 8192, false), 8192, 90));  // already along K
  // Where the products are not fp8 wgmma's: sm_89 and sm_80, and a bf16 lhs (the rhs widened).
  EXPECT_FALSE(transposes_rhs_ahead(plan(e4m3, e4m3, 89), rhs(8192, 8192, true), 8192, 89));
  EXPECT_FALSE(transposes_rhs_ahead(plan(e4m3, e4m3, 80), rhs(8192, 8192, true), 8192, 80));
  EXPECT_FALSE(transposes_rhs_ahead(plan(bf16, e4m3, 90), rhs(8192, 8192, true), 8192, 90));
}

}  // namespace
}  // namespace tjsdot
