// Emulation of the per-thread GPU state and of the operations that synchronize threads:
// special registers, CTA barriers, and the warp collectives (shuffles, votes, matches, warp
// barriers) with the semantics of the PTX ISA's shfl.sync, vote.sync, match.sync and
// bar.warp.sync.
#include <algorithm>
#include <bit>
#include <cstring>

#include <fmt/format.h>

#include "runtime/emu/cta.h"
#include "runtime/emu/runtime_symbols.h"
#include "runtime/emu/warp_sync.h"

namespace tilejit::emu {
namespace {

Cta& cta() { return *current().cta; }
int tid() { return current().thread->tid; }
int lane() { return tid() % 32; }

uint32_t tid_x() { return static_cast<uint32_t>(tid()); }
uint32_t zero() { return 0; }
uint32_t one() { return 1; }
uint32_t ntid_x() { return static_cast<uint32_t>(cta().launch->num_threads); }
uint32_t ctaid_x() { return cta().ctaid.x; }
uint32_t ctaid_y() { return cta().ctaid.y; }
uint32_t ctaid_z() { return cta().ctaid.z; }
uint32_t nctaid_x() { return cta().launch->grid.x; }
uint32_t nctaid_y() { return cta().launch->grid.y; }
uint32_t nctaid_z() { return cta().launch->grid.z; }
uint32_t cluster_ctarank() { return cta().rank; }
uint32_t cluster_nctarank() { return static_cast<uint32_t>(cta().cluster->ctas.size()); }
uint32_t cluster_ctaid_x() { return cta().rank_in_cluster.x; }
uint32_t cluster_ctaid_y() { return cta().rank_in_cluster.y; }
uint32_t cluster_ctaid_z() { return cta().rank_in_cluster.z; }
uint32_t cluster_nctaid_x() { return cta().launch->cluster.x; }
uint32_t cluster_nctaid_y() { return cta().launch->cluster.y; }
uint32_t cluster_nctaid_z() { return cta().launch->cluster.z; }
uint32_t clusterid_x() { return cta().cluster->id.x; }
uint32_t clusterid_y() { return cta().cluster->id.y; }
uint32_t clusterid_z() { return cta().cluster->id.z; }
uint32_t nclusterid_x() { return cta().launch->clusters().x; }
uint32_t nclusterid_y() { return cta().launch->clusters().y; }
uint32_t nclusterid_z() { return cta().launch->clusters().z; }
// A launch of (1, 1, 1) clusters is one without, as the CUDA device launches it.
bool is_explicit_cluster() {
  const Dim3& c = cta().launch->cluster;
  return c.x * c.y * c.z > 1;
}
uint32_t laneid() { return static_cast<uint32_t>(lane()); }
uint32_t warpid() { return static_cast<uint32_t>(tid() / 32); }
uint32_t nwarpid() { return static_cast<uint32_t>((cta().launch->num_threads + 31) / 32); }
uint32_t warpsize() { return 32; }

// With the race check on: the warps of the threads waiting at `bar` (and of the running
// thread when `running_waits`) take in what every arrival had seen, and go on after it.
void release_barrier_warps(Cta& c, NamedBarrier& bar, uint32_t id, bool running_waits) {
  uint32_t warps = 0;  // as a mask: a CTA has at most 32
  for (const Thread& t : c.threads)
    if ((t.state == ThreadState::at_barrier && t.barrier_id == id) || (running_waits && &t == current().thread))
      warps |= uint32_t{1} << (t.tid / 32);
  for (int w = 0; warps; ++w, warps >>= 1) {
    if (!(warps & 1)) continue;
    c.race->acquire(w, bar.released);
    c.race->advance(w);
  }
  std::fill(bar.released.begin(), bar.released.end(), 0);
}

// The calling thread's arrival at named barrier `id` for a count of `count` (`instruction`
// names it in errors; `waits`: bar.sync, which waits for the barrier, not bar.arrive); true
// when it completed the barrier, which releases its waiting threads.
bool arrive_at_barrier(const char* instruction, uint32_t id, uint32_t count, bool waits) {
  Cta& c = cta();
  if (id >= kNamedBarriers)
    abort_thread(fmt::format("{} {}: barriers are numbered 0 to {}", instruction, id, kNamedBarriers - 1));
  if (count == 0 || count % 32 != 0 || count > c.threads.size())
    abort_thread(fmt::format("{} {}, {}: the count must be a multiple of 32 in [32, {}] (the CTA's threads)",
                             instruction, id, count, c.threads.size()));
  NamedBarrier& bar = c.barriers[id];
  if (bar.arrived == 0) bar.expected = static_cast<int>(count);
  if (bar.expected != static_cast<int>(count))
    abort_thread(fmt::format("{} {}, {}: {} threads already arrived there for a count of {}", instruction, id, count,
                             bar.arrived, bar.expected));
  if (c.race) {
    const int warp = current().thread->tid / 32;
    c.race->publish(warp, bar.released);
    if (!waits) c.race->advance(warp);
  }
  if (++bar.arrived < bar.expected) return false;
  bar.arrived = 0;
  if (c.race) release_barrier_warps(c, bar, id, waits);
  for (Thread& t : c.threads)
    if (t.state == ThreadState::at_barrier && t.barrier_id == id) t.state = ThreadState::runnable;
  return true;
}

// bar.sync `id`, `count`: the last of `count` threads to arrive at named barrier `id`
// releases the others. Every thread that uses the barrier at the same time must name the
// same count, a multiple of the warp size.
void barrier_count(uint32_t id, uint32_t count) {
  if (arrive_at_barrier("bar.sync", id, count, true)) return;
  Thread& self = *current().thread;
  self.barrier_id = id;
  self.state = ThreadState::at_barrier;
  while (self.state == ThreadState::at_barrier) yield_to_scheduler();
}

// bar.arrive `id`, `count`: an arrival that counts towards the barrier's `count` without
// waiting for it (a producer's signal to threads that bar.sync there).
void barrier_arrive_count(uint32_t id, uint32_t count) { arrive_at_barrier("bar.arrive", id, count, false); }

// barrier.cluster.arrive (release; .relaxed without, the same here, where every access is
// seen at once): the thread's arrival on the cluster barrier's current phase, which completes
// when every thread of the cluster that has not exited has arrived. Each arrival must be
// followed by the thread's barrier.cluster.wait before its next one.
void cluster_arrive() {
  Thread& self = *current().thread;
  Cluster& cluster = *cta().cluster;
  if (self.cluster_arrivals > self.cluster_waits)
    abort_thread("barrier.cluster.arrive twice without a barrier.cluster.wait between");
  ++self.cluster_arrivals;
  ++cluster.arrived;
  complete_cluster_phase_if_done(cluster);
}

// barrier.cluster.wait (acquire): until the phase of the thread's last arrival completed.
void cluster_wait() {
  Thread& self = *current().thread;
  if (self.cluster_waits == self.cluster_arrivals) abort_thread("barrier.cluster.wait without a barrier.cluster.arrive");
  ++self.cluster_waits;
  while (cta().cluster->completed < self.cluster_waits) {
    self.state = ThreadState::at_cluster_barrier;
    while (self.state == ThreadState::at_cluster_barrier) yield_to_scheduler();
  }
}

// fence.mbarrier_init.release.cluster: every access is seen at once here.
void fence_mbarrier_init() {}

// bar.sync `id` for the whole CTA.
void barrier(uint32_t id) { barrier_count(id, static_cast<uint32_t>(cta().threads.size())); }
void barrier0() { barrier(0); }

// setmaxnreg.{inc,dec}: a warpgroup's register budget changes; the emulator's registers do
// not run out, so only the count's rules are checked.
void set_max_registers(uint32_t count) {
  if (count < 24 || count > 256 || count % 8 != 0)
    abort_thread(fmt::format("setmaxnreg {}: the register count must be a multiple of 8 in [24, 256]", count));
}

// Deposits this lane's value; when every lane of `mask` has arrived, the last one runs
// `combine` over the warp's values to produce every participating lane's result.
template <typename Combine>
uint64_t warp_collective(const char* op, uint32_t mask, uint64_t value, Combine combine) {
  WarpExchange& w = warp_exchange(op, mask);
  w.values[lane()] = value;
  warp_rendezvous(w, combine);
  return w.results[lane()];
}

enum class ShuffleMode { idx, up, down, bfly };

// shfl.sync: lane i reads the value of source lane j, or keeps its own when j is out of its
// segment (c packs the clamp value in bits 0-4 and the segment mask in bits 8-12).
template <ShuffleMode mode>
uint32_t shuffle(uint32_t mask, uint32_t value, uint32_t b, uint32_t c) {
  return static_cast<uint32_t>(warp_collective("shfl.sync", mask, value, [=](WarpExchange& w) {
    uint32_t clamp = c & 31, segmask = (c >> 8) & 31;
    for (uint32_t i = 0; i < 32; ++i) {
      if (!(w.mask >> i & 1)) continue;
      uint32_t max_lane = (i & segmask) | (clamp & ~segmask), min_lane = i & segmask;
      int64_t j = 0;
      bool in_range = false;
      switch (mode) {
        case ShuffleMode::idx: j = min_lane | (b & ~segmask); in_range = j <= max_lane; break;
        case ShuffleMode::up: j = int64_t(i) - b; in_range = j >= min_lane; break;
        case ShuffleMode::down: j = int64_t(i) + b; in_range = j <= max_lane; break;
        case ShuffleMode::bfly: j = i ^ b; in_range = j <= max_lane; break;
      }
      if (!in_range) j = i;
      w.results[i] = w.values[j & 31];
    }
  }));
}
template <ShuffleMode mode>
float shuffle_f32(uint32_t mask, float value, uint32_t b, uint32_t c) {
  return std::bit_cast<float>(shuffle<mode>(mask, std::bit_cast<uint32_t>(value), b, c));
}

uint32_t ballot_of(const WarpExchange& w) {
  uint32_t bits = 0;
  for (int i = 0; i < 32; ++i)
    if ((w.mask >> i & 1) && (w.values[i] & 1)) bits |= 1u << i;
  return bits;
}
uint32_t vote(const char* op, uint32_t mask, uint32_t predicate, int kind) {
  return static_cast<uint32_t>(warp_collective(op, mask, predicate & 1, [=](WarpExchange& w) {
    uint32_t bits = ballot_of(w);
    uint64_t r = kind == 0 ? bits == w.mask : kind == 1 ? bits != 0 : kind == 2 ? (bits == 0 || bits == w.mask) : bits;
    for (int i = 0; i < 32; ++i) w.results[i] = r;
  }));
}
bool vote_all(uint32_t mask, uint32_t p) { return vote("vote.all.sync", mask, p, 0); }
bool vote_any(uint32_t mask, uint32_t p) { return vote("vote.any.sync", mask, p, 1); }
bool vote_uni(uint32_t mask, uint32_t p) { return vote("vote.uni.sync", mask, p, 2); }
uint32_t vote_ballot(uint32_t mask, uint32_t p) { return vote("vote.ballot.sync", mask, p, 3); }

// bar.warp.sync: the lanes of `mask` meet, their earlier memory accesses ordered before
// what each does after (for the race check, the warp's later accesses come after).
void warp_sync(uint32_t mask) {
  warp_collective("bar.warp.sync", mask, 0, [](WarpExchange&) {
    if (Cta& c = cta(); c.race) c.race->advance(current().thread->tid / 32);
  });
}

// match.any.sync: the mask of lanes holding the same value as this lane.
uint32_t match_any(const char* op, uint32_t mask, uint64_t value) {
  return static_cast<uint32_t>(warp_collective(op, mask, value, [](WarpExchange& w) {
    for (int i = 0; i < 32; ++i) {
      if (!(w.mask >> i & 1)) continue;
      uint32_t same = 0;
      for (int j = 0; j < 32; ++j)
        if ((w.mask >> j & 1) && w.values[j] == w.values[i]) same |= 1u << j;
      w.results[i] = same;
    }
  }));
}
uint32_t match_any_i32(uint32_t mask, uint32_t value) { return match_any("match.any.sync", mask, value); }
uint32_t match_any_i64(uint32_t mask, uint64_t value) { return match_any("match.any.sync", mask, value); }

// match.all.sync returns {mask, predicate}; the host binding writes it through `result`
// (laid out as LLVM stores {i32, i1}: the mask, then one byte).
struct MatchAllResult {
  uint32_t mask;
  uint8_t predicate;
};
void match_all(const char* op, MatchAllResult* result, uint32_t mask, uint64_t value) {
  uint32_t all = static_cast<uint32_t>(warp_collective(op, mask, value, [](WarpExchange& w) {
    bool same = true;
    uint64_t first = 0;
    bool seen = false;
    for (int i = 0; i < 32; ++i)
      if (w.mask >> i & 1) {
        if (seen && w.values[i] != first) same = false;
        first = w.values[i], seen = true;
      }
    for (int i = 0; i < 32; ++i) w.results[i] = same ? w.mask : 0;
  }));
  *result = {all, static_cast<uint8_t>(all != 0)};
}
void match_all_i32(MatchAllResult* r, uint32_t mask, uint32_t value) { match_all("match.all.sync", r, mask, value); }
void match_all_i64(MatchAllResult* r, uint32_t mask, uint64_t value) { match_all("match.all.sync", r, mask, value); }

template <typename F>
void* address(F* f) {
  return reinterpret_cast<void*>(f);
}

}  // namespace

void complete_cluster_phase_if_done(Cluster& cluster) {
  if (cluster.arrived == 0 || cluster.arrived < cluster.live) return;
  cluster.arrived = 0;
  ++cluster.completed;
  for (Cta* c : cluster.ctas) {
    if (c->race) c->race->synchronize_all();
    for (Thread& t : c->threads)
      if (t.state == ThreadState::at_cluster_barrier) t.state = ThreadState::runnable;
  }
}

void add_thread_symbols(codegen::HostSymbols& out) {
  auto add = [&](const char* nvvm, void* fn) { out.emplace_back(codegen::host_intrinsic_name(nvvm), fn); };
  add("llvm.nvvm.read.ptx.sreg.tid.x", address(tid_x));
  add("llvm.nvvm.read.ptx.sreg.tid.y", address(zero));
  add("llvm.nvvm.read.ptx.sreg.tid.z", address(zero));
  add("llvm.nvvm.read.ptx.sreg.ntid.x", address(ntid_x));
  add("llvm.nvvm.read.ptx.sreg.ntid.y", address(one));
  add("llvm.nvvm.read.ptx.sreg.ntid.z", address(one));
  add("llvm.nvvm.read.ptx.sreg.ctaid.x", address(ctaid_x));
  add("llvm.nvvm.read.ptx.sreg.ctaid.y", address(ctaid_y));
  add("llvm.nvvm.read.ptx.sreg.ctaid.z", address(ctaid_z));
  add("llvm.nvvm.read.ptx.sreg.nctaid.x", address(nctaid_x));
  add("llvm.nvvm.read.ptx.sreg.nctaid.y", address(nctaid_y));
  add("llvm.nvvm.read.ptx.sreg.nctaid.z", address(nctaid_z));
  add("llvm.nvvm.read.ptx.sreg.laneid", address(laneid));
  add("llvm.nvvm.read.ptx.sreg.warpid", address(warpid));
  add("llvm.nvvm.read.ptx.sreg.nwarpid", address(nwarpid));
  add("llvm.nvvm.read.ptx.sreg.warpsize", address(warpsize));
  add("llvm.nvvm.barrier.cta.sync.aligned.all", address(barrier));
  add("llvm.nvvm.barrier.cta.sync.all", address(barrier));
  add("llvm.nvvm.barrier0", address(barrier0));
  add("llvm.nvvm.read.ptx.sreg.cluster.ctarank", address(cluster_ctarank));
  add("llvm.nvvm.read.ptx.sreg.cluster.nctarank", address(cluster_nctarank));
  add("llvm.nvvm.read.ptx.sreg.cluster.ctaid.x", address(cluster_ctaid_x));
  add("llvm.nvvm.read.ptx.sreg.cluster.ctaid.y", address(cluster_ctaid_y));
  add("llvm.nvvm.read.ptx.sreg.cluster.ctaid.z", address(cluster_ctaid_z));
  add("llvm.nvvm.read.ptx.sreg.cluster.nctaid.x", address(cluster_nctaid_x));
  add("llvm.nvvm.read.ptx.sreg.cluster.nctaid.y", address(cluster_nctaid_y));
  add("llvm.nvvm.read.ptx.sreg.cluster.nctaid.z", address(cluster_nctaid_z));
  add("llvm.nvvm.read.ptx.sreg.clusterid.x", address(clusterid_x));
  add("llvm.nvvm.read.ptx.sreg.clusterid.y", address(clusterid_y));
  add("llvm.nvvm.read.ptx.sreg.clusterid.z", address(clusterid_z));
  add("llvm.nvvm.read.ptx.sreg.nclusterid.x", address(nclusterid_x));
  add("llvm.nvvm.read.ptx.sreg.nclusterid.y", address(nclusterid_y));
  add("llvm.nvvm.read.ptx.sreg.nclusterid.z", address(nclusterid_z));
  add("llvm.nvvm.is_explicit_cluster", address(is_explicit_cluster));
  for (const char* arrive : {"llvm.nvvm.barrier.cluster.arrive", "llvm.nvvm.barrier.cluster.arrive.relaxed",
                             "llvm.nvvm.barrier.cluster.arrive.aligned", "llvm.nvvm.barrier.cluster.arrive.relaxed.aligned"})
    add(arrive, address(cluster_arrive));
  add("llvm.nvvm.barrier.cluster.wait", address(cluster_wait));
  add("llvm.nvvm.barrier.cluster.wait.aligned", address(cluster_wait));
  add("llvm.nvvm.fence.mbarrier_init.release.cluster", address(fence_mbarrier_init));
  add("llvm.nvvm.barrier.cta.sync.aligned.count", address(barrier_count));
  add("llvm.nvvm.barrier.cta.sync.count", address(barrier_count));
  add("llvm.nvvm.barrier.cta.arrive.aligned.count", address(barrier_arrive_count));
  add("llvm.nvvm.barrier.cta.arrive.count", address(barrier_arrive_count));
  add("llvm.nvvm.setmaxnreg.inc.sync.aligned.u32", address(set_max_registers));
  add("llvm.nvvm.setmaxnreg.dec.sync.aligned.u32", address(set_max_registers));
  add("llvm.nvvm.shfl.sync.idx.i32", address(shuffle<ShuffleMode::idx>));
  add("llvm.nvvm.shfl.sync.up.i32", address(shuffle<ShuffleMode::up>));
  add("llvm.nvvm.shfl.sync.down.i32", address(shuffle<ShuffleMode::down>));
  add("llvm.nvvm.shfl.sync.bfly.i32", address(shuffle<ShuffleMode::bfly>));
  add("llvm.nvvm.shfl.sync.idx.f32", address(shuffle_f32<ShuffleMode::idx>));
  add("llvm.nvvm.shfl.sync.up.f32", address(shuffle_f32<ShuffleMode::up>));
  add("llvm.nvvm.shfl.sync.down.f32", address(shuffle_f32<ShuffleMode::down>));
  add("llvm.nvvm.shfl.sync.bfly.f32", address(shuffle_f32<ShuffleMode::bfly>));
  add("llvm.nvvm.vote.all.sync", address(vote_all));
  add("llvm.nvvm.vote.any.sync", address(vote_any));
  add("llvm.nvvm.vote.uni.sync", address(vote_uni));
  add("llvm.nvvm.vote.ballot.sync", address(vote_ballot));
  add("llvm.nvvm.bar.warp.sync", address(warp_sync));
  add("llvm.nvvm.match.any.sync.i32", address(match_any_i32));
  add("llvm.nvvm.match.any.sync.i64", address(match_any_i64));
  add("llvm.nvvm.match.all.sync.i32p", address(match_all_i32));
  add("llvm.nvvm.match.all.sync.i64p", address(match_all_i64));
}

}  // namespace tilejit::emu
