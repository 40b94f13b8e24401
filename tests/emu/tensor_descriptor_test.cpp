// Tensor descriptors on the emulator: desc_load's blocks, bit for bit, through TMA (sm_90a:
// mbarriers, swizzled boxes, zero fill outside the tensor) and through global loads (sm_80),
// for every swizzle width, several boxes per block, strided tensors and blocks hanging over
// every edge; and the launch API's checks of descriptor arguments.
#include <gtest/gtest.h>

#include "../error_message.h"
#include "ops_test_util.h"

namespace tjops {
namespace {

using tilejit::testing_util::error_of;

// Copies block (i, j) of `src`, shifted by (ROW_SHIFT, COL_SHIFT) elements, to block (i, j)
// of `out` (row-major, OUT_COLS columns).
template <DType D>
dsl::Kernel block_copy_kernel() {
  using namespace tilejit::dsl;
  return define_kernel("desc_block_copy_" + name_of(D), {"src", "out", "OUT_COLS", "ROW_SHIFT", "COL_SHIFT"}, {},
                       [](const Constants&, TensorDesc<D> src, Ptr<D> out, Scalar<i32> out_cols, Scalar<i32> row_shift,
                          Scalar<i32> col_shift) {
                         int64_t bm = src.shape()[0], bn = src.shape()[1];
                         Tile r0 = program_id(0) * bm, c0 = program_id(1) * bn;
                         Tile block = desc_load(src, {r0 + row_shift, c0 + col_shift});
                         Tile rows = r0 + arange(0, bm), cols = c0 + arange(0, bn);
                         store(out + expand_dims(rows, 1) * out_cols + expand_dims(cols, 0), block);
                       });
}

struct CopyCase {
  DType dtype;
  int64_t block_rows, block_cols;
  int64_t rows, cols, row_stride;
  int32_t row_shift, col_shift;
  const char* arch;
};

std::string case_name(const CopyCase& c) {
  auto signed_name = [](int32_t v) { return (v < 0 ? "m" : "") + std::to_string(std::abs(v)); };
  return name_of(c.dtype) + "_block" + std::to_string(c.block_rows) + "x" + std::to_string(c.block_cols) + "_tensor" +
         std::to_string(c.rows) + "x" + std::to_string(c.cols) + "_stride" + std::to_string(c.row_stride) + "_shift" +
         signed_name(c.row_shift) + "_" + signed_name(c.col_shift) + "_" + c.arch;
}

void PrintTo(const CopyCase& c, std::ostream* os) { *os << case_name(c); }

template <DType D>
void run_copy(const CopyCase& c, const Tensor& src, const Tensor& out, int64_t out_cols, Dim3 grid, Device& device) {
  static JitKernel kernel(block_copy_kernel<D>());
  TensorDescriptor desc{src.data(), D, {c.rows, c.cols}, c.row_stride, {c.block_rows, c.block_cols}};
  bind(kernel).launch(device.default_stream(), grid, desc, out, int32_t(out_cols), c.row_shift, c.col_shift);
}

class DescriptorCopy : public ::testing::TestWithParam<CopyCase> {};

TEST_P(DescriptorCopy, BlocksMatchTheTensorBitForBit) {
  const CopyCase& c = GetParam();
  TJ_SEEDED_RNG(rng);
  Device& device = Device::by_name(std::string("emu:") + c.arch);
  Host src(c.dtype, size_t(c.rows * c.row_stride));  // any bits: the copy moves them unchanged
  for (size_t i = 0; i < src.size(); ++i) src.set_raw(i, rng.bits());
  // One block row and column of the grid lies wholly outside the tensor.
  auto blocks = [](int64_t n, int64_t b) { return (n + b - 1) / b + 1; };
  Dim3 grid{uint32_t(blocks(c.rows, c.block_rows)), uint32_t(blocks(c.cols, c.block_cols)), 1};
  int64_t out_rows = grid.x * c.block_rows, out_cols = grid.y * c.block_cols;
  Tensor out = poisoned(c.dtype, {out_rows * out_cols}, device);
  Tensor src_tensor = upload(src, {c.rows, c.row_stride}, device);
  dispatch(c.dtype, [&](auto d) { run_copy<decltype(d)::value>(c, src_tensor, out, out_cols, grid, device); });

  Host got = download(out);
  int bad = 0;
  for (int64_t r = 0; r < out_rows; ++r) {
    for (int64_t col = 0; col < out_cols; ++col) {
      int64_t sr = r + c.row_shift, sc = col + c.col_shift;
      bool inside = sr >= 0 && sr < c.rows && sc >= 0 && sc < c.cols;
      uint64_t want = inside ? src.raw(size_t(sr * c.row_stride + sc)) : 0;
      uint64_t have = got.raw(size_t(r * out_cols + col));
      if (have != want && bad++ < 8)
        ADD_FAILURE() << case_name(c) << ": out (" << r << ", " << col << ") = " << std::hex << have << ", want " << want
                      << (inside ? "" : " (outside the tensor)");
    }
  }
  EXPECT_EQ(bad, 0) << case_name(c);
}

std::vector<CopyCase> copy_cases() {
  std::vector<CopyCase> cases;
  for (const char* arch : {"sm_90a", "sm_80"}) {
    cases.push_back({DType::f32, 8, 4, 37, 13, 16, -3, 2, arch});          // 16-byte rows: no swizzle
    cases.push_back({DType::bf16, 16, 16, 45, 30, 40, 5, -7, arch});       // 32-byte swizzle
    cases.push_back({DType::bf16, 32, 32, 70, 50, 56, 0, 0, arch});        // 64-byte swizzle
    cases.push_back({DType::f16, 16, 64, 33, 100, 104, -1, 3, arch});      // 128-byte swizzle
    cases.push_back({DType::bf16, 8, 256, 20, 300, 304, 2, -5, arch});     // four 128-byte boxes per block
    cases.push_back({DType::i8, 64, 128, 100, 200, 208, 3, 1, arch});      // 8-bit, 128-byte swizzle
    cases.push_back({DType::f8e4m3, 32, 64, 40, 70, 80, -40, -70, arch});  // everything outside for some blocks
    cases.push_back({DType::i32, 2, 16, 5, 16, 16, 0, 0, arch});           // whole tensor, 64-byte rows
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Emulator, DescriptorCopy, ::testing::ValuesIn(copy_cases()),
                         [](const auto& info) { return case_name(info.param); });

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
  EXPECT_NE(launch_error(uneven).find("block dims must be powers of two up to 256, got [24x16]"), std::string::npos);
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
  EXPECT_NE(e.find("a tensor descriptor (desc<8x8xf32>) can only be read with desc_load"), std::string::npos) << e;
}

}  // namespace
}  // namespace tjops
