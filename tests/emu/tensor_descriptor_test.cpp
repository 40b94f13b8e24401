// Tensor descriptors on the emulator: desc_load's blocks, bit for bit, through TMA (sm_90a:
// mbarriers, swizzled boxes, zero fill outside the tensor) and through global loads (sm_80),
// for every swizzle width, several boxes per block, strided tensors and blocks hanging over
// every edge; and the launch API's checks of descriptor arguments.
#include <gtest/gtest.h>

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
// reused; elsewhere by plain stores.
TEST(DescriptorStoreLowering, Sm90StoresByTma) {
  for (const char* arch : {"sm_90a", "sm_80"}) {
    SCOPED_TRACE(arch);
    std::vector<std::string> ptx = tilejit::testing_util::ptx_built_by(
        [&] { check_descriptor_store({DType::bf16, 16, 64, 45, 100, 104, 3, -5, arch}, Device::by_name(std::string("emu:") + arch)); });
    ASSERT_EQ(ptx.size(), 1u);
    bool tma = std::string(arch) == "sm_90a";
    for (const char* wanted : {"cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group", "cp.async.bulk.commit_group",
                               "cp.async.bulk.wait_group.read", "fence.proxy.async.shared::cta"})
      EXPECT_EQ(ptx[0].find(wanted) != std::string::npos, tma) << wanted;
  }
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
