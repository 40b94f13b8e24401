// The gemm epilogue in the DSL (the order is ops/gemm.h's): scales, alpha, beta * C, bias,
// activation, residual, the cast to the output dtype. The main kernel applies it to its
// accumulator; with split-K, the kernel that sums the slices applies it instead.
#pragma once

#include "dsl/tile.h"
#include "ops/common/named_arguments.h"
#include "ops/gemm/gemm_problem.h"

namespace tilejit::ops::gemm_detail {

// Adds the epilogue's arguments (those `p`'s features use) to `args`.
void add_epilogue_arguments(const GemmProblem& p, NamedArguments& args);

// The output tile for the accumulator `acc` (BLOCK_M, BLOCK_N) of rows `rows` (BLOCK_M) and
// columns `cols` (BLOCK_N) of batch `batch` (an i64 scalar); `in_bounds` masks the tile's
// elements inside (M, N); M and N are the kernel's parameters of those names.
dsl::Tile apply_epilogue(const GemmFeatures& f, const NamedTiles& in, dsl::Tile acc, const dsl::Tile& batch,
                         const dsl::Tile& rows, const dsl::Tile& cols, const dsl::Tile& in_bounds);

}  // namespace tilejit::ops::gemm_detail
