// The tuned config an op call runs, asked of the tuning database (choose_config). Ops ask once
// per exact shape and remember the answer under plain values, so that a warm call pays no
// strings. Calls of shapes of one bucket ask one at a time: with TILEJIT_AUTOTUNE=1, a shape
// the first one's tuning serves then finds that result instead of tuning again, and other
// buckets go on meanwhile.
#pragma once

#include <optional>

#include "autotune/tunable.h"

namespace tilejit::autotune {

// The stored config that serves `shape` (choose_config's rules); nothing when the op should
// take its heuristic: no stored result serves it, or tuning it on first use could not run (a
// warning says why, the call must not fail for it, and the bucket is not tuned again in this
// process). `op` must live as long as the process (it is part of the key).
std::optional<Config> tuned_bucket_config(const TunableKernel& op, const ProblemShape& shape, Device& device);

}  // namespace tilejit::autotune
