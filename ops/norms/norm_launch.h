// Internal to ops/norms: the launches of the norm ops on outputs made beforehand, so that the
// library runs (norm_runs.cpp) time the kernels alone; the public functions (forward.cpp,
// backward.cpp) check their arguments, make the outputs and call these.
#pragma once

#include <optional>

#include "ops/norms/norm_problem.h"

namespace tilejit::ops {

// y, and mean / rsigma / the fp8 copy as the options ask, for x of `shape`.
NormOutput make_norm_output(NormKind kind, const Tensor& x, const RowShape& shape, const NormOptions& options);
// The forward kernel into `out` (from make_norm_output with the same options); then the fp8
// scale update when the options ask for a whole step.
void launch_norm_forward(NormKind kind, const Tensor& x, const Tensor& gamma, const Tensor* beta,
                         const NormOptions& options, const RowShape& shape, const NormOutput& out, Stream& stream);

// How the backward splits the rows among its programs, and the f32 scratch it needs: a
// partial row per program for dgamma (and dbeta), and per row mean(dy*g) and mean(dy*g*xhat)
// when rows are too long for registers.
struct NormBackwardPlan {
  RowTiling tiling;
  int64_t rows_per_program = 1, programs = 1;
  Tensor partial_dgamma;
  std::optional<Tensor> partial_dbeta, row_terms;
};
// The partial sums live on `stream`, which the backward kernels must run on.
NormBackwardPlan plan_norm_backward(NormKind kind, Stream& stream, const RowShape& shape);
// dx, dgamma and (LayerNorm) dbeta for gamma's dtype and x's shape.
NormGradients make_norm_gradients(NormKind kind, const Tensor& x, const Tensor& gamma);
// The backward kernels into `out`; mean is null for RMSNorm.
void launch_norm_backward(NormKind kind, const Tensor& dy, const Tensor& x, const Tensor* mean, const Tensor& rsigma,
                          const Tensor& gamma, const NormBackwardOptions& options, const RowShape& shape,
                          const NormBackwardPlan& plan, const NormGradients& out, Stream& stream);

}  // namespace tilejit::ops
