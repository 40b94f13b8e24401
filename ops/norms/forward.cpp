// layer_norm and rms_norm: checks, outputs, and one launch of the forward kernel (then the
// fp8 scale update when the fused quantization asks for a whole step).
#include "ops/common/op_kernels.h"
#include "ops/fp8/fp8_tiles.h"
#include "ops/norms.h"
#include "ops/norms/norm_kernels.h"
#include "ops/norms/norm_launch.h"

namespace tilejit::ops {

NormOutput make_norm_output(NormKind kind, const Tensor& x, const RowShape& shape, const NormOptions& options) {
  Device& device = x.device();
  NormOutput out{Tensor::empty(device, x.dtype(), x.shape()), {}, {}, {}};
  if (options.store_statistics) {
    if (kind == NormKind::layer) out.mean = Tensor::empty(device, DType::f32, shape.leading);
    out.rsigma = Tensor::empty(device, DType::f32, shape.leading);
  }
  if (options.fp8_state) out.y_fp8 = fp8_output(device, x.shape(), *options.fp8_state);
  return out;
}

void launch_norm_forward(NormKind kind, const Tensor& x, const Tensor& gamma, const Tensor* beta,
                         const NormOptions& options, const RowShape& shape, const NormOutput& out, Stream& stream) {
  NormForwardConfig config{kind, x.dtype(), gamma.dtype(), options.store_statistics, {}};
  std::vector<KernelArg> args{KernelArg(x), KernelArg(gamma)};
  if (beta) args.emplace_back(*beta);
  args.emplace_back(out.y);
  if (out.mean) args.emplace_back(*out.mean);
  if (out.rsigma) args.emplace_back(*out.rsigma);
  if (options.fp8_state) {
    config.fp8 = options.fp8_state->dtype();
    for (const KernelArg& a : fp8_output_args(*out.y_fp8, *options.fp8_state)) args.push_back(a);
  }
  args.emplace_back(shape.rows);
  args.emplace_back(shape.hidden);
  args.emplace_back(options.eps);

  const RowTiling tiling = row_tiling(shape.hidden);
  std::vector<std::pair<std::string, int64_t>> constants = tiling.constants();
  constants.emplace_back("ZERO_CENTERED", options.zero_centered_gamma ? 1 : 0);
  const JitKernel& kernel = op_kernel(config.name(), [&] { return norm_forward_kernel(config); });
  // At least one program: it writes the fp8 output's scale_inv when there are no rows.
  const auto programs = static_cast<uint32_t>(std::max<int64_t>(1, ceil_div(shape.rows, tiling.block_rows)));
  kernel.with(constants).launch_args(stream, LaunchDims{{programs}, {}}, args);
  if (options.fp8_state && options.fp8_options.update_scale) fp8_update_scale(*options.fp8_state, &stream);
}

namespace {

NormOutput norm_forward(NormKind kind, const Tensor& x, const Tensor& gamma, const Tensor* beta,
                        const NormOptions& options, Stream* stream) {
  OpArguments args(kind == NormKind::layer ? "layer_norm" : "rms_norm");
  const RowShape shape = check_norm_forward(args, kind, x, gamma, beta, options);
  NormOutput out = make_norm_output(kind, x, shape, options);
  launch_norm_forward(kind, x, gamma, beta, options, shape, out, args.stream_for("x", x, stream));
  return out;
}

}  // namespace

NormOutput layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, const NormOptions& options,
                      Stream* stream) {
  return norm_forward(NormKind::layer, x, gamma, &beta, options, stream);
}

NormOutput rms_norm(const Tensor& x, const Tensor& gamma, const NormOptions& options, Stream* stream) {
  return norm_forward(NormKind::rms, x, gamma, nullptr, options, stream);
}

}  // namespace tilejit::ops
