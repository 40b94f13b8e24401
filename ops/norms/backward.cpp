// layer_norm_backward and rms_norm_backward: checks, outputs, and the launches (row terms when
// rows are walked in blocks, then dx with the partial rows, then their sums).
#include <algorithm>

#include "ops/common/op_kernels.h"
#include "ops/norms.h"
#include "ops/norms/norm_kernels.h"
#include "ops/norms/norm_launch.h"

namespace tilejit::ops {
namespace {

constexpr int64_t kMaxPartialRows = 512;  // programs of the dx kernel, at most
constexpr int64_t kSumBlock = 64;         // columns per program of the partial sums

}  // namespace

NormBackwardPlan plan_norm_backward(NormKind kind, Stream& stream, const RowShape& shape) {
  const RowTiling tiling = row_tiling(shape.hidden);
  // Rows per program: a multiple of the tile's rows, so that the partition (and with it the
  // order of every sum) follows from the shape alone.
  const int64_t rows_per_program =
      tiling.block_rows * std::max<int64_t>(1, ceil_div(ceil_div(shape.rows, tiling.block_rows), kMaxPartialRows));
  const int64_t programs = std::max<int64_t>(1, ceil_div(shape.rows, rows_per_program));
  NormBackwardPlan plan{
      tiling, rows_per_program, programs, Tensor::scratch(stream, DType::f32, {programs, shape.hidden}), {}, {}};
  if (kind == NormKind::layer) plan.partial_dbeta = Tensor::scratch(stream, DType::f32, {programs, shape.hidden});
  if (!tiling.whole_row && shape.rows > 0) plan.row_terms = Tensor::scratch(stream, DType::f32, {shape.rows, 2});
  return plan;
}

NormGradients make_norm_gradients(NormKind kind, const Tensor& x, const Tensor& gamma) {
  Device& device = x.device();
  NormGradients out{
      Tensor::empty(device, x.dtype(), x.shape()), Tensor::empty(device, gamma.dtype(), gamma.shape()), {}};
  if (kind == NormKind::layer) out.dbeta = Tensor::empty(device, gamma.dtype(), gamma.shape());
  return out;
}

void launch_norm_backward(NormKind kind, const Tensor& dy, const Tensor& x, const Tensor* mean, const Tensor& rsigma,
                          const Tensor& gamma, const NormBackwardOptions& options, const RowShape& shape,
                          const NormBackwardPlan& plan, const NormGradients& out, Stream& stream) {
  const NormBackwardConfig config{kind, x.dtype(), gamma.dtype()};
  std::vector<std::pair<std::string, int64_t>> constants = plan.tiling.constants();
  constants.emplace_back("ZERO_CENTERED", options.zero_centered_gamma ? 1 : 0);
  std::vector<KernelArg> forward_args{KernelArg(dy), KernelArg(x)};
  if (mean) forward_args.emplace_back(*mean);
  forward_args.emplace_back(rsigma);
  forward_args.emplace_back(gamma);

  if (plan.row_terms) {
    std::vector<KernelArg> args = forward_args;
    args.emplace_back(*plan.row_terms);
    args.emplace_back(shape.rows);
    args.emplace_back(shape.hidden);
    const JitKernel& k = op_kernel(config.name("row_terms"), [&] { return norm_backward_row_terms_kernel(config); });
    k.with(constants).launch_args(stream, LaunchDims{{static_cast<uint32_t>(shape.rows)}, {}}, args);
  }

  std::vector<KernelArg> args = forward_args;
  args.emplace_back(out.dx);
  args.emplace_back(plan.partial_dgamma);
  if (plan.partial_dbeta) args.emplace_back(*plan.partial_dbeta);
  // Read only when rows are walked in blocks; null otherwise.
  args.push_back(plan.row_terms ? KernelArg(*plan.row_terms) : KernelArg::pointer(nullptr, DType::f32));
  args.emplace_back(shape.rows);
  args.emplace_back(shape.hidden);
  args.emplace_back(plan.rows_per_program);
  const auto column_blocks = static_cast<uint32_t>(ceil_div(shape.hidden, plan.tiling.block_hidden));
  const JitKernel& dx_kernel = op_kernel(config.name("dx"), [&] { return norm_backward_dx_kernel(config); });
  dx_kernel.with(constants).launch_args(stream, LaunchDims{{column_blocks, static_cast<uint32_t>(plan.programs)}, {}},
                                        args);

  std::vector<KernelArg> sum_args{KernelArg(plan.partial_dgamma)};
  if (plan.partial_dbeta) sum_args.emplace_back(*plan.partial_dbeta);
  sum_args.emplace_back(out.dgamma);
  if (out.dbeta) sum_args.emplace_back(*out.dbeta);
  sum_args.emplace_back(plan.programs);
  sum_args.emplace_back(shape.hidden);
  const JitKernel& sum_kernel =
      op_kernel(config.name("partial_sums"), [&] { return norm_partial_sums_kernel(config); });
  sum_kernel.with({{"BLOCK", kSumBlock}})
      .launch_args(stream, LaunchDims{{static_cast<uint32_t>(ceil_div(shape.hidden, kSumBlock))}, {}}, sum_args);
}

namespace {

NormGradients norm_backward(NormKind kind, const Tensor& dy, const Tensor& x, const Tensor* mean, const Tensor& rsigma,
                            const Tensor& gamma, const NormBackwardOptions& options, Stream* stream) {
  OpArguments args(kind == NormKind::layer ? "layer_norm_backward" : "rms_norm_backward");
  const RowShape shape = check_norm_backward(args, kind, dy, x, mean, rsigma, gamma, options);
  Stream& s = args.stream_for("x", x, stream);
  const NormBackwardPlan plan = plan_norm_backward(kind, s, shape);
  NormGradients out = make_norm_gradients(kind, x, gamma);
  launch_norm_backward(kind, dy, x, mean, rsigma, gamma, options, shape, plan, out, s);
  return out;
}

}  // namespace

NormGradients layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rsigma,
                                  const Tensor& gamma, const NormBackwardOptions& options, Stream* stream) {
  return norm_backward(NormKind::layer, dy, x, &mean, rsigma, gamma, options, stream);
}

NormGradients rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& rsigma, const Tensor& gamma,
                                const NormBackwardOptions& options, Stream* stream) {
  return norm_backward(NormKind::rms, dy, x, nullptr, rsigma, gamma, options, stream);
}

}  // namespace tilejit::ops
