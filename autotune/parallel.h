// Runs independent jobs on host threads: the tuner compiles candidate configs this way (each
// compile has its own LLVMContext, so compiles are thread-safe).
#pragma once

#include <cstddef>
#include <functional>

namespace tilejit::autotune {

// The host threads "one per core" means: at least 1.
int host_cores();

// Calls `job(i)` for every i in [0, count) on up to `threads` host threads (0: one per core)
// and returns when all are done. `job` must not throw.
void run_in_parallel(size_t count, int threads, const std::function<void(size_t)>& job);

}  // namespace tilejit::autotune
