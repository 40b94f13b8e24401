// Every op `tilejit tune --op NAME` tunes: the example kernels by their names
// (ops/kernels/example_tuning.h), and the library's gemm as gemm_<dtype>_<layout>: dtype one
// of bf16, f16, f8e4m3, f8e5m2, i8, tf32, f32 (exact, on the CUDA cores), layout nn, nt, tn or
// tt (A, then B; t: stored the other way, A (K, M), B (N, K)), the output of gemm's default
// dtype for the operands (its results serve every unbatched gemm call of that kind); and the
// attention forward as attention_<dtype>_h<H>[_causal], the backward's dk / dv and dq kernels
// as attention_dkdv_... and attention_dq_...: dtype bf16, f16 or f32, H the head dim (a
// multiple of 8 up to 256), _causal for causal calls (ops/attention/tuning.h says which calls
// the results serve).
#pragma once

#include <string>
#include <vector>

#include "autotune/tunable.h"

namespace tilejit::ops {

// Throws tilejit::Error naming the tunable ops for a name that is none of them.
const autotune::TunableKernel& find_tunable_op(const std::string& name);
// The example ops' names and the library's families as patterns, for messages.
std::vector<std::string> tunable_op_names();

}  // namespace tilejit::ops
