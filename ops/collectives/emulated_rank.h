// Internal to ops/collectives: ranks as threads of this process on the emulator device. Each
// collective meets the other ranks in an EmulatedWorld, then computes this rank's share of the
// result straight from the other ranks' buffers, and meets them again before returning, so no
// buffer is reused while another rank still reads it. Work runs at the call, as all emulator
// work does, so streams are trivially ordered.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "ops/collectives/rank_backend.h"

namespace tilejit::ops {

// Ranks 0..world_size-1 of one new emulated communicator.
std::vector<std::unique_ptr<RankBackend>> make_emulated_ranks(int world_size, std::chrono::milliseconds timeout);

}  // namespace tilejit::ops
