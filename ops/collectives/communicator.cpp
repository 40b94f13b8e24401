// The Communicator handle: creation in one process (emulated ranks, or NCCL over local GPUs),
// the queries, split, and the lifetime calls, all forwarded to the rank's backend. Joining
// across processes is in join.cpp.
#include <cstdlib>

#include "dsl/error.h"
#include "ops/collectives/arguments.h"
#include "ops/collectives/communicator_state.h"
#include "ops/collectives/emulated_rank.h"
#include "ops/collectives/nccl_rank.h"

namespace tilejit::ops {
namespace {

std::vector<Communicator> handles_for(std::vector<std::unique_ptr<RankBackend>> ranks,
                                      const CommunicatorOptions& options) {
  std::vector<Communicator> comms;
  for (auto& rank : ranks) comms.push_back(Communicator::State::handle(std::move(rank), options));
  return comms;
}

}  // namespace

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
    case ReduceOp::average: return "average";
  }
  return "?";
}

std::chrono::milliseconds CommunicatorOptions::default_timeout() {
  const char* seconds = std::getenv("TILEJIT_COLLECTIVE_TIMEOUT");
  double s = seconds && *seconds ? std::atof(seconds) : 0;
  return std::chrono::milliseconds(s > 0 ? static_cast<int64_t>(s * 1000) : 300'000);
}

UniqueId UniqueId::create() {
  UniqueId id;
  id.bytes = nccl::new_unique_id();
  return id;
}

Communicator::State& state_of(const Communicator& comm) { return *comm.state_; }

Communicator::~Communicator() = default;

std::vector<Communicator> Communicator::emulated(int world_size, const CommunicatorOptions& options) {
  return handles_for(make_emulated_ranks(world_size, options.timeout), options);
}

std::vector<Communicator> Communicator::local(const std::vector<Device*>& devices, const CommunicatorOptions& options) {
  if (devices.empty()) fail("Communicator::local: no devices");
  size_t emulators = 0;
  for (Device* d : devices) emulators += d->info().kind == DeviceKind::emu ? 1 : 0;
  if (emulators == devices.size()) return emulated(static_cast<int>(devices.size()), options);
  if (emulators != 0)
    fail("Communicator::local: {} of the {} devices are the emulator; the ranks must be all GPUs or all emulated",
         emulators, devices.size());
  std::vector<std::unique_ptr<RankBackend>> ranks;
  for (auto& comm : nccl::NcclComm::create_local(devices, options.timeout))
    ranks.push_back(make_nccl_rank(std::move(comm)));
  return handles_for(std::move(ranks), options);
}

int Communicator::rank() const { return state_->backend->rank(); }
int Communicator::size() const { return state_->backend->size(); }
Device& Communicator::device() const { return state_->backend->device(); }
bool Communicator::emulated_ranks() const { return state_->backend->emulated(); }
std::string Communicator::describe() const { return state_->backend->describe(); }

int Communicator::position_in(const RankGroups& groups) const {
  return group_place(*state_, groups, "position_in").position;
}

std::optional<Communicator> Communicator::split(int color, int key) const {
  std::unique_ptr<RankBackend> child = state_->live("split").split(color, key);
  if (!child) return std::nullopt;
  auto state = std::make_shared<State>(std::move(child), state_->options);
  state_->adopt(state);
  return Communicator(std::move(state));
}

void Communicator::check_async_error() const { state_->check_async_errors(); }

void Communicator::synchronize(Stream& stream) const {
  state_->synchronize(stream_for(*state_, &stream, "synchronize"));
}

void Communicator::abort(const std::string& reason) const { state_->abort(reason); }

void Communicator::destroy() const { state_->destroy(); }

}  // namespace tilejit::ops
