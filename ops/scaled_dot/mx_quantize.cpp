// mx_quantize: the argument checks and the kernel. One program quantizes BLOCKS consecutive
// blocks of 32 elements (x viewed as (blocks, 32)): each block's amax, its scale byte by the MX
// rule (mx_scale.h), and the data clip(x / scale, -448, 448) rounded to f8e4m3.
#include <limits>

#include "ops/common/op_arguments.h"
#include "ops/common/op_kernels.h"
#include "ops/scaled_dot.h"
#include "ops/scaled_dot/mx_quantize.h"
#include "ops/scaled_dot/mx_scale.h"

namespace tilejit::ops {

using namespace scaled_dot_detail;

namespace {

using namespace tilejit::dsl;

constexpr int64_t kMxBlock = 32;  // elements per scale
constexpr int64_t kBlocksPerProgram = 64;

Kernel mx_quantize_kernel(DType x_dtype) {
  return define_op_kernel(
      "mx_quantize",
      {pointer_param("x", x_dtype), pointer_param("data", DType::f8e4m3), pointer_param("scales", DType::e8m0),
       scalar_param("blocks", DType::i64)},
      {{"BLOCKS", kBlocksPerProgram}}, [](const Constants& c, std::span<const Tile> p) {
        const double inf = std::numeric_limits<double>::infinity();
        Tile block = cast(program_id(0), i64) * c["BLOCKS"] + cast(arange(0, c["BLOCKS"]), i64);  // (BLOCKS)
        Tile in_range = block < p[3];
        Tile offsets = expand_dims(block, 1) * kMxBlock + cast(expand_dims(arange(0, kMxBlock), 0), i64);  // (BLOCKS, 32)
        Tile mask = expand_dims(in_range, 1);  // (BLOCKS, 1)
        Tile x = cast(load(p[0] + offsets, mask), f32);
        Tile magnitude = abs(x);
        Tile amax = max(where(magnitude <= std::numeric_limits<float>::max(), magnitude, inf), 1);  // NaN counts as inf
        Tile byte = mx_scale_byte(amax / 448.0);                                           // (BLOCKS)
        Tile q = minimum(maximum(x / expand_dims(mx_scale_value(byte), 1), -448.0), 448.0);  // (BLOCKS, 32)
        q = where(expand_dims(byte == 0xff, 1), std::numeric_limits<double>::quiet_NaN(), q);
        store(p[1] + offsets, cast(q, f8e4m3, true), mask);
        store(p[2] + block, bitcast(cast(byte, i8), e8m0), in_range);
      });
}

}  // namespace

namespace scaled_dot_detail {

void launch_mx_quantize(const Tensor& x, const Tensor& data, const Tensor& scales, Stream& stream) {
  const int64_t blocks = x.numel() / kMxBlock;
  if (blocks == 0) return;
  const JitKernel& kernel = op_kernel(fmt::format("mx_quantize/{}", dtype_name(x.dtype())),
                                      [&] { return mx_quantize_kernel(x.dtype()); });
  const auto grid = static_cast<uint32_t>((blocks + kBlocksPerProgram - 1) / kBlocksPerProgram);
  kernel.launch(stream, {grid}, x, data, scales, blocks);
}

}  // namespace scaled_dot_detail

MxQuantized mx_quantize(const Tensor& x, Stream* stream) {
  OpArguments args("mx_quantize");
  args.dtype("x", x, {DType::f32, DType::bf16, DType::f16});
  if (x.rank() == 0) args.fail("x {} is a scalar, but it is quantized along its last dim", x.describe());
  if (x.dim(-1) % kMxBlock != 0)
    args.fail("x {} has last dim {}, which is not a multiple of the block size {}", x.describe(), x.dim(-1), kMxBlock);
  args.contiguous("x", x);
  std::vector<int64_t> scale_shape = x.shape();
  scale_shape.back() /= kMxBlock;
  MxQuantized out{Tensor::empty(x.device(), DType::f8e4m3, x.shape()),
                  Tensor::empty(x.device(), DType::e8m0, scale_shape)};
  launch_mx_quantize(x, out.data, out.scales, args.stream_for("x", x, stream));
  return out;
}

}  // namespace tilejit::ops
