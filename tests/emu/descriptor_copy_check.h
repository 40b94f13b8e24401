// The checks of desc_load's and desc_store's blocks (tests/emu/tensor_descriptor_test.cpp,
// and on a GPU tests/gpu/tensor_descriptor_gpu_test.cpp): a kernel copies every block of a
// random strided tensor, shifted so that blocks hang over every edge, out to plain memory;
// each element must be the tensor's, bit for bit, or zero outside it. Another writes blocks
// of plain memory into a tensor the same way: what lies outside the tensor is not written.
#pragma once

#include <cstdlib>
#include <string>

#include "ops_test_util.h"

namespace tjops {

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

inline std::string case_name(const CopyCase& c) {
  auto signed_name = [](int32_t v) { return (v < 0 ? "m" : "") + std::to_string(std::abs(v)); };
  return name_of(c.dtype) + "_block" + std::to_string(c.block_rows) + "x" + std::to_string(c.block_cols) + "_tensor" +
         std::to_string(c.rows) + "x" + std::to_string(c.cols) + "_stride" + std::to_string(c.row_stride) + "_shift" +
         signed_name(c.row_shift) + "_" + signed_name(c.col_shift) + "_" + c.arch;
}

inline void PrintTo(const CopyCase& c, std::ostream* os) { *os << case_name(c); }

template <DType D>
void run_copy(const CopyCase& c, const Tensor& src, const Tensor& out, int64_t out_cols, Dim3 grid, Device& device) {
  static JitKernel kernel(block_copy_kernel<D>());
  TensorDescriptor desc{src.data(), D, {c.rows, c.cols}, c.row_stride, {c.block_rows, c.block_cols}, {}};
  bind(kernel).launch(device.default_stream(), grid, desc, out, int32_t(out_cols), c.row_shift, c.col_shift);
}

// desc_load's blocks of a random tensor, each copied out by the kernel, bit for bit.
inline void check_descriptor_copy(const CopyCase& c, Device& device) {
  TJ_SEEDED_RNG(rng);
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

// Writes block (i, j) of `blocks` (row-major, BLOCKS_COLS columns) to the block of `dst` at
// (i, j), shifted by (ROW_SHIFT, COL_SHIFT) elements.
template <DType D>
dsl::Kernel block_store_kernel() {
  using namespace tilejit::dsl;
  return define_kernel("desc_block_store_" + name_of(D), {"dst", "blocks", "BLOCKS_COLS", "ROW_SHIFT", "COL_SHIFT"}, {},
                       [](const Constants&, TensorDesc<D> dst, Ptr<D> blocks, Scalar<i32> blocks_cols,
                          Scalar<i32> row_shift, Scalar<i32> col_shift) {
                         int64_t bm = dst.shape()[0], bn = dst.shape()[1];
                         Tile r0 = program_id(0) * bm, c0 = program_id(1) * bn;
                         Tile rows = r0 + arange(0, bm), cols = c0 + arange(0, bn);
                         Tile block = load(blocks + expand_dims(rows, 1) * blocks_cols + expand_dims(cols, 0));
                         desc_store(dst, {r0 + row_shift, c0 + col_shift}, block);
                       });
}

// desc_store's blocks into a tensor of random bits: each element the tensor has is the
// block's that covers it, bit for bit; the row padding of a strided tensor and the elements
// no block covers keep their bits.
inline void check_descriptor_store(const CopyCase& c, Device& device) {
  TJ_SEEDED_RNG(rng);
  auto blocks = [](int64_t n, int64_t b) { return (n + b - 1) / b + 1; };
  Dim3 grid{uint32_t(blocks(c.rows, c.block_rows)), uint32_t(blocks(c.cols, c.block_cols)), 1};
  int64_t block_rows = grid.x * c.block_rows, block_cols = grid.y * c.block_cols;
  Host source(c.dtype, size_t(block_rows * block_cols)), before(c.dtype, size_t(c.rows * c.row_stride));
  for (size_t i = 0; i < source.size(); ++i) source.set_raw(i, rng.bits());
  for (size_t i = 0; i < before.size(); ++i) before.set_raw(i, rng.bits());
  Tensor dst = upload(before, {c.rows, c.row_stride}, device);
  Tensor source_tensor = upload(source, {}, device);
  dispatch(c.dtype, [&](auto d) {
    constexpr DType D = decltype(d)::value;
    static JitKernel kernel(block_store_kernel<D>());
    TensorDescriptor desc{dst.data(), D, {c.rows, c.cols}, c.row_stride, {c.block_rows, c.block_cols}, {}};
    bind(kernel).launch(device.default_stream(), grid, desc, source_tensor, int32_t(block_cols), c.row_shift,
                        c.col_shift);
  });

  Host got = download(dst);
  int bad = 0;
  for (int64_t r = 0; r < c.rows; ++r) {
    for (int64_t col = 0; col < c.row_stride; ++col) {
      int64_t br = r - c.row_shift, bc = col - c.col_shift;  // in `source`
      bool written = col < c.cols && br >= 0 && br < block_rows && bc >= 0 && bc < block_cols;
      uint64_t want = written ? source.raw(size_t(br * block_cols + bc)) : before.raw(size_t(r * c.row_stride + col));
      uint64_t have = got.raw(size_t(r * c.row_stride + col));
      if (have != want && bad++ < 8)
        ADD_FAILURE() << case_name(c) << ": dst (" << r << ", " << col << ") = " << std::hex << have << ", want "
                      << want << (written ? "" : " (no block writes it)");
    }
  }
  EXPECT_EQ(bad, 0) << case_name(c);
}

// Every swizzle width, several boxes per block, strided tensors, blocks over every edge; for
// each of `archs` (the emulator's targets; a GPU names none). TMA takes column offsets of whole
// 16 bytes only; the last two cases' are not, and take the path without TMA on sm_90 too.
inline std::vector<CopyCase> copy_cases(std::initializer_list<const char*> archs = {"sm_90a", "sm_80"}) {
  std::vector<CopyCase> cases;
  for (const char* arch : archs) {
    cases.push_back({DType::f32, 8, 4, 37, 13, 16, -3, 4, arch});          // 16-byte rows: no swizzle
    cases.push_back({DType::bf16, 16, 16, 45, 30, 40, 5, -8, arch});       // 32-byte swizzle
    cases.push_back({DType::bf16, 32, 32, 70, 50, 56, 0, 0, arch});        // 64-byte swizzle
    cases.push_back({DType::f16, 16, 64, 33, 100, 104, -1, 8, arch});      // 128-byte swizzle
    cases.push_back({DType::bf16, 8, 256, 20, 300, 304, 2, -16, arch});    // four 128-byte boxes per block
    // Boxes of fewer than 8 rows: the second starts mid-way through the 128-byte swizzle's
    // 1024-byte cycle, and the swizzle follows the address, not the box.
    cases.push_back({DType::bf16, 4, 128, 18, 140, 144, 1, -8, arch});
    cases.push_back({DType::f32, 2, 128, 9, 130, 132, 0, 4, arch});
    cases.push_back({DType::i8, 64, 128, 100, 200, 208, 3, 16, arch});     // 8-bit, 128-byte swizzle
    cases.push_back({DType::f8e4m3, 32, 64, 40, 70, 80, -40, -64, arch});  // everything outside for some blocks
    cases.push_back({DType::i32, 2, 16, 5, 16, 16, 0, 0, arch});           // whole tensor, 64-byte rows
    cases.push_back({DType::bf16, 16, 16, 45, 30, 40, 5, -7, arch});       // columns of 14 bytes
    cases.push_back({DType::f8e4m3, 32, 64, 40, 70, 80, 3, 1, arch});      // columns of 1 byte
  }
  return cases;
}

}  // namespace tjops
