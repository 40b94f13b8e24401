// The tuned config an op call runs, asked of the tuning database (choose_config) once per
// device, op and shape bucket in a process: the bucket's first call pays for the lookup (or,
// with TILEJIT_AUTOTUNE=1, the tuning), later calls of the bucket wait for it, and other
// buckets go on meanwhile. Ops remember each exact shape's answer themselves, under plain
// values, so that a warm call pays no strings.
#pragma once

#include <optional>

#include "autotune/tunable.h"

namespace tilejit::autotune {

// The bucket's tuned config when it meets the constraints for `shape` itself (a bucket holds
// shapes a constraint may tell apart); nothing when the op should take its heuristic: the
// bucket is untuned, or tuning it on first use could not run (a warning says why; the call
// must not fail for it). `op` must live as long as the process (it is part of the key).
std::optional<Config> tuned_bucket_config(const TunableKernel& op, const ProblemShape& shape, Device& device);

}  // namespace tilejit::autotune
