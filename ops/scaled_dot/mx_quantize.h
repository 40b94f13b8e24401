// mx_quantize's kernel launch into given outputs, for the op and for the library run, which
// times the kernel alone (no allocation per call).
#pragma once

#include "runtime/tensor.h"

namespace tilejit::ops::scaled_dot_detail {

// x contiguous (f32, bf16 or f16, last dim a multiple of 32); data f8e4m3 of x's numel, scales
// e8m0 of numel / 32, both contiguous. Checks nothing.
void launch_mx_quantize(const Tensor& x, const Tensor& data, const Tensor& scales, Stream& stream);

}  // namespace tilejit::ops::scaled_dot_detail
