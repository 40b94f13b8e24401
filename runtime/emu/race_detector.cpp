#include "runtime/emu/race_detector.h"

#include <algorithm>

namespace tilejit::emu {
namespace {

constexpr int kWarpSize = 32;
// Clocks start over (and the shadow is cleared) before they could wrap around.
constexpr uint32_t kClockLimit = uint32_t{1} << 31;

}  // namespace

void RaceDetector::start(int warps, int64_t bytes) {
  uint32_t high = 0;
  for (int w = 0; w < warps_; ++w) high = std::max(high, clock(w, w));
  base_ = high + 1;
  if (high >= kClockLimit) {
    base_ = 1;
    std::fill(writes_.begin(), writes_.end(), Write{});
    std::fill(reads_.begin(), reads_.end(), Read{});
  }
  warps_ = warps;
  // A warp has seen everything before the CTA; its own accesses come after that.
  clocks_.assign(static_cast<size_t>(warps) * static_cast<size_t>(warps), base_);
  for (int w = 0; w < warps; ++w) clock(w, w) = base_ + 1;
  auto size = static_cast<size_t>(bytes);
  if (writes_.size() < size) writes_.resize(size);
  if (reads_.size() < size * static_cast<size_t>(warps)) reads_.resize(size * static_cast<size_t>(warps));
}

bool RaceDetector::ordered(int tid, int warp, int other, uint32_t at) {
  if (at < base_ || other == tid) return true;  // an earlier CTA's, or the thread's own
  int other_warp = other / kWarpSize;
  // In one warp: a synchronization of the warp in between. -2 (several readers) is in `warp`.
  if (other < 0 || other_warp == warp) return at < clock(warp, warp);
  return at <= clock(warp, other_warp);
}

std::optional<Race> RaceDetector::access(int tid, int64_t offset, int64_t bytes, bool write) {
  const int warp = tid / kWarpSize;
  const uint32_t now = clock(warp, warp);
  for (int64_t byte = offset; byte < offset + bytes; ++byte) {
    Write& last_write = writes_[static_cast<size_t>(byte)];
    if (!ordered(tid, warp, last_write.writer, last_write.clock)) return Race{byte, last_write.writer, true};
    Read* reads = &reads_[static_cast<size_t>(byte * warps_)];
    if (write) {
      for (int w = 0; w < warps_; ++w) {
        const Read& r = reads[w];
        // -2 stands for threads of warp w: ordered() reads it as one of `warp` only when w is.
        int reader = r.reader == -2 && w != warp ? w * kWarpSize : r.reader;
        if (!ordered(tid, warp, reader, r.clock)) return Race{byte, r.reader, false};
      }
      last_write = {now, tid};
    } else {
      Read& mine = reads[warp];
      if (mine.clock != now) mine = {now, tid};
      else if (mine.reader != tid) mine.reader = -2;
    }
  }
  return std::nullopt;
}

void RaceDetector::publish(int warp, VectorClock& into) const {
  const uint32_t* seen = &clocks_[static_cast<size_t>(warp * warps_)];
  for (int v = 0; v < warps_; ++v) into[static_cast<size_t>(v)] = std::max(into[static_cast<size_t>(v)], seen[v]);
}

void RaceDetector::acquire(int warp, const VectorClock& from) {
  for (int v = 0; v < warps_; ++v) clock(warp, v) = std::max(clock(warp, v), from[static_cast<size_t>(v)]);
}

void RaceDetector::advance(int warp) { ++clock(warp, warp); }

void RaceDetector::synchronize_all() {
  VectorClock all = empty_clock();
  for (int w = 0; w < warps_; ++w) publish(w, all);
  for (int w = 0; w < warps_; ++w) {
    acquire(w, all);
    advance(w);
  }
}

}  // namespace tilejit::emu
