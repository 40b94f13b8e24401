// Internal to ops/collectives: a rank whose collectives go through NCCL on a CUDA device
// (runtime/nccl/nccl_comm.h does the NCCL calls).
#pragma once

#include <memory>

#include "ops/collectives/rank_backend.h"
#include "runtime/nccl/nccl_comm.h"

namespace tilejit::ops {

std::unique_ptr<RankBackend> make_nccl_rank(std::unique_ptr<nccl::NcclComm> comm);

}  // namespace tilejit::ops
