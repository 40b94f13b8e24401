// Internal to ops/collectives: where the threads that play the ranks of one emulated
// communicator meet. A collective is a series of rounds; in each, every rank arrives with its
// part (what it calls and its buffers) and leaves once all have arrived, with everyone's parts.
// The ranks then read each other's buffers directly: the emulator's device memory is host memory.
//
// A round never hangs: a rank missing after the timeout aborts the world, naming the ranks that
// did not come, and an abort (from any thread) wakes every waiting rank with its reason. The
// one exception is finish_exchange, which every rank is sure to reach.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tilejit::ops {

class EmulatedWorld {
 public:
  // One rank's part in a round.
  struct Part {
    std::string call;  // what the rank calls, with its sizes: must be the same on every rank
    const void* send = nullptr;
    void* recv = nullptr;
    int color = 0, key = 0;  // split only
  };
  // A rank's place in a world made by split().
  struct Membership {
    std::shared_ptr<EmulatedWorld> world;  // null for a negative color
    int rank = 0;
  };

  EmulatedWorld(int size, std::chrono::milliseconds timeout);
  int size() const { return size_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  // Blocks until every rank has arrived, then returns every rank's part, indexed by rank.
  // Throws when the ranks' calls differ (naming the ranks and their calls), after the timeout
  // (naming the missing ranks; the world is aborted), and when the world is aborted.
  std::vector<Part> arrive(int rank, Part part);
  // A round with no buffers after a completed arrive(), once this rank is done with the other
  // ranks' buffers: it returns when every rank is, so no rank releases a buffer another still
  // reads. Every rank of that arrive() comes (what lies between is local work), so it waits
  // for all of them, through an abort and past the timeout.
  void finish_exchange(int rank, const std::string& call);
  // Every rank calls it: the ranks with one color >= 0 form a new world, ranked by key, then rank.
  Membership split(int rank, int color, int key);

  // Teardown as NCCL's finalize: it is finished once every rank has begun it (or the world
  // is aborted); neither call waits.
  void begin_finalize(int rank);
  bool finalized() const;

  void abort(const std::string& reason);  // safe from any thread; the first reason stays
  std::string abort_reason() const;       // empty while not aborted

 private:
  // The completed round's parts, and the worlds a split round made (by rank).
  struct Round {
    std::vector<Part> parts;
    std::vector<Membership> memberships;
    std::string mismatch;  // why the ranks' calls disagree, empty when they agree
  };
  enum class RoundKind { exchange, split, finish };
  Round run_round(int rank, Part part, RoundKind kind);
  void complete_round(RoundKind kind);  // with mutex_ held, by the last rank to arrive
  std::string missing_ranks() const;

  const int size_;
  const std::chrono::milliseconds timeout_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  uint64_t generation_ = 0;    // completed rounds
  std::vector<Part> pending_;  // this round's parts so far
  std::vector<bool> arrived_;
  int arrivals_ = 0;
  Round completed_;
  std::vector<bool> finalizing_;  // begin_finalize() was called, by rank
  std::string abort_reason_;
};

}  // namespace tilejit::ops
