// Runs the attention kernels' tuning candidates (autotune/candidate_runner.h) through the op's
// launch path on one problem of the tuned shape: random q, k, v (and dout) of one batch with
// BN heads; for a backward kernel, its inputs computed once with the heuristic configs; the
// kernel's poisoned outputs (out and logsumexp; dk and dv; dq) checked on sampled rows
// (host_reference.h) once per config, then timed.
#pragma once

#include <memory>

#include "autotune/candidate_runner.h"
#include "autotune/launch_timer.h"
#include "ops/attention/tuning.h"

namespace tilejit::ops::attention_detail {

std::unique_ptr<autotune::CandidateRunner> make_attention_runner(const AttentionTuningSpec& spec, TunedKernel kernel,
                                                                 Device& device, const autotune::ProblemShape& shape,
                                                                 const autotune::TimingOptions& timing,
                                                                 uint64_t seed);

}  // namespace tilejit::ops::attention_detail
