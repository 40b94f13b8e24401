// Internal to ops/collectives: how the ranks of a communicator over processes learn rank 0's
// unique id before they join it: through a file, through a TCP rendezvous, and where torchrun
// says the rendezvous is. The exchanges move any 128 bytes, so they are tested without NCCL.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "ops/collectives.h"

namespace tilejit::ops {

// Rank 0 calls make_id and writes the id to `path` (a new file renamed into place, so no rank
// reads half of it); the other ranks wait for the file up to `timeout` and read it. The file
// records the world size, and a rank that expects another size fails naming both.
UniqueId exchange_id_by_file(const std::string& path, int rank, int world_size,
                             const std::function<UniqueId()>& make_id, std::chrono::milliseconds timeout);

// Rank 0 calls make_id, listens on `port` (every interface) and answers each other rank that
// connects to address:port with the id, until all have; the other ranks retry until rank 0
// listens. Within `timeout`, else an error naming the ranks that did not come. A rank whose
// world size or rank does not fit is refused, and both ends fail naming the sizes.
UniqueId exchange_id_by_tcp(const std::string& address, int port, int rank, int world_size,
                            const std::function<UniqueId()>& make_id, std::chrono::milliseconds timeout);

// What torchrun tells each process it starts.
struct TorchrunEnvironment {
  int rank = 0;         // RANK
  int world_size = 1;   // WORLD_SIZE
  int local_rank = 0;   // LOCAL_RANK (0 when unset): the GPU of this process on its node
  std::string address;  // MASTER_ADDR
  int port = 0;         // TILEJIT_RENDEZVOUS_PORT, else MASTER_PORT + 1
};
// Reads the variables; a missing or malformed one is an error naming it.
TorchrunEnvironment read_torchrun_environment();

}  // namespace tilejit::ops
