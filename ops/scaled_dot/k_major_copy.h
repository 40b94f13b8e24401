// The copy that gives scaled_dot an rhs stored along K. sm_90a's 8-bit tensor-core products read
// B with K contiguous; an fp8 rhs stored (K, N), jax.lax.scaled_dot's default order, is otherwise
// transposed through shared memory in every step of every program's K loop (kernel.cpp). For a
// product with many row blocks, transposing it once ahead costs less than each of them doing so
// (transposes_rhs_ahead says when).
#pragma once

#include <cstdint>

#include "ops/scaled_dot/grouped_view.h"
#include "ops/scaled_dot/kernel.h"

namespace tilejit::ops::scaled_dot_detail {

// Whether scaled_dot transposes an fp8 rhs (B, K, N) stored along N into (B, N, K) before a
// product of m rows that `plan` runs on sm_90a's fp8 tensor cores (the operands as stored): only
// where the product's row blocks, each of which would transpose every rhs tile it reads, are
// enough to pay for moving the rhs once.
bool transposes_rhs_ahead(const ScaledDotPlan& plan, const GroupedView& rhs, int64_t m, int cc);

// rhs (B, K, N) with a unit stride along N, copied into a contiguous (B, N, K) scratch tensor on
// `stream`: the same (B, K, N) view, now with a unit stride along K.
GroupedView k_major_copy(const GroupedView& rhs, Stream& stream);

}  // namespace tilejit::ops::scaled_dot_detail
