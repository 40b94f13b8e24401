// The library runs of the GEMM family (`tilejit run bf16_gemm` ...): random operands of
// M x N x K (4096³ on a GPU, 256³ on the emulator), the op timed per call, and 64 sampled
// output rows checked against a double reference over the whole of K.
#pragma once

#include "ops/kernels/example_runs.h"
#include "runtime/device.h"

namespace tilejit::ops {

ExampleRun run_bf16_gemm(Device& device, const ExampleOptions& options);
ExampleRun run_f16_gemm(Device& device, const ExampleOptions& options);
ExampleRun run_tf32_gemm(Device& device, const ExampleOptions& options);
ExampleRun run_fp8_gemm(Device& device, const ExampleOptions& options);   // e4m3 x e4m3 with scale_inv -> bf16
ExampleRun run_int8_gemm(Device& device, const ExampleOptions& options);  // i8 x i8 -> i32
ExampleRun run_q_matmul_int8(Device& device, const ExampleOptions& options);  // bf16, end to end

}  // namespace tilejit::ops
