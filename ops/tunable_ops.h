// Every op `tilejit tune --op NAME` tunes: the example kernels by their names
// (ops/kernels/example_tuning.h), and the library's gemm as gemm_<dtype>_<layout>: dtype one
// of bf16, f16, f8e4m3, f8e5m2, i8, tf32, f32 (exact, on the CUDA cores), layout nn, nt, tn or
// tt (A, then B; t: stored the other way, A (K, M), B (N, K)), the output of gemm's default
// dtype for the operands. Its results serve every unbatched gemm call of that kind.
#pragma once

#include <string>
#include <vector>

#include "autotune/tunable.h"

namespace tilejit::ops {

// Throws tilejit::Error naming the tunable ops for a name that is none of them.
const autotune::TunableKernel& find_tunable_op(const std::string& name);
std::vector<std::string> tunable_op_names();

}  // namespace tilejit::ops
