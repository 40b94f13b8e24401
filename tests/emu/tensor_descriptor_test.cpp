// Tensor descriptors on the emulator: desc_load's blocks, bit for bit, through TMA (sm_90a:
// mbarriers, swizzled boxes, zero fill outside the tensor) and through global loads (sm_80),
// for every swizzle width, several boxes per block, strided tensors and blocks hanging over
// every edge; and the launch API's checks of descriptor arguments.
#include <gtest/gtest.h>

#include <functional>

#include "../error_message.h"
#include "../ptx_dump.h"
#include "descriptor_copy_check.h"

namespace tjops {
namespace {

using tilejit::testing_util::error_of;

class DescriptorCopy : public ::testing::TestWithParam<CopyCase> {};

TEST_P(DescriptorCopy, BlocksMatchTheTensorBitForBit) {
  const CopyCase& c = GetParam();
  check_descriptor_copy(c, Device::by_name(std::string("emu:") + c.arch));
}

INSTANTIATE_TEST_SUITE_P(Emulator, DescriptorCopy, ::testing::ValuesIn(copy_cases()),
                         [](const auto& info) { return case_name(info.param); });

class DescriptorStore : public ::testing::TestWithParam<CopyCase> {};

TEST_P(DescriptorStore, BlocksLandInTheTensorBitForBit) {
  const CopyCase& c = GetParam();
  check_descriptor_store(c, Device::by_name(std::string("emu:") + c.arch));
}

INSTANTIATE_TEST_SUITE_P(Emulator, DescriptorStore, ::testing::ValuesIn(copy_cases()),
                         [](const auto& info) { return case_name(info.param); });

// On sm_90 a block leaves by TMA, one bulk async-group waited for before the scratch space is
// reused; elsewhere by plain stores. The column offset here (-8 bf16s) is a whole number of 16
// bytes, which the specialization knows: no path without TMA is compiled on sm_90a.
TEST(DescriptorStoreLowering, Sm90StoresByTma) {
  for (const char* arch : {"sm_90a", "sm_80"}) {
    SCOPED_TRACE(arch);
    std::vector<std::string> ptx = tilejit::testing_util::ptx_built_by(
        [&] { check_descriptor_store({DType::bf16, 16, 64, 45, 100, 104, 3, -8, arch}, Device::by_name(std::string("emu:") + arch)); });
    ASSERT_EQ(ptx.size(), 1u);
    bool tma = std::string(arch) == "sm_90a";
    for (const char* wanted : {"cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group", "cp.async.bulk.commit_group",
                               "cp.async.bulk.wait_group.read", "fence.proxy.async.shared::cta"})
      EXPECT_EQ(ptx[0].find(wanted) != std::string::npos, tma) << wanted;
    EXPECT_EQ(ptx[0].find("st.global") != std::string::npos, !tma);
  }
}

// Calls `check(b, rng)` for b = 7 and b = 3, the second part of a column a + b with a = 1: 8
// bf16s (16 bytes: TMA) and 4 (not), of which the specialization knows nothing (b odd either
// way: one specialization serves both).
void for_each_column_part(const std::function<void(int32_t, Rng&)>& check) {
  for (int32_t b : {7, 3}) {
    SCOPED_TRACE(b);
    TJ_SEEDED_RNG(rng);
    check(b, rng);
  }
}

// The GPU faults on a TMA copy whose column offset is not a whole number of 16 bytes. Where the
// compiler cannot prove a block's offset is, sm_90a code tests it at run time and takes TMA
// only where it holds: here the column is a + b (for_each_column_part), 8 bf16s (TMA) in one
// launch and 4 (global loads and stores) in the other. Both move the block bit for bit.
TEST(DescriptorLowering, AColumnNotProvenAlignedIsTestedAtRunTime) {
  using namespace tilejit::dsl;
  dsl::Kernel kernel = define_kernel(
      "desc_at_column", {"src", "dst", "A", "B"}, {},
      [](const Constants&, TensorDesc<DType::bf16> src, TensorDesc<DType::bf16> dst, Scalar<i32> a, Scalar<i32> b) {
        desc_store(dst, {0, a + b}, desc_load(src, {0, a + b}));
      });
  JitKernel jit(std::move(kernel));
  Device& device = Device::by_name("emu:sm_90a");
  for_each_column_part([&](int32_t b, Rng& rng) {
    Host src(DType::bf16, 16 * 64), dst(DType::bf16, 16 * 64);
    for (size_t i = 0; i < src.size(); ++i) src.set_raw(i, rng.bits()), dst.set_raw(i, rng.bits());
    Tensor src_tensor = upload(src, {16, 64}, device), dst_tensor = upload(dst, {16, 64}, device);
    std::vector<std::string> ptx = tilejit::testing_util::ptx_built_by([&] {
      jit.launch(device.default_stream(), {1, 1, 1}, TensorDescriptor::of(src_tensor, {16, 32}),
                 TensorDescriptor::of(dst_tensor, {16, 32}), int32_t(1), b);
    });
    ASSERT_EQ(ptx.size(), b == 7 ? 1u : 0u) << "one specialization for both";
    for (const std::string& text : ptx)
      for (const char* wanted : {"cp.async.bulk.tensor.2d.shared::cluster.global", "cp.async.bulk.tensor.2d.global.shared::cta",
                                 "ld.global", "st.global"})
        EXPECT_NE(text.find(wanted), std::string::npos) << wanted;
    Host got = download(dst_tensor);
    const int64_t column = 1 + b;
    int bad = 0;
    for (int64_t r = 0; r < 16; ++r)
      for (int64_t c = 0; c < 64; ++c) {
        const size_t at = size_t(r * 64 + c);
        const uint64_t want = c >= column && c < column + 32 ? src.raw(at) : dst.raw(at);
        if (got.raw(at) != want && bad++ < 8) ADD_FAILURE() << "dst (" << r << ", " << c << ")";
      }
    EXPECT_EQ(bad, 0);
  });
}

// A dot's accumulator stored as bf16 (sm_90a): with mma.sync's fragments (32 rows) or wgmma's
// (64 rows, several warps and N blocks), the block goes to shared memory by stmatrix; small
// integers keep every product exact, so each element must be the reference's.
TEST(DescriptorStoreLowering, AccumulatorFragmentsLeaveByStmatrix) {
  using namespace tilejit::dsl;
  dsl::Kernel kernel = define_kernel(
      "dot_to_desc", {"a", "b", "out"}, {{"K", 32}},
      [](const Constants& c, Ptr<DType::bf16> a, Ptr<DType::bf16> b, TensorDesc<DType::bf16> out) {
        int64_t m = out.shape()[0], n = out.shape()[1], k = c["K"];
        Tile x = load(a + expand_dims(arange(0, m), 1) * k + expand_dims(arange(0, k), 0));
        Tile y = load(b + expand_dims(arange(0, k), 1) * n + expand_dims(arange(0, n), 0));
        desc_store(out, {0, 0}, cast(dot(x, y, zeros({m, n}, DType::f32)), DType::bf16));
      });
  JitKernel jit(std::move(kernel));
  struct Shape {
    int64_t m, n;
    int warps;
  };
  for (Shape shape : {Shape{32, 32, 4}, Shape{64, 128, 4}, Shape{128, 64, 8}}) {
    SCOPED_TRACE(fmt::format("{}x{}, {} warps", shape.m, shape.n, shape.warps));
    const int64_t k = 32;
    TJ_SEEDED_RNG(rng);
    Host a(DType::bf16, size_t(shape.m * k)), b(DType::bf16, size_t(k * shape.n));
    for (size_t i = 0; i < a.size(); ++i) a.set(i, LD(int(rng.bits() % 5) - 2));
    for (size_t i = 0; i < b.size(); ++i) b.set(i, LD(int(rng.bits() % 5) - 2));
    Tensor out = poisoned(DType::bf16, {shape.m, shape.n});
    std::vector<std::string> ptx = tilejit::testing_util::ptx_built_by([&] {
      bind(jit, {{"num_warps", shape.warps}})
          .launch(emu().default_stream(), {1, 1, 1}, upload(a), upload(b), TensorDescriptor::of(out, {shape.m, shape.n}));
    });
    ASSERT_EQ(ptx.size(), 1u);
    EXPECT_NE(ptx[0].find("stmatrix.sync.aligned.m8n8.x4.shared.b16"), std::string::npos);
    Host got = download(out);
    int bad = 0;
    for (int64_t i = 0; i < shape.m; ++i)
      for (int64_t j = 0; j < shape.n; ++j) {
        LD want = 0;
        for (int64_t q = 0; q < k; ++q) want += a.get(size_t(i * k + q)) * b.get(size_t(q * shape.n + j));
        if (got.get(size_t(i * shape.n + j)) != want && bad++ < 8)
          ADD_FAILURE() << "out (" << i << ", " << j << ") = " << double(got.get(size_t(i * shape.n + j))) << ", want "
                        << double(want);
      }
    EXPECT_EQ(bad, 0);
  }
}

// A dot in a loop reads its blocks through the loop pipeline, which stages by TMA only a block
// whose column offset is proven a whole number of 16 bytes: here B's (0) but not A's (k + a +
// b, for_each_column_part), which is loaded as outside a loop, its column tested at run time:
// 8 bf16s (TMA in the loop body) in one launch, 4 (global loads) in the other. A and B of
// (64, 64) small integers: the product of A's columns from the shift on (those past the end
// reading zero) and B's rows from it is exact.
TEST(DescriptorLowering, APipelinedBlockAtAColumnNotProvenAlignedIsNotStagedByTma) {
  using namespace tilejit::dsl;
  dsl::Kernel kernel = define_kernel(
      "desc_dot_shifted", {"a", "b", "out", "A", "B"}, {{"num_stages", 3}},
      [](const Constants&, TensorDesc<DType::bf16> a, TensorDesc<DType::bf16> b, Ptr<DType::f32> out, Scalar<i32> x,
         Scalar<i32> y) {
        Tile acc = for_range(0, 64, 32, zeros({64, 64}, DType::f32), [&](Tile k, Tile acc) {
          return dot(desc_load(a, {0, k + x + y}), desc_load(b, {k + x + y, 0}), acc);
        });
        store(out + expand_dims(arange(0, 64), 1) * 64 + expand_dims(arange(0, 64), 0), acc);
      });
  JitKernel jit(std::move(kernel));
  Device& device = Device::by_name("emu:sm_90a");
  for_each_column_part([&](int32_t y, Rng& rng) {
    Host a(DType::bf16, 64 * 64), b(DType::bf16, 64 * 64);
    for (size_t i = 0; i < a.size(); ++i) a.set(i, LD(int(rng.bits() % 5) - 2)), b.set(i, LD(int(rng.bits() % 5) - 2));
    Tensor a_tensor = upload(a, {64, 64}, device), b_tensor = upload(b, {64, 64}, device);
    Tensor out = poisoned(DType::f32, {64 * 64}, device);
    jit.launch(device.default_stream(), {1, 1, 1}, TensorDescriptor::of(a_tensor, {64, 32}),
               TensorDescriptor::of(b_tensor, {32, 64}), out, int32_t(1), y);
    Host got = download(out);
    int bad = 0;
    for (int64_t i = 0; i < 64; ++i)
      for (int64_t j = 0; j < 64; ++j) {
        LD want = 0;
        for (int64_t q = 1 + y; q < 64; ++q) want += a.get(size_t(i * 64 + q)) * b.get(size_t(q * 64 + j));
        if (got.get(size_t(i * 64 + j)) != want && bad++ < 8)
          ADD_FAILURE() << "out (" << i << ", " << j << ") = " << double(got.get(size_t(i * 64 + j))) << ", want "
                        << double(want);
      }
    EXPECT_EQ(bad, 0);
  });
}

TEST(DescriptorTracing, AStoredBlockHasTheDescriptorsShapeAndDtype) {
  using namespace tilejit::dsl;
  dsl::Kernel k = define_kernel("desc_store_misuse", {"dst"}, {}, [](const Constants&, TensorDesc<DType::f32> dst) {
    desc_store(dst, {0, 0}, zeros({8, 16}, DType::f32));
  });
  std::vector<ir::ArgFacts> facts(1);
  facts[0].block = {8, 8};
  std::string e = error_of([&] { k.trace(k.constants(), facts); });
  EXPECT_NE(e.find("desc_store: the block must be a tile<8x8xf32> (the descriptor's block), got tile<8x16xf32>"),
            std::string::npos)
      << e;
}

// --- the launch API's checks ---------------------------------------------------------------

struct DescriptorArguments : ::testing::Test {
  JitKernel kernel{block_copy_kernel<DType::bf16>()};
  Tensor src = Tensor::empty(emu(), DType::bf16, {64, 64});
  Tensor out = Tensor::empty(emu(), DType::bf16, {64 * 64});
  TensorDescriptor desc = TensorDescriptor::of(src, {16, 16});
  std::string launch_error(const TensorDescriptor& d) {
    return error_of([&] { kernel.launch(stream(), {1, 1, 1}, d, out, int32_t(64), int32_t(0), int32_t(0)); });
  }
};

TEST_F(DescriptorArguments, APointerWhereADescriptorIsExpectedIsNamed) {
  std::string e = error_of([&] { kernel.launch(stream(), {1, 1, 1}, src, out, int32_t(64), int32_t(0), int32_t(0)); });
  EXPECT_NE(e.find("argument 0 ('src') must be a bf16 tensor descriptor, got a bf16 pointer"), std::string::npos) << e;
}

TEST_F(DescriptorArguments, ADescriptorOfAnotherDtypeIsNamed) {
  TensorDescriptor f32 = desc;
  f32.dtype = DType::f32;
  EXPECT_NE(launch_error(f32).find("must be a bf16 tensor descriptor, got an f32 tensor descriptor"), std::string::npos);
}

TEST_F(DescriptorArguments, BrokenRulesAreNamed) {
  TensorDescriptor misaligned = desc;
  misaligned.data = static_cast<std::byte*>(desc.data) + 2;
  EXPECT_NE(launch_error(misaligned).find("is not 16-byte aligned"), std::string::npos);
  TensorDescriptor odd_stride = desc;
  odd_stride.row_stride = 68;  // 136 bytes
  EXPECT_NE(launch_error(odd_stride).find("row stride (136 bytes) must be a multiple of 16 bytes"), std::string::npos);
  TensorDescriptor short_stride = desc;
  short_stride.row_stride = 32;
  EXPECT_NE(launch_error(short_stride).find("the row stride is smaller than a row"), std::string::npos);
  TensorDescriptor narrow = desc;
  narrow.block = {16, 4};  // 8-byte rows
  EXPECT_NE(launch_error(narrow).find("a block row must hold at least 16 bytes, got 4 bf16 elements"), std::string::npos);
  TensorDescriptor uneven = desc;
  uneven.block = {24, 16};
  EXPECT_NE(launch_error(uneven).find("block rows and columns must be powers of two up to 256, got [24x16]"), std::string::npos);
  TensorDescriptor empty = desc;
  empty.shape = {0, 64};
  EXPECT_NE(launch_error(empty).find("dims must be in [1,"), std::string::npos);
}

TEST_F(DescriptorArguments, OfRefusesTensorsWithStridedColumns) {
  Tensor transposed = src.permute({1, 0});
  std::string e = error_of([&] { TensorDescriptor::of(transposed, {16, 16}); });
  EXPECT_NE(e.find("column stride 64; a descriptor's columns must be contiguous"), std::string::npos) << e;
}

TEST_F(DescriptorArguments, EachBlockShapeIsItsOwnSpecialization) {
  BoundKernel bound = kernel.with();
  TensorDescriptor wide = desc;
  wide.block = {16, 32};
  for (const TensorDescriptor* d : {&desc, &wide, &desc})
    bound.launch(stream(), {1, 1, 1}, *d, out, int32_t(64), int32_t(0), int32_t(0));
  EXPECT_EQ(bound.builds(), 2);
}

TEST(DescriptorTracing, AKernelTracedWithoutABlockShapeSaysWhatIsMissing) {
  dsl::Kernel k = block_copy_kernel<DType::f16>();
  std::string e = error_of([&] { k.trace(k.constants(), k.aligned_facts()); });
  EXPECT_NE(e.find("descriptor parameter 'src' needs its block shape"), std::string::npos) << e;
}

TEST(DescriptorTracing, ADescriptorCanOnlyBeLoadedFrom) {
  using namespace tilejit::dsl;
  dsl::Kernel k = define_kernel("desc_misuse", {"src"}, {}, [](const Constants&, TensorDesc<DType::f32> src) {
    Tile twice = src + src;
    (void)twice;
  });
  std::vector<ir::ArgFacts> facts(1);
  facts[0].block = {8, 8};
  std::string e = error_of([&] { k.trace(k.constants(), facts); });
  EXPECT_NE(e.find("a tensor descriptor (desc<8x8xf32>) can only be used by desc_load and desc_store"), std::string::npos)
      << e;
}

}  // namespace
}  // namespace tjops
