// The gemm kernels. The main kernel computes one (BLOCK_M, BLOCK_N) output tile per program
// over one slice of K (program_id(0): the tile, in groups of GROUP_M rows of tiles so that
// neighbouring programs share operand tiles in L2; program_id(1): the batch; program_id(2):
// the K slice) on the tensor cores, and either applies the epilogue and writes the output,
// or (split-K) writes its raw partial sum into an f32 / i32 workspace (split, batch, M, N).
// The reduction kernel sums a workspace's slices in order and applies the epilogue.
#pragma once

#include <cstdint>
#include <vector>

#include "dsl/kernel.h"
#include "ops/common/named_arguments.h"
#include "ops/gemm/gemm_operands.h"
#include "ops/gemm/gemm_problem.h"

namespace tilejit::ops::gemm_detail {

// The main kernel's launch: the operands as `operands` has them read, the output (or, with a
// workspace, the slices of the partial sums). The arguments refer to `operands`' descriptors.
NamedArguments main_arguments(const GemmProblem& p, const GemmOperands& operands, const Tensor* workspace);
NamedArguments main_arguments(const GemmProblem& p, GemmOperands&& operands, const Tensor* workspace) = delete;
// The main kernel for `f` (with `writes_workspace` its epilogue is left to the reduction). An
// operand whose parameters `params` give as a descriptor is read through it (desc_load).
dsl::Kernel main_kernel(const GemmFeatures& f, bool writes_workspace, std::vector<ir::Param> params);

NamedArguments reduction_arguments(const GemmProblem& p, const Tensor& workspace);
dsl::Kernel reduction_kernel(const GemmFeatures& f, std::vector<ir::Param> params);

}  // namespace tilejit::ops::gemm_detail
