// Communicators over processes: the unique id comes from a file, a TCP rendezvous or torchrun's
// environment, then every rank joins with it (Communicator::join).
#include <cstdio>

#include "dsl/error.h"
#include "ops/collectives.h"
#include "ops/collectives/bootstrap.h"
#include "ops/collectives/communicator_state.h"
#include "ops/collectives/nccl_rank.h"

namespace tilejit::ops {
namespace {

void require_gpu(const Device& device, const char* op) {
  if (device.info().kind != DeviceKind::cuda)
    fail(
        "Communicator::{}: ranks in several processes need CUDA devices, got {}; emulated ranks live in one "
        "process (Communicator::emulated)",
        op, device.info().name);
}

}  // namespace

Communicator Communicator::join(const UniqueId& id, int rank, int world_size, Device& device,
                                const CommunicatorOptions& options) {
  require_gpu(device, "join");
  auto comm = nccl::NcclComm::join(id.bytes, rank, world_size, device, options.timeout);
  return State::handle(make_nccl_rank(std::move(comm)), options);
}

Communicator Communicator::join_by_file(const std::string& path, int rank, int world_size, Device& device,
                                        const CommunicatorOptions& options) {
  require_gpu(device, "join_by_file");
  UniqueId id = exchange_id_by_file(path, rank, world_size, UniqueId::create, options.timeout);
  Communicator comm = join(id, rank, world_size, device, options);
  // Joining is collective: every rank has read the id. Left there, it would mislead a next run.
  if (rank == 0) std::remove(path.c_str());
  return comm;
}

Communicator Communicator::join_by_tcp(const std::string& address, int port, int rank, int world_size, Device& device,
                                       const CommunicatorOptions& options) {
  require_gpu(device, "join_by_tcp");
  UniqueId id = exchange_id_by_tcp(address, port, rank, world_size, UniqueId::create, options.timeout);
  return join(id, rank, world_size, device, options);
}

Communicator Communicator::join_from_environment(const CommunicatorOptions& options) {
  TorchrunEnvironment env = read_torchrun_environment();
  return join_by_tcp(env.address, env.port, env.rank, env.world_size, Device::cuda(env.local_rank), options);
}

}  // namespace tilejit::ops
