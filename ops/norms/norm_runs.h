// `tilejit run layer_norm`, `rms_norm`, `layer_norm_backward` and `rms_norm_backward`
// (ops/library_runs.h). Dimensions ROWS and HIDDEN (16384 x 4096 on a GPU, 64 x 1000 on the
// emulator); x, dy, gamma and beta bf16 with random values; the rate in GB/s of the tensors
// read and written once. The forward runs return mean and rsigma too, as training does; the
// backward runs take them from a forward call made first. Every output is checked against a
// double reference within bf16's rounding plus an f32 error bound on the magnitude of its terms.
#pragma once

#include "ops/kernels/example_runs.h"
#include "runtime/device.h"

namespace tilejit::ops {

ExampleRun run_layer_norm(Device& device, const ExampleOptions& options);
ExampleRun run_rms_norm(Device& device, const ExampleOptions& options);
ExampleRun run_layer_norm_backward(Device& device, const ExampleOptions& options);
ExampleRun run_rms_norm_backward(Device& device, const ExampleOptions& options);

}  // namespace tilejit::ops
