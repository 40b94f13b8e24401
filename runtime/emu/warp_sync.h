// Internal to the emulator: how the lanes of a warp meet for a warp-collective instruction
// (shfl / vote / match, mma.sync, ldmatrix / stmatrix, bar.warp.sync). Each lane deposits its inputs in the warp's
// exchange, then waits; the last lane of the member mask to arrive computes every lane's
// results and wakes the others, which then read theirs.
#pragma once

#include <fmt/format.h>

#include "runtime/emu/cta.h"

namespace tilejit::emu {

// The calling warp's exchange, after checking that `mask` names the calling lane and
// agrees with the lanes already waiting.
inline WarpExchange& warp_exchange(const char* op, uint32_t mask) {
  Cta& c = *current().cta;
  int tid = current().thread->tid, lane = tid % 32;
  WarpExchange& w = c.warps[static_cast<size_t>(tid / 32)];
  if (!(mask >> lane & 1))
    abort_thread(fmt::format("{} with member mask {:#010x}, which leaves out the calling lane {}", op, mask, lane));
  if (w.arrived == 0) {
    w.mask = mask;
  } else if (w.mask != mask) {
    abort_thread(fmt::format("{} with member mask {:#010x} while lanes {:#010x} of its warp wait with mask {:#010x}", op,
                             mask, w.arrived, w.mask));
  }
  return w;
}

// Marks the calling lane arrived (its inputs are deposited); returns when `combine(w)` has
// produced the results of every lane of the mask.
template <typename Combine>
void warp_rendezvous(WarpExchange& w, Combine combine) {
  Cta& c = *current().cta;
  Thread& self = *current().thread;
  int lane = self.tid % 32;
  w.arrived |= 1u << lane;
  if (w.arrived == w.mask) {
    combine(w);
    w.arrived = 0;
    int first = self.tid - lane;
    for (int i = 0; i < 32; ++i)
      if (w.mask >> i & 1) {
        Thread& t = c.threads[static_cast<size_t>(first + i)];
        if (t.state == ThreadState::at_warp_sync) t.state = ThreadState::runnable;
      }
    return;
  }
  self.state = ThreadState::at_warp_sync;
  while (self.state == ThreadState::at_warp_sync) yield_to_scheduler();
}

}  // namespace tilejit::emu
