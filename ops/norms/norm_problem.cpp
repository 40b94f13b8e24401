// The argument checks of the norm ops, made before any device work, and the row tiling.
#include "ops/norms/norm_problem.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tilejit::ops {
namespace {

constexpr int64_t kTileElements = 2048;  // a whole-row tile holds about this many elements
constexpr int64_t kMaxBlockRows = 64;

// x's checks, shared by forward and backward: dtype, rank, layout, hidden size.
RowShape check_x(const OpArguments& args, const Tensor& x) {
  args.dtype("x", x, {DType::f32, DType::f16, DType::bf16});
  if (x.rank() < 1) args.fail("x must have rank 1 or more (the last dimension is normalized), but is {}", x.describe());
  args.contiguous("x", x);
  const int64_t hidden = x.dim(-1);
  if (hidden < 1) args.fail("x's hidden size (its last dimension) must be at least 1, but x is {}", x.describe());
  if (hidden > kMaxHidden)
    args.fail("x's hidden size {} is larger than {}, beyond the kernels' 32-bit indexing", hidden, kMaxHidden);
  RowShape shape;
  shape.hidden = static_cast<int32_t>(hidden);
  shape.leading.assign(x.shape().begin(), x.shape().end() - 1);
  shape.rows = 1;
  for (int64_t d : shape.leading) shape.rows *= d;
  return shape;
}

// gamma: (hidden), f32 or x's dtype.
void check_gamma(const OpArguments& args, const Tensor& x, const Tensor& gamma, const RowShape& shape) {
  if (x.dtype() == DType::f32)
    args.dtype("gamma", gamma, {DType::f32});
  else
    args.dtype("gamma", gamma, {DType::f32, x.dtype()});
  args.shape("gamma", gamma, {shape.hidden});
  args.contiguous("gamma", gamma);
  args.same_device("x", x, "gamma", gamma);
}

void check_zero_centered(const OpArguments& args, NormKind kind, bool zero_centered_gamma) {
  if (kind == NormKind::rms && zero_centered_gamma)
    args.fail("zero_centered_gamma is not supported with RMSNorm (only LayerNorm uses 1 + gamma)");
}

// mean / rsigma: f32 of x's leading shape.
void check_statistic(const OpArguments& args, const char* name, const Tensor& t, const Tensor& x,
                     const RowShape& shape) {
  args.dtype(name, t, {DType::f32});
  args.shape(name, t, shape.leading);
  args.contiguous(name, t);
  args.same_device("x", x, name, t);
}

}  // namespace

RowShape check_norm_forward(const OpArguments& args, NormKind kind, const Tensor& x, const Tensor& gamma,
                            const Tensor* beta, const NormOptions& options) {
  RowShape shape = check_x(args, x);
  check_gamma(args, x, gamma, shape);
  if (beta) {
    args.same_dtype("gamma", gamma, "beta", *beta);
    args.shape("beta", *beta, {shape.hidden});
    args.contiguous("beta", *beta);
    args.same_device("x", x, "beta", *beta);
  }
  check_zero_centered(args, kind, options.zero_centered_gamma);
  if (!(options.eps >= 0) || !std::isfinite(options.eps))
    args.fail("eps must be finite and not negative, but is {}", options.eps);
  if (options.fp8_state) args.same_device("x", x, "fp8_state's scale", options.fp8_state->scale());
  return shape;
}

RowShape check_norm_backward(const OpArguments& args, NormKind kind, const Tensor& dy, const Tensor& x,
                             const Tensor* mean, const Tensor& rsigma, const Tensor& gamma,
                             const NormBackwardOptions& options) {
  RowShape shape = check_x(args, x);
  args.same_dtype("dy", dy, "x", x);
  if (dy.shape() != x.shape())
    args.fail("dy must have x's shape {}, but is {}", shape_string(x.shape()), dy.describe());
  args.contiguous("dy", dy);
  args.same_device("x", x, "dy", dy);
  if (mean) check_statistic(args, "mean", *mean, x, shape);
  check_statistic(args, "rsigma", rsigma, x, shape);
  check_gamma(args, x, gamma, shape);
  check_zero_centered(args, kind, options.zero_centered_gamma);
  return shape;
}

std::vector<std::pair<std::string, int64_t>> RowTiling::constants() const {
  return {{"BLOCK_ROWS", block_rows},
          {"BLOCK_H", block_hidden},
          {"WHOLE_ROW", whole_row ? 1 : 0},
          {"num_warps", num_warps}};
}

RowTiling row_tiling(int32_t hidden) {
  RowTiling t;
  int64_t pow2 = 1;
  while (pow2 < hidden) pow2 *= 2;
  t.whole_row = pow2 <= kMaxWholeRow;
  t.block_hidden = t.whole_row ? pow2 : kLoopBlock;
  t.block_rows = t.whole_row ? std::clamp<int64_t>(kTileElements / pow2, 1, kMaxBlockRows) : 1;
  t.num_warps = static_cast<int>(std::clamp<int64_t>(t.block_rows * t.block_hidden / 256, 1, 8));
  return t;
}

}  // namespace tilejit::ops
