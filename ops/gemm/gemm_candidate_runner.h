// Runs gemm's tuning candidates (autotune/candidate_runner.h) through the op's own launch
// path on one problem of the tuned shape: random operands in the spec's layout, a poisoned
// output checked on sampled rows (gemm_row_check.h) once per config, then timed.
#pragma once

#include <memory>

#include "autotune/candidate_runner.h"
#include "autotune/launch_timer.h"
#include "ops/gemm/gemm_tuning.h"

namespace tilejit::ops::gemm_detail {

// The candidates' config as gemm's: the tuned constants, the layout from `spec`.
GemmConfig gemm_config_of(const autotune::Config& config, const GemmTuningSpec& spec);

std::unique_ptr<autotune::CandidateRunner> make_gemm_runner(const GemmTuningSpec& spec, Device& device,
                                                            const autotune::ProblemShape& shape,
                                                            const autotune::TimingOptions& timing, uint64_t seed);

}  // namespace tilejit::ops::gemm_detail
