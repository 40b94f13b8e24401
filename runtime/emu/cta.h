// Internal to the emulator: the state of one CTA while its threads run as fibers on one host
// thread (with the other CTAs of its thread-block cluster), and of the launch it belongs to.
// The runtime functions the kernel calls reach the running thread through `current()`.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/device.h"
#include "runtime/emu/allocation_table.h"
#include "runtime/emu/race_detector.h"

namespace tilejit::emu {

// A CTA's shared block starts at a multiple of this many bytes (and fits in it), so the low
// 18 bits of a shared pointer are its address in the shared window, as the GPU numbers it:
// wgmma's matrix descriptors and the 128-byte swizzle read those bits.
inline constexpr int64_t kSharedWindowBytes = int64_t{1} << 18;

struct Launch {
  std::string kernel;
  void (*entry)(void** args) = nullptr;
  void** args = nullptr;
  Dim3 grid;
  Dim3 cluster;  // CTAs per thread-block cluster along each axis ((1, 1, 1): no clusters)
  Dim3 clusters() const { return {grid.x / cluster.x, grid.y / cluster.y, grid.z / cluster.z}; }  // per axis
  int num_threads = 0;
  int64_t shared_bytes = 0;
  AllocationSnapshot allocations;  // global memory the kernel may touch
  bool racecheck = false;
  // The linear index of the first cluster (CTA without clusters) known to have failed;
  // clusters after it stop early, those before it run to their end.
  std::atomic<uint64_t> failed_at{UINT64_MAX};
};

enum class ThreadState : uint8_t { runnable, at_barrier, at_cluster_barrier, at_warp_sync, at_mbarrier, exited, aborted };

// One cp.async copy in flight: `bytes` land at `to` when its group is waited for, the first
// `source_bytes` from `from`, the rest zeros.
struct AsyncCopy {
  std::byte* to = nullptr;
  const std::byte* from = nullptr;
  int32_t bytes = 0, source_bytes = 0;
};

// One wgmma.mma_async in flight: what it read, so the wait can tell whether the shared memory
// under it changed before it completed (runtime/emu/wgmma_ops.cpp).
struct AsyncMma {
  uint64_t desc_a = 0, desc_b = 0;
  const struct WgmmaShape* shape = nullptr;
  uint64_t operand_hash = 0;
};

// The value of one accumulator register of a wgmma.mma_async, held back until a
// wgmma.wait_group completes its group (the register holds a placeholder until then).
struct PendingResult {
  uint32_t value = 0;
  uint64_t group = 0;  // the thread's commit-group number of the wgmma that wrote it
  const struct WgmmaShape* shape = nullptr;  // of that wgmma
};

// The tensor map of an emulated TMA copy (runtime/emu/tensor_map.h): rows of columns, with up
// to three outer dims before the rows, boxes of box_rows x box_columns at one index of each.
struct EmuTensorMap {
  static constexpr uint64_t kMagic = 0x74696c656a746d32;  // "tilejtm2"
  static constexpr int kMaxOuterDims = 3;
  uint64_t magic = 0;
  const std::byte* data = nullptr;
  int64_t rows = 0, columns = 0, row_stride_bytes = 0;
  int32_t element_bytes = 0, box_columns = 0, box_rows = 0, swizzle_bytes = 0;
  int32_t outer_dims = 0;
  std::array<int64_t, kMaxOuterDims> outer_sizes{}, outer_stride_bytes{};  // outermost first
};

// Where a TMA box lies in its map's tensor: its first column and row, and its index along
// each outer dim (outermost first).
struct BoxAt {
  int32_t column = 0, row = 0;
  std::array<int32_t, EmuTensorMap::kMaxOuterDims> outer{};
};

// One cp.async.bulk.tensor from shared memory to global memory in flight: the box at `from`,
// read by a wait of its bulk async-group (into `box`), goes to `at` in the map's tensor when
// a wait completes the group.
struct TmaStore {
  const std::byte* from = nullptr;
  EmuTensorMap map;
  BoxAt at;
  bool read = false;
  std::vector<std::byte> box;  // the shared bytes, once read
};

struct Thread {
  int tid = 0;
  ThreadState state = ThreadState::runnable;
  uint32_t barrier_id = 0;  // the named barrier it waits at (state at_barrier)
  void* context = nullptr;  // the fiber's saved context while it is suspended
  std::vector<AsyncCopy> open_copies;                    // issued since the last commit
  std::deque<std::vector<AsyncCopy>> committed_copies;   // groups in commit order
  bool wgmma_fenced = false;                   // wgmma.fence since the last wgmma.wait_group
  std::vector<AsyncMma> open_mmas;             // wgmma.mma_async since the last commit
  std::deque<std::vector<AsyncMma>> committed_mmas;
  uint64_t mma_groups_committed = 0, mma_groups_completed = 0;
  std::unordered_map<uint32_t, PendingResult> pending_results;  // by placeholder
  uint32_t next_placeholder = 0;
  uint32_t proxy_fenced_at = 0;                // the CTA's proxy clock at its last fence.proxy.async
  uint64_t cluster_arrivals = 0, cluster_waits = 0;  // barrier.cluster.arrive / .wait so far
  std::vector<TmaStore> open_stores;                   // TMA stores since the last bulk commit
  std::deque<std::vector<TmaStore>> committed_stores;  // bulk async-groups in commit order
};

// Per shared-memory word: the last generic-proxy write (st.shared, cp.async), which the async
// proxy (wgmma) sees only after the writer's fence.proxy.async.
struct ProxyShadow {
  uint32_t written_at = 0;
  int32_t writer = -1;
};

// One warp's exchange for its collectives (runtime/emu/warp_sync.h): lanes deposit a value
// (shuffles, votes, matches) or several words (mma.sync's fragments), the last lane of the
// mask to arrive computes every lane's result.
struct WarpExchange {
  static constexpr int kMaxWordsIn = 10;  // mma.sync: 4 A words, 2 B words, 4 accumulators
  static constexpr int kMaxWordsOut = 4;
  uint32_t arrived = 0;  // lanes waiting, as a mask
  uint32_t mask = 0;     // the participating lanes named by the first lane to arrive
  uint64_t values[32] = {};
  uint64_t results[32] = {};
  uint32_t words_in[32][kMaxWordsIn] = {};
  uint32_t words_out[32][kMaxWordsOut] = {};
  // wgmma.mma_async's A from registers: the warp's 16 rows (up to 32 elements each, as bits),
  // assembled by the last lane to arrive. Every lane reads it before it can arrive again.
  uint32_t a_rows[16][32] = {};
};

// One cp.async.bulk.tensor in flight: the box at `at` lands at `to` when a thread waits on its
// mbarrier (or the mbarrier is invalidated, an error).
struct TmaCopy {
  std::byte* to = nullptr;
  EmuTensorMap map;
  BoxAt at;
};

// An mbarrier object in shared memory (PTX ISA, "Parallel synchronization and communication
// instructions: mbarrier"): its current phase completes when every expected arrival has
// arrived and the transaction count is back to zero; then the next phase begins.
struct Mbarrier {
  int32_t expected = 0, pending = 0;  // arrivals per phase / still to come in this one
  int64_t tx_count = 0;               // bytes announced by expect-tx and not yet completed
  uint32_t phase = 0;                 // phases completed
  std::vector<TmaCopy> in_flight;     // copies that complete-tx on it
  // With the race check on: what its arrivals so far had seen, and what they had when the
  // last phase completed, which that phase's waiters acquire.
  VectorClock arrived, completed;
};

// One of a CTA's 16 named barriers (bar.sync id, count): threads arrived in the current use
// and the count the first of them named; with the race check on, what their warps had seen.
struct NamedBarrier {
  int arrived = 0, expected = 0;
  VectorClock released;
};
inline constexpr uint32_t kNamedBarriers = 16;

struct Cluster;

struct Cta {
  Launch* launch = nullptr;
  Dim3 ctaid;
  Cluster* cluster = nullptr;
  uint32_t rank = 0;  // %cluster_ctarank
  Dim3 rank_in_cluster;  // %cluster_ctaid
  std::vector<Thread> threads;
  std::byte* shared = nullptr;
  NamedBarrier barriers[kNamedBarriers];
  std::vector<WarpExchange> warps;
  RaceDetector* race = nullptr;  // when the race check is on
  std::vector<ProxyShadow> generic_writes;  // one per 4 bytes of shared memory
  uint32_t proxy_clock = 1;
  std::unordered_map<int64_t, Mbarrier> mbarriers;  // by offset in the shared block
  int unread_stores = 0;  // TMA stores of its threads whose shared boxes no wait has read yet
  std::string error;               // the first error; the CTA stops when it is set
  void* scheduler_context = nullptr;
};

// The CTAs of one thread-block cluster, which run together (their threads are fibers of one
// scheduler), and its barrier (barrier.cluster): a phase completes when every thread of every
// CTA has arrived.
struct Cluster {
  Dim3 id;                  // %clusterid
  std::vector<Cta*> ctas;   // by rank
  int64_t live = 0;         // threads of all its CTAs that have not exited: what a phase waits for
  int64_t arrived = 0;      // live threads arrived in the current phase
  uint64_t completed = 0;   // phases
};

// Whether every thread of `cta` has exited (a peer's shared memory is gone then).
inline bool all_exited(const Cta& cta) {
  for (const Thread& t : cta.threads)
    if (t.state != ThreadState::exited) return false;
  return true;
}

// After an arrival or an exit: completes the cluster barrier's phase when every live thread
// has arrived, releasing the threads that wait for it.
void complete_cluster_phase_if_done(Cluster& cluster);

// The CTA of the running thread's cluster whose shared memory holds `p` (a shared::cluster
// address), or null.
Cta* cta_holding(const void* p);

struct CurrentThread {
  Cta* cta = nullptr;
  Thread* thread = nullptr;
};
CurrentThread& current();

// Suspends the running thread and returns to the CTA's scheduler; returns when the
// scheduler resumes it.
void yield_to_scheduler();
// Checks a shared-memory access of the running thread (flags: codegen::HostAccessFlags):
// inside the CTA's block, aligned, and, with the race check on, not racing.
void check_shared(const void* pointer, int64_t bytes, uint32_t flags);
// The same for global memory: inside an allocation the launch may touch, and aligned.
void check_global(const void* pointer, int64_t bytes, uint32_t flags);

// The thread that last wrote shared word `word` (offset / 4) through the generic proxy and
// has not executed fence.proxy.async since, or -1: the async proxy (wgmma, TMA) must not
// touch that word yet.
inline int unfenced_generic_writer(const Cta& cta, int64_t word) {
  const ProxyShadow& w = cta.generic_writes[static_cast<size_t>(word)];
  return w.writer >= 0 && cta.threads[static_cast<size_t>(w.writer)].proxy_fenced_at <= w.written_at ? w.writer : -1;
}

// Records `message` (prefixed with kernel, block and thread) as the CTA's error and leaves
// the thread for good: the scheduler never resumes it. The frames on its stack are never
// unwound, so what they own is never freed.
[[noreturn]] void abort_thread(std::string message);

// A fault found by emulator code whose frames own memory (vectors, strings): thrown there,
// and caught by unwinding_faults where the kernel called in, which unwinds those frames
// before abort_thread leaves the fiber. (Exceptions cannot unwind the kernel's own frames:
// the JIT-compiled code has no unwind tables.)
struct KernelFault {
  std::string message;
};

// Runs `op`, a call from kernel code; a KernelFault it throws aborts the thread.
template <class Op>
decltype(auto) unwinding_faults(Op&& op) {
  std::string message;
  try {
    return op();
  } catch (KernelFault& fault) {
    message = std::move(fault.message);
  }
  abort_thread(std::move(message));
}
// A generic write of shared [offset, offset + bytes) of `cta`: reported when a TMA store
// still has to read it (runtime/emu/tma_ops.cpp).
void check_unread_store_sources(Cta& cta, int64_t offset, int64_t bytes);
// At a thread's exit: its TMA stores land (a thread must not exit before they read their boxes).
void finish_tma_stores(Thread& thread);

}  // namespace tilejit::emu
