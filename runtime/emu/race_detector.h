// Internal to the emulator: the shared-memory race detector of one CTA (TILEJIT_EMU_RACECHECK=1).
//
// Two accesses of one byte by different threads, one of them a write (atomics are not
// checked), race unless a synchronization orders the first before the second. Ordering is
// happens-before, tracked with a vector clock per warp (what the warp has seen of every warp's
// progress), so a barrier among some warps orders only them:
//   - a named barrier (bar.sync, bar.arrive id, count) orders what each arriving thread did
//     before it arrived before what each waiting thread does after it is released;
//   - an mbarrier phase orders what its arrivals (relaxed ones too) did before them before
//     what a thread does after its wait saw the phase complete (TMA's transactions are the
//     async proxy, not checked here);
//   - the cluster barrier orders everything of every warp of the CTA before everything after
//     its phase completed.
// Threads of one warp are ordered by a synchronization any lane of the warp took part in
// between, bar.warp.sync among them; the other warp collectives (shfl.sync, vote.sync, ...)
// order no memory, as in PTX. The model errs
// towards missing a race, never towards reporting one that is not: a lane's arrival advances
// its whole warp, and lanes still running while others of their warp wait at a bar.sync count
// as before it. The shadow is per byte, so threads storing neighbouring bytes of one word do
// not race.
//
// The shadow is kept from CTA to CTA and never cleared: each CTA's clocks start above every
// clock the shadow holds, and an entry older than the CTA counts as ordered before it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace tilejit::emu {

// Per warp of a CTA: the clock of that warp up to which something (a warp, a barrier) has
// seen it.
using VectorClock = std::vector<uint32_t>;

// An access the checked one races with.
struct Race {
  int64_t offset = 0;   // of the byte
  int other = -1;       // the other thread; -2: several threads of one warp
  bool other_wrote = false;
};

class RaceDetector {
 public:
  // Starts a CTA of `warps` warps over `bytes` of shared memory.
  void start(int warps, int64_t bytes);

  // Checks an access of `bytes` bytes at `offset` by thread `tid`, then records it.
  std::optional<Race> access(int tid, int64_t offset, int64_t bytes, bool write);

  // A clock that has seen nothing of this CTA, for barriers to collect into.
  VectorClock empty_clock() const { return VectorClock(static_cast<size_t>(warps_), 0); }
  // `into` takes in what `warp` has seen (its arrival at a barrier).
  void publish(int warp, VectorClock& into) const;
  // `warp` takes in what `from` collected (its release from a barrier).
  void acquire(int warp, const VectorClock& from);
  // `warp`'s later accesses come after everything it published so far.
  void advance(int warp);
  // Every warp sees every other's accesses so far (a barrier of the whole cluster).
  void synchronize_all();

 private:
  struct Write {
    uint32_t clock = 0;
    int32_t writer = -1;
  };
  struct Read {
    uint32_t clock = 0;
    int32_t reader = -1;  // -2: several threads of the warp at this clock
  };
  uint32_t& clock(int warp, int of) { return clocks_[static_cast<size_t>(warp * warps_ + of)]; }
  // Whether an access by thread `other` at its warp's clock `at` comes before the running
  // access of thread `tid` of warp `warp`.
  bool ordered(int tid, int warp, int other, uint32_t at);

  int warps_ = 0;
  uint32_t base_ = 1;      // clocks below it were taken by earlier CTAs
  VectorClock clocks_;     // warps_ x warps_: clock(w, v) is what warp w has seen of warp v
  std::vector<Write> writes_;  // per byte: the last write
  std::vector<Read> reads_;    // per byte and warp: the warp's last reads
};

}  // namespace tilejit::emu
