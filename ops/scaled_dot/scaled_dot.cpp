// scaled_dot: the arguments checked (dimensions.h), each operand and scale viewed as the
// kernel's (batch, rows, cols) (grouped_view.h), and the tiled kernel launched (kernel.h).
#include "ops/common/op_kernels.h"
#include "ops/scaled_dot.h"
#include "ops/scaled_dot/dimensions.h"
#include "ops/scaled_dot/kernel.h"

namespace tilejit::ops {

using namespace scaled_dot_detail;

namespace {

// An operand and its scale grouped as `groups`, whose group `k_group` holds the contracting
// dims. The kernel needs one block size along the merged K: from the last contracting dim back,
// dims with a single scale element join the block whole, and the first dim with several closes
// it (block * dim / scale dim); the scale is repeated along any contracting dims before that
// one, so each of their indices gets its own scale element (a copy of the scale, not of data).
ScaledOperandView operand_view(const Tensor& operand, const Tensor* scale, const std::array<std::vector<int>, 3>& groups,
                               size_t k_group, Stream& stream) {
  ScaledOperandView view{grouped_view(operand, groups, {}, stream), std::nullopt, 0};
  if (!scale) return view;
  const std::vector<int>& contracting = groups[k_group];
  std::vector<int64_t> repeat(static_cast<size_t>(operand.rank()), 1);
  int64_t block = 1;
  size_t closing = 0;
  for (size_t i = contracting.size(); i-- > 0;) {
    int d = contracting[i];
    if (scale->dim(d) == 1) {
      block *= operand.dim(d);
      continue;
    }
    block *= operand.dim(d) / scale->dim(d);
    closing = i;
    break;
  }
  for (size_t i = 0; i < closing; ++i) {
    int d = contracting[i];
    repeat[static_cast<size_t>(d)] = operand.dim(d) / scale->dim(d);
  }
  view.scale = grouped_view(*scale, groups, repeat, stream);
  view.block = block;
  return view;
}

}  // namespace

Tensor scaled_dot(const Tensor& lhs, const Tensor& rhs, const std::optional<Tensor>& lhs_scale,
                  const std::optional<Tensor>& rhs_scale, const ScaledDotOptions& options, Stream* stream) {
  OpArguments args("scaled_dot");
  const Tensor* ls = lhs_scale ? &*lhs_scale : nullptr;
  const Tensor* rs = rhs_scale ? &*rhs_scale : nullptr;
  ScaledDotDims dims = check_scaled_dot(args, lhs, rhs, ls, rs, options);
  Stream& s = args.stream_for("lhs", lhs, stream);
  Tensor out = Tensor::empty(lhs.device(), options.preferred_element_type, dims.out_shape);
  if (out.numel() == 0) return out;
  // An empty contracting dim: the sums are empty (zeros) and the (empty) scales scale nothing.
  bool empty_sum = false;
  for (int d : dims.lhs.contracting) empty_sum = empty_sum || lhs.dim(d) == 0;
  if (empty_sum) ls = rs = nullptr;
  ScaledOperandView l = operand_view(lhs, ls, {dims.lhs.batch, dims.lhs.free, dims.lhs.contracting}, 2, s);
  ScaledOperandView r = operand_view(rhs, rs, {dims.rhs.batch, dims.rhs.contracting, dims.rhs.free}, 1, s);
  run_scaled_dot_kernel(l, r, out, s);
  return out;
}

}  // namespace tilejit::ops
