#include "ops/collectives/chunk_transpose.h"

#include "dsl/kernel.h"
#include "runtime/jit.h"

namespace tilejit::ops {
namespace {

using namespace tilejit::dsl;

constexpr int64_t kBlock = 1024;  // units per program

// One program copies BLOCK consecutive units of dst; i64 indices, so tensors past 2^31 units work.
template <DType Unit>
Kernel swap_leading_axes_kernel() {
  return define_kernel(fmt::format("swap_leading_axes_{}", dtype_name(Unit)), {"src", "dst", "a", "b", "m", "total"},
                       {{"BLOCK", kBlock}},
                       [](const Constants& c, Ptr<Unit> src, Ptr<Unit> dst, Scalar<i64> a, Scalar<i64> b, Scalar<i64> m,
                          Scalar<i64> total) {
                         Tile j = cast(program_id(0), i64) * c["BLOCK"] +
                                  cast(arange(0, c["BLOCK"]), i64);  // (BLOCK) dst index
                         Tile mask = j < total;
                         Tile column = j % m;
                         Tile row = j / m;  // dst row (bi, ai) of the (b, a) rows
                         Tile ai = row % a;
                         Tile bi = row / a;
                         Tile from = (ai * b + bi) * m + column;  // src (ai, bi, column)
                         store(dst + j, load(src + from, mask), mask);
                       });
}

template <DType Unit>
const JitKernel& swap_leading_axes_jit() {
  static const JitKernel kernel(swap_leading_axes_kernel<Unit>());
  return kernel;
}

}  // namespace

void swap_leading_axes(const void* src, void* dst, int64_t a, int64_t b, int64_t m, DType dtype, Stream& stream) {
  const int64_t row_bytes = m * dtype_storage_bytes(dtype);
  const auto addresses = reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst);
  auto fits = [&](int64_t unit) { return row_bytes % unit == 0 && addresses % static_cast<uintptr_t>(unit) == 0; };
  const int64_t unit = fits(8) ? 8 : fits(4) ? 4 : 1;
  const int64_t m_units = row_bytes / unit, total = a * b * m_units;
  if (total == 0) return;
  const JitKernel& kernel = unit == 8   ? swap_leading_axes_jit<DType::i64>()
                            : unit == 4 ? swap_leading_axes_jit<DType::i32>()
                                        : swap_leading_axes_jit<DType::i8>();
  const DType unit_dtype = unit == 8 ? DType::i64 : unit == 4 ? DType::i32 : DType::i8;
  const auto grid = static_cast<uint32_t>((total + kBlock - 1) / kBlock);
  kernel.launch(stream, {grid}, KernelArg::pointer(const_cast<void*>(src), unit_dtype),
                KernelArg::pointer(dst, unit_dtype), a, b, m_units, total);
}

}  // namespace tilejit::ops
