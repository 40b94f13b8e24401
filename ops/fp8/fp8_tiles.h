// The device side of a delayed-scaling quantization, shared by fp8_quantize's kernel and the
// kernels that quantize their own output on the way out (layer_norm, rms_norm): the kernel
// parameters it needs, the launch arguments for them, and the DSL pieces that quantize a
// tile and record its amax.
//
// The amax is recorded with an atomic max on the bits of history[0] seen as an i32: the bits
// of non-negative floats order as their values do, and NaN is replaced by the quiet NaN
// 0x7fc00000, which is above every other non-negative pattern in that order. So the step's
// amax is NaN exactly when x held a NaN, whatever the order the programs arrive in.
#pragma once

#include <span>
#include <vector>

#include "dsl/builder.h"
#include "dsl/ir.h"
#include "ops/fp8.h"
#include "runtime/jit.h"

namespace tilejit::ops {

// A new fp8 output of `shape` for `state`'s format (data and scale_inv uninitialized).
Fp8Tensor fp8_output(Device& device, const std::vector<int64_t>& shape, const Fp8ScalingState& state);

// The kernel parameters of a quantized output, in this order: data (fp8), the state's scale,
// its history (i32: see above), the output's scale_inv and the state's.
inline constexpr size_t kFp8OutputParams = 5;
std::vector<ir::Param> fp8_output_params(DType fp8);
// The launch arguments for those parameters.
std::vector<KernelArg> fp8_output_args(const Fp8Tensor& out, const Fp8ScalingState& state);

// Inside a kernel: the quantized output, from the kernel's kFp8OutputParams parameters.
class Fp8OutputTiles {
 public:
  Fp8OutputTiles(std::span<const dsl::Tile> params, DType fp8);

  const dsl::Tile& data() const { return data_; }  // the fp8 pointer
  // clip(v * scale, -fmax, fmax) cast to the fp8 dtype (round to nearest even; NaN stays NaN).
  dsl::Tile quantize(const dsl::Tile& v) const;
  // Joins `bits` (an i32 scalar from amax_bits) into history[0] and, in program (0, 0, 0),
  // stores 1 / scale in both scale_inv outputs. Call once per program, at its end.
  void finish(const dsl::Tile& bits) const;

 private:
  dsl::Tile data_, scale_ptr_, history_bits_, scale_inv_, state_scale_inv_, scale_;
  DType fp8_;
};

// The i32 bits of max |v| over the lanes where `mask` holds (0 when none do; 0x7fc00000 when
// any is NaN). v is f32, of any rank; bits of several tiles combine with maximum().
dsl::Tile amax_bits(const dsl::Tile& v, const dsl::Tile& mask);

}  // namespace tilejit::ops
