// `tilejit run scaled_dot` and `tilejit run mx_quantize` (ops/library_runs.h).
#pragma once

#include "ops/kernels/example_runs.h"
#include "runtime/device.h"

namespace tilejit::ops {

// Dimensions B, M, N, K, BLOCK: lhs f8e4m3[B, M, K] with e8m0 scales [B, M, K / BLOCK], rhs
// f8e4m3[B, K, N] with e8m0 scales [B, K / BLOCK, N], bf16 output; the rate in FLOP/s. The
// reference (double) covers up to 64 rows of each batch, spread over M, all columns.
ExampleRun run_scaled_dot(Device& device, const ExampleOptions& options);

// Dimensions ROWS, COLS (a multiple of 32): x f32[ROWS, COLS] with magnitudes that change from
// block to block; the rate in GB/s. The check dequantizes (data * scale) against x within
// e4m3's rounding, and requires each scale to be the smallest power of two that holds the
// block (amax / scale in (224, 448]).
ExampleRun run_mx_quantize(Device& device, const ExampleOptions& options);

}  // namespace tilejit::ops
