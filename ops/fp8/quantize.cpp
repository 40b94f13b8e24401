// fp8_quantize: one kernel that quantizes x with the state's current scale, records the
// block maxima of |x| in history[0] and writes scale_inv; then, for a whole step, the scale
// update (update_scale.cpp).
#include "ops/fp8/quantize.h"

#include <fmt/format.h>

#include "ops/common/op_arguments.h"
#include "ops/common/op_kernels.h"
#include "ops/fp8.h"
#include "ops/fp8/fp8_tiles.h"

namespace tilejit::ops {
namespace {

using namespace tilejit::dsl;

constexpr int64_t kBlock = 2048;  // elements per program

dsl::Kernel quantize_kernel(DType x_dtype, DType fp8) {
  std::vector<ir::Param> params{pointer_param("x", x_dtype)};
  for (ir::Param& p : fp8_output_params(fp8)) params.push_back(std::move(p));
  params.push_back(scalar_param("n", DType::i64));
  return define_op_kernel(fmt::format("fp8_quantize_{}_to_{}", dtype_name(x_dtype), dtype_name(fp8)), std::move(params),
                          {{"BLOCK", kBlock}}, [fp8](const Constants& c, std::span<const Tile> args) {
                            const Tile& x = args[0];
                            const Tile& n = args[1 + kFp8OutputParams];
                            Fp8OutputTiles out(args.subspan(1, kFp8OutputParams), fp8);
                            Tile offs = cast(program_id(0), DType::i64) * c["BLOCK"] +
                                        cast(arange(0, c["BLOCK"]), DType::i64);  // (BLOCK)
                            Tile mask = offs < n;
                            Tile v = cast(load(x + offs, mask), DType::f32);  // (BLOCK)
                            store(out.data() + offs, out.quantize(v), mask);
                            out.finish(amax_bits(v, mask));
                          });
}

}  // namespace

void launch_fp8_quantize(const Tensor& x, const Fp8ScalingState& state, const Fp8Tensor& out, Stream& stream) {
  const JitKernel& kernel =
      op_kernel(fmt::format("fp8_quantize/{}/{}", dtype_name(x.dtype()), dtype_name(state.dtype())),
                [&] { return quantize_kernel(x.dtype(), state.dtype()); });
  std::vector<KernelArg> args{KernelArg(x)};
  for (const KernelArg& a : fp8_output_args(out, state)) args.push_back(a);
  args.push_back(x.numel());
  const int64_t programs = std::max<int64_t>(1, (x.numel() + kBlock - 1) / kBlock);  // one writes scale_inv
  kernel.with().launch_args(stream, LaunchDims{{static_cast<uint32_t>(programs)}, {}}, args);
}

Fp8Tensor fp8_quantize(const Tensor& x, Fp8ScalingState& state, const Fp8QuantizeOptions& options, Stream* stream) {
  OpArguments args("fp8_quantize");
  args.dtype("x", x, {DType::f32, DType::f16, DType::bf16});
  args.contiguous("x", x);
  args.same_device("x", x, "the scaling state's scale", state.scale());
  Fp8Tensor out = fp8_output(x.device(), x.shape(), state);
  Stream& s = args.stream_for("x", x, stream);
  launch_fp8_quantize(x, state, out, s);
  if (options.update_scale) fp8_update_scale(state, &s);
  return out;
}

}  // namespace tilejit::ops
