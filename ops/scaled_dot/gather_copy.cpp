#include "ops/scaled_dot/gather_copy.h"

#include <fmt/format.h>

#include "ops/common/op_kernels.h"

namespace tilejit::ops::scaled_dot_detail {
namespace {

using namespace tilejit::dsl;

constexpr int64_t kBlock = 1024;  // dst elements per program

// Parameters: src, dst, total, then (size, src stride, repeat) of each dst dim; i64 indices.
// The elements move as they are: loads and stores of `dtype`, no arithmetic.
Kernel gather_copy_kernel(DType dtype, int rank) {
  std::vector<ir::Param> params = {pointer_param("src", dtype), pointer_param("dst", dtype),
                                   scalar_param("total", DType::i64)};
  for (int d = 0; d < rank; ++d) {
    params.push_back(scalar_param(fmt::format("size{}", d), DType::i64));
    params.push_back(scalar_param(fmt::format("stride{}", d), DType::i64));
    params.push_back(scalar_param(fmt::format("repeat{}", d), DType::i64));
  }
  return define_op_kernel(
      fmt::format("scaled_dot_gather_copy_{}_rank{}", dtype_name(dtype), rank), std::move(params),
      {{"BLOCK", kBlock}}, [rank](const Constants& c, std::span<const Tile> p) {
        Tile j = cast(program_id(0), i64) * c["BLOCK"] + cast(arange(0, c["BLOCK"]), i64);  // (BLOCK) dst index
        Tile mask = j < p[2];
        Tile rest = j;
        Tile from = zeros({c["BLOCK"]}, i64);  // (BLOCK) src offset
        for (int d = rank - 1; d >= 0; --d) {
          const Tile& size = p[3 + 3 * d];
          Tile index = rest % size;
          rest = rest / size;
          from = from + index / p[5 + 3 * d] * p[4 + 3 * d];
        }
        store(p[1] + j, load(p[0] + from, mask), mask);
      });
}

}  // namespace

void gather_copy(const Tensor& src, const std::vector<int64_t>& src_strides, const std::vector<int64_t>& repeat,
                 const Tensor& dst, Stream& stream) {
  const int rank = dst.rank();
  TJ_CHECK(dst.is_contiguous() && src.dtype() == dst.dtype());
  TJ_CHECK(static_cast<int>(src_strides.size()) == rank && static_cast<int>(repeat.size()) == rank);
  const int64_t total = dst.numel();
  if (total == 0) return;
  const JitKernel& kernel = op_kernel(fmt::format("scaled_dot/gather_copy/{}/{}", dtype_name(dst.dtype()), rank),
                                      [&] { return gather_copy_kernel(dst.dtype(), rank); });
  std::vector<KernelArg> args = {KernelArg(src), KernelArg(dst), KernelArg(total)};
  for (int d = 0; d < rank; ++d) {
    args.emplace_back(dst.dim(d));
    args.emplace_back(src_strides[static_cast<size_t>(d)]);
    args.emplace_back(repeat[static_cast<size_t>(d)]);
  }
  const auto grid = static_cast<uint32_t>((total + kBlock - 1) / kBlock);
  kernel.with().launch_args(stream, LaunchDims{{grid, 1, 1}, {}}, args);
}

}  // namespace tilejit::ops::scaled_dot_detail
