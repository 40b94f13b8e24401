// Internal to ops/fp8: fp8_quantize's kernel launch on an output made beforehand (the library
// run times it alone), without the checks and without the scale update.
#pragma once

#include "ops/fp8.h"

namespace tilejit::ops {

// out = the quantization of x (contiguous f32 / f16 / bf16) with the state's current scale;
// the amax joins the state's history[0].
void launch_fp8_quantize(const Tensor& x, const Fp8ScalingState& state, const Fp8Tensor& out, Stream& stream);

}  // namespace tilejit::ops
