// A gemm call's kernels on a stream for one config: the main kernel, and with split-K the sum
// of the slices in a stream-ordered workspace.
#pragma once

#include "ops/gemm/gemm_config.h"
#include "ops/gemm/gemm_problem.h"

namespace tilejit::ops::gemm_detail {

// Launches `p` (its output set) with its tuned or heuristic config, in launches of at most
// `most_batches_per_launch` batches each (a grid's y dim holds 65535).
void launch_gemm(const GemmProblem& p, Stream& s, int64_t most_batches_per_launch);
// Launches `p` (its output set) tiled by `config`, whose split_k is clamped to the K steps.
void launch_gemm_with(const GemmProblem& p, GemmConfig config, Stream& s);
// Builds, without launching, the main kernel that launch_gemm_with(p, config) runs on
// `device`; returns its report. With split-K its workspace parameter is `workspace_like`,
// a tensor of the accumulator's dtype whose size does not matter (the build reads only its
// type and alignment).
KernelReport prepare_gemm_with(const GemmProblem& p, GemmConfig config, Device& device, const Tensor& workspace_like);

}  // namespace tilejit::ops::gemm_detail
