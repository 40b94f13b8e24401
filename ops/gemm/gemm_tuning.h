// gemm as a tunable op (autotune/tunable.h). An unbatched call looks its shape up in the
// tuning database under its dtypes, precision and operand layouts on its device (a result
// tuned offline, loaded from a pack, or, with TILEJIT_AUTOTUNE=1, tuned on first use);
// otherwise, and for batched calls and K = 0, the heuristic decides. The database is asked once
// per shape and process (its result for the shape, else for the nearest shape of its bucket
// that the config serves), and the answer is remembered, so later calls pay one map lookup.
//
// Candidates run through the op's own launch path (tensor descriptors that follow the tiles,
// split-K's second kernel) on fresh random operands laid out as the call's, and each is
// checked once against a double-precision reference on sampled rows before it is timed.
#pragma once

#include <string>

#include "autotune/tunable.h"
#include "ops/gemm/gemm_config.h"
#include "ops/gemm/gemm_problem.h"

namespace tilejit::ops::gemm_detail {

// What a tuning result is for: the element types, the precision of f32 operands, which
// operands are stored K-major the other way (A (K, M), B (N, K)), and fp8's fast accumulation.
struct GemmTuningSpec {
  DType a = DType::bf16, b = DType::bf16, out = DType::bf16;
  dsl::Precision precision = dsl::Precision::tf32;
  bool a_transposed = false, b_transposed = false;
  bool fast_accumulation = false;

  static GemmTuningSpec of(const GemmProblem& p);
  // "bf16,bf16->bf16", "f32,f32->f32/tf32x3", "f8e4m3,f8e4m3->bf16/fast_accumulation"
  std::string dtypes() const;
  std::string layout() const;  // "nn", "tn", "nt", "tt": A then B, t when stored the other way
};

// The tunable op for `spec`, made once per spec for the process. Its dims are M, N, K.
const autotune::TunableKernel& gemm_tunable(const GemmTuningSpec& spec);

// The config a call of `p` runs on `device`: tuned or heuristic, as above.
GemmConfig call_config(const GemmProblem& p, Device& device);

}  // namespace tilejit::ops::gemm_detail
