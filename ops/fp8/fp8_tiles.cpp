// Quantizing a tile with a delayed-scaling state inside a kernel (see fp8_tiles.h).
#include "ops/fp8/fp8_tiles.h"

#include "ops/common/op_kernels.h"

namespace tilejit::ops {

using namespace tilejit::dsl;

namespace {
constexpr int64_t kQuietNanBits = 0x7fc00000;
}  // namespace

Fp8Tensor fp8_output(Device& device, const std::vector<int64_t>& shape, const Fp8ScalingState& state) {
  return Fp8Tensor{Tensor::empty(device, state.dtype(), shape), Tensor::empty(device, DType::f32, {1})};
}

std::vector<ir::Param> fp8_output_params(DType fp8) {
  return {pointer_param("fp8_data", fp8), pointer_param("scale", DType::f32),
          pointer_param("amax_history_bits", DType::i32), pointer_param("scale_inv", DType::f32),
          pointer_param("state_scale_inv", DType::f32)};
}

std::vector<KernelArg> fp8_output_args(const Fp8Tensor& out, const Fp8ScalingState& state) {
  return {KernelArg::pointer(out.data.data(), out.format()), KernelArg(state.scale()),
          KernelArg::pointer(state.amax_history().data(), DType::i32), KernelArg(out.scale_inv),
          KernelArg(state.scale_inv())};
}

Fp8OutputTiles::Fp8OutputTiles(std::span<const Tile> params, DType fp8)
    : data_(params[0]),
      scale_ptr_(params[1]),
      history_bits_(params[2]),
      scale_inv_(params[3]),
      state_scale_inv_(params[4]),
      scale_(load(params[1])),
      fp8_(fp8) {}

Tile Fp8OutputTiles::quantize(const Tile& v) const {
  const double fmax = fp8_max(fp8_);
  Tile scaled = v * scale_;
  // where(), not minimum()/maximum(): those return the other operand for NaN.
  Tile clipped = where(scaled > fmax, fmax, where(scaled < -fmax, -fmax, scaled));
  return cast(clipped, fp8_);
}

void Fp8OutputTiles::finish(const Tile& bits) const {
  atomic_max(history_bits_, bits);
  Tile first = (program_id(0) == 0) && (program_id(1) == 0) && (program_id(2) == 0);
  Tile inverse = 1.0 / scale_;
  store(scale_inv_, inverse, first);
  store(state_scale_inv_, inverse, first);
}

Tile amax_bits(const Tile& v, const Tile& mask) {
  Tile bits = where(v != v, kQuietNanBits, bitcast(abs(v), DType::i32));
  Tile m = where(mask, bits, 0);
  while (m.rank() > 0) m = max(m, 0);
  return m;
}

}  // namespace tilejit::ops
