// The tuned config an op call runs, asked of the tuning database (choose_config's rules). Ops
// remember each answer themselves per shape under plain values, so that a warm call pays no
// strings. The database is read once per device, op and bucket in
// a process; calls of one bucket's shapes ask one at a time, so with TILEJIT_AUTOTUNE=1 a shape
// that the first one's tuning serves finds that result instead of tuning again, while other
// buckets go on meanwhile.
#pragma once

#include <optional>

#include "autotune/tunable.h"

namespace tilejit::autotune {

// The stored config that serves `shape`; nothing when the op should take its heuristic: no
// stored result serves it, or tuning it on first use could not run (a warning says why, the
// call must not fail for it, and the bucket is not tuned again in this process). `op` must
// live as long as the process (it is part of the key).
std::optional<Config> tuned_bucket_config(const TunableKernel& op, const ProblemShape& shape, Device& device);

}  // namespace tilejit::autotune
