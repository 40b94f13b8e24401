// `tilejit run fp8_quantize` (ops/library_runs.h): dimension N (2^27 on a GPU, 100003 on the
// emulator); x bf16[N] with random values, a HYBRID forward state (e4m3) whose scale is 100,
// so that the larger values saturate; the quantization timed alone, the rate in GB/s. The
// check: every element within e4m3's rounding of clip(x * 100), scale_inv = 1/100, and after
// one update the amax at the end of the rolled history and the scale 448 / amax.
#pragma once

#include "ops/kernels/example_runs.h"
#include "runtime/device.h"

namespace tilejit::ops {

ExampleRun run_fp8_quantize(Device& device, const ExampleOptions& options);

}  // namespace tilejit::ops
