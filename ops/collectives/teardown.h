// Internal to ops/collectives: finishes the teardown of ranks whose last handle is gone. Their
// finalize completes only once every rank of the communicator has begun it (NCCL's rule), so
// the thread dropping the handles of several ranks (Communicator::local's) cannot wait for
// each in turn: it begins each one's and leaves the rest to a background thread, which frees
// each rank when its finalize is done and aborts one still unfinished after its timeout. When
// the program exits, that thread finishes what is pending (within its timeouts) and stops; a
// rank handed over after that (a communicator in a static) is finished on the spot.
#pragma once

#include <chrono>
#include <memory>

#include "ops/collectives/rank_backend.h"

namespace tilejit::ops {

// `rank` has begun its destroy; it is freed once destroy_finished() says so, or aborted with
// a warning after `timeout`.
void finish_destroy_later(std::unique_ptr<RankBackend> rank, std::chrono::milliseconds timeout);

}  // namespace tilejit::ops
