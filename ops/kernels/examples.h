// Example DSL kernels: small, readable, and each a pattern the compiler must handle well
// (elementwise with masks, row reductions, a tiled GEMM with a K loop, an arg-reduction).
#pragma once

#include "dsl/kernel.h"

namespace tilejit::ops {

dsl::Kernel vector_add_kernel();  // out[i] = x[i] + y[i]
dsl::Kernel softmax_kernel();     // row softmax of an (M, N) f32 matrix, one row per program
dsl::Kernel layernorm_kernel();   // layernorm forward (SEMANTICS.md), one row per program
dsl::Kernel gemm_kernel();        // C (M, N) = A (M, K) @ B (K, N), f32, tiled
dsl::Kernel argmax_kernel();      // per-row argmax of an (M, N) f32 matrix

}  // namespace tilejit::ops
