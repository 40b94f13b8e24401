// Internal to ops/collectives: what a Communicator handle shares with its copies. The rank's
// backend (NCCL or emulated), the communicators it made for `groups` arguments and by split
// (so an abort reaches them too), and scratch memory for packing, one buffer per stream so
// collectives on different streams never share one.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ops/collectives.h"
#include "ops/collectives/rank_backend.h"

namespace tilejit::ops {

struct Communicator::State {
  State(std::unique_ptr<RankBackend> backend, CommunicatorOptions options);
  // A new handle over a new state for `backend`.
  static Communicator handle(std::unique_ptr<RankBackend> backend, const CommunicatorOptions& options);
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  // Begins destroying this communicator and those made for groups, and leaves the rest to
  // finish_destroy_later (teardown.h): it never waits for the other ranks. Never throws.
  ~State();

  // The backend, or throws when the communicator was destroyed, naming `op`.
  RankBackend& live(const char* op);
  // Aborts this communicator and every one made from it, also those made later; safe from any
  // thread.
  void abort(const std::string& reason);
  // Destroys this communicator and those made for groups: collective, it returns once every
  // rank has destroyed its own; after the timeout it aborts them and throws.
  void destroy();
  // Keeps `child` (made from this one) so that abort() reaches it.
  void adopt(const std::shared_ptr<State>& child);
  // Keeps the communicator made for `groups`, so that abort(), check_async_errors(),
  // synchronize() and destroying reach it.
  void add_group(const RankGroups& groups, const std::shared_ptr<State>& group);
  // Throws the first asynchronous error of this communicator or of those made for groups,
  // whose collectives the caller's calls ran on.
  void check_async_errors();
  // Waits for the collectives on `stream` within the timeout, checking for asynchronous errors
  // (also those of the communicators made for groups) while it waits; on a failure aborts this
  // communicator and those made from it (their collectives may be what is stuck on the stream)
  // and throws.
  void synchronize(Stream& stream);

 private:
  // Throws the first asynchronous error of the communicators made for groups.
  void check_group_errors();
  // The communicators made for groups so far.
  std::vector<std::shared_ptr<State>> groups();
  // Begins the destroy of the communicators made for groups and of this one, once.
  void begin_destroy();
  // Whether every one begun has finished (freed), checking each once; throws on an error.
  bool destroy_finished();

 public:

  std::unique_ptr<RankBackend> backend;  // handed to finish_destroy_later by the destructor
  const CommunicatorOptions options;
  std::atomic<bool> destroyed = false;  // read by live() on any thread

  std::mutex mutex;  // guards what follows against abort() from another thread
  std::string abort_reason;  // empty until aborted
  std::map<RankGroups, std::shared_ptr<State>> group_communicators;
  std::vector<std::weak_ptr<State>> children;  // made by split()
  std::map<void*, Tensor> scratch_by_stream;
};

Communicator::State& state_of(const Communicator& comm);

// The caller's group of `groups` as a communicator of its own, and the caller's position in it.
struct GroupView {
  Communicator::State* group = nullptr;
  int size = 0;
  int position = 0;
};
// Checks `groups` (naming `op` and the offending ranks) and returns the caller's group's size
// and its position in it, with no communication: what the checks of a call's arguments need.
// The group is the communicator itself for no groups or one group of every rank in rank
// order, else null (group_of makes it).
GroupView group_place(Communicator::State& state, const RankGroups& groups, const char* op);
// group_place's view with the group's communicator, made by splitting this one the first time
// these groups are used: a collective call, so every rank calls it with the same groups, once
// its own arguments are checked.
GroupView group_of(Communicator::State& state, const RankGroups& groups, const char* op);

// reduce_scatter's input or all_gather's result viewed as (outer, k, chunk), k the group size:
// position p's part is [:, p, :], outer * chunk elements, contiguous only when outer is 1 (or
// k is), else the collective packs it.
struct ChunkPlan {
  GroupView group;
  int64_t outer = 1;
  int64_t chunk = 0;
  std::vector<int64_t> out_shape;  // the collective's result
  int64_t part() const { return outer * chunk; }
  bool needs_packing() const { return outer > 1 && group.size > 1; }
};

// At least `bytes` of device memory for one call on `stream`, kept for later calls on it.
void* scratch(Communicator::State& state, size_t bytes, Stream& stream);

// `stream`, or the default stream of the communicator's device; throws when the stream belongs
// to another device, naming `op`.
Stream& stream_for(Communicator::State& state, Stream* stream, const char* op);

}  // namespace tilejit::ops
