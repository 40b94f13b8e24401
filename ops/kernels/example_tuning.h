// The registered example kernels as tunable ops (`tilejit tune --op NAME`): each one's config
// space, constraints, shape bucketing, launch work for the cost model and heuristic default,
// declared next to the kernels. Ops of the kernel library declare theirs the same way.
#pragma once

#include <string>
#include <vector>

#include "autotune/tunable.h"

namespace tilejit::ops {

// Every example's declaration, in the registry's order (ops/tunable_ops.h finds them by name).
const std::vector<autotune::TunableKernel>& tunable_examples();

}  // namespace tilejit::ops
