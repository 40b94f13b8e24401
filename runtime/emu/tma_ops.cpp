// Emulation of sm_90's mbarrier objects and TMA tensor copies, as the PTX ISA defines them:
//   - mbarrier.init sets the arrivals a phase expects; mbarrier.arrive arrives;
//     mbarrier.arrive.expect_tx adds to the phase's transaction count, then arrives; a phase
//     completes when every arrival has come and the transaction count is zero, and
//     mbarrier.try_wait.parity P returns once the phase of parity P has completed;
//   - cp.async.bulk.tensor.{2,3,4,5}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
//     copies one box of a tensor map to shared memory, elements outside the tensor as zeros, each
//     16-byte chunk of the box placed by the map's swizzle (the XOR of address bits 4-6 with
//     bits 7-9: 128-byte swizzle; bits 4-5 / 7-8: 64-byte; bit 4 / 7: 32-byte), and completes
//     the box's bytes as transactions on the mbarrier.
//   - in a thread-block cluster, mbarrier.arrive on a peer's mbarrier (shared::cluster), and
//     the multicast form of the copy, which writes the box at the same offset of every CTA in
//     its mask and completes it on the mbarrier at the same offset in each.
//   - cp.async.bulk.tensor.{2,3,4,5}d.global.shared::cta.bulk_group copies a box from shared memory
//     to the tensor, elements outside it left alone, in the issuing thread's bulk async-group
//     (cp.async.bulk.commit_group, cp.async.bulk.wait_group[.read]).
// The copies land at the latest moment PTX allows: when a thread waits on their mbarrier.
// Their destination holds poison from the issue until then, so a kernel that reads a block
// before its phase completed computes garbage here as it may on the GPU. TMA writes through
// the async proxy: shared memory a thread wrote through the generic proxy must have been
// fenced by it (fence.proxy.async) before a copy overwrites it.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "codegen/host_compiler.h"
#include "runtime/emu/cta.h"
#include "runtime/emu/runtime_symbols.h"

namespace tilejit::emu {
namespace {

constexpr std::byte kInFlightPoison{0xA7};
constexpr int32_t kMaxArrivals = (1 << 20) - 1;

Cta& cta() { return *current().cta; }

// The offset of `p` in the CTA's shared block, which [p, p + bytes) must lie in, `alignment`-aligned.
int64_t shared_offset(const void* p, int64_t bytes, int64_t alignment, const char* op) {
  int64_t offset = static_cast<const std::byte*>(p) - cta().shared;
  if (offset < 0 || offset + bytes > cta().launch->shared_bytes)
    abort_thread(fmt::format("{} at shared offset {} ({} bytes) is outside the CTA's {} bytes of shared memory", op,
                             offset, bytes, cta().launch->shared_bytes));
  if (offset % alignment) abort_thread(fmt::format("{} at shared offset {}: it must be {}-byte aligned", op, offset, alignment));
  return offset;
}

Mbarrier& mbarrier_at(const void* p, const char* op) {
  auto it = cta().mbarriers.find(shared_offset(p, 8, 8, op));
  if (it == cta().mbarriers.end())
    abort_thread(fmt::format("{} on shared offset {}, where no mbarrier was initialized", op,
                             static_cast<const std::byte*>(p) - cta().shared));
  return it->second;
}

// " of cluster rank N" where `block` has peers: which CTA's shared memory a message means.
std::string of_rank(const Cta& block) {
  return block.cluster->ctas.size() > 1 ? fmt::format(" of cluster rank {}", block.rank) : std::string();
}

// The mbarrier at `offset` of `block`'s shared memory (another CTA's in the cluster, for a
// remote arrival or a multicast copy).
Mbarrier& mbarrier_of(Cta& block, int64_t offset, const char* op) {
  auto it = block.mbarriers.find(offset);
  if (it == block.mbarriers.end())
    abort_thread(fmt::format("{} on shared offset {}{}, where no mbarrier was initialized", op, offset, of_rank(block)));
  return it->second;
}

// Threads of `block` waiting on an mbarrier look at theirs again (each wait loops until its
// phase completed).
void wake_mbarrier_waiters(Cta& block) {
  for (Thread& t : block.threads)
    if (t.state == ThreadState::at_mbarrier) t.state = ThreadState::runnable;
}

void complete_phase_if_done(Cta& block, Mbarrier& b) {
  if (b.pending > 0 || b.tx_count != 0) return;
  ++b.phase;
  b.pending = b.expected;
  // A waiter that sees this phase complete is after every arrival of it and of the phases
  // before it (the clocks only grow, so the collected clock just keeps growing).
  if (block.race) b.completed = b.arrived;
  wake_mbarrier_waiters(block);
}

// With the race check on: an arrival of the running thread on `b`, an mbarrier of `block`,
// releases what its warp did so far to the phase's waiters. (An arrival from another CTA of
// the cluster releases nothing here: peers' accesses are not race-checked.)
void release_to(Cta& block, Mbarrier& b) {
  if (!block.race || &block != current().cta) return;
  const int warp = current().thread->tid / 32;
  block.race->publish(warp, b.arrived);
  block.race->advance(warp);
}

int64_t swizzled(int64_t address, int swizzle_bytes) {
  int64_t rows_mask = swizzle_bytes ? swizzle_bytes / 16 - 1 : 0;
  return address ^ (((address >> 7) & rows_mask) << 4);
}

int64_t box_bytes(const EmuTensorMap& m) { return int64_t{m.box_columns} * m.element_bytes * m.box_rows; }

// The map `map` points to, which must be one the emulator encoded.
EmuTensorMap tensor_map(const void* map, const char* op) {
  EmuTensorMap m;
  std::memcpy(&m, map, sizeof m);
  if (m.magic != EmuTensorMap::kMagic) abort_thread(fmt::format("{}: the tensor map is not one the emulator encoded", op));
  return m;
}

// Calls `visit(shared, global)` for every element of the box at `at` in `m`'s tensor whose
// shared copy starts at byte `base` of `block`'s shared memory: the element's bytes there
// (placed by the map's swizzle) and in the tensor (null outside it).
template <typename F>
void for_each_box_element(Cta& block, int64_t base, const EmuTensorMap& m, const BoxAt& at, F&& visit) {
  int64_t row_bytes = int64_t{m.box_columns} * m.element_bytes;
  int64_t first = std::clamp<int64_t>(-int64_t{at.column}, 0, m.box_columns);
  int64_t end = std::clamp<int64_t>(m.columns - at.column, first, m.box_columns);
  bool outer_inside = true;
  int64_t outer_offset = 0;
  for (size_t i = 0; i < static_cast<size_t>(m.outer_dims); ++i) {
    outer_inside = outer_inside && at.outer[i] >= 0 && at.outer[i] < m.outer_sizes[i];
    outer_offset += int64_t{at.outer[i]} * m.outer_stride_bytes[i];
  }
  for (int64_t r = 0; r < m.box_rows; ++r) {
    int64_t tensor_row = at.row + r;
    bool row_inside = outer_inside && tensor_row >= 0 && tensor_row < m.rows;
    const std::byte* tensor =
        m.data + outer_offset + tensor_row * m.row_stride_bytes + int64_t{at.column} * m.element_bytes;
    for (int64_t e = 0; e < m.box_columns; ++e) {
      std::byte* shared = block.shared + swizzled(base + r * row_bytes + e * m.element_bytes, m.swizzle_bytes);
      visit(shared, row_inside && e >= first && e < end ? const_cast<std::byte*>(tensor) + e * m.element_bytes : nullptr);
    }
  }
}

// Into the running thread's CTA, whose mbarrier the copy completes on.
void land(const TmaCopy& c) {
  Cta& block = cta();
  const EmuTensorMap& m = c.map;
  int64_t base = c.to - block.shared;
  auto bytes = static_cast<size_t>(m.element_bytes);
  for_each_box_element(block, base, m, c.at, [&](std::byte* shared, std::byte* tensor) {
    if (!tensor) return void(std::memset(shared, 0, bytes));
    check_global(tensor, m.element_bytes, 0);
    std::memcpy(shared, tensor, bytes);
  });
  // Written through the async proxy: no generic write of these words is pending any more.
  for (int64_t word = base / 4; word < (base + box_bytes(m)) / 4; ++word)
    block.generic_writes[static_cast<size_t>(word)] = {};
}

void land_copies(Mbarrier& b) {
  std::vector<TmaCopy> copies = std::move(b.in_flight);
  b.in_flight.clear();
  for (const TmaCopy& c : copies) {
    land(c);
    b.tx_count -= box_bytes(c.map);
  }
  complete_phase_if_done(cta(), b);
}

void mbarrier_init(void* bar, int32_t count) {
  int64_t offset = shared_offset(bar, 8, 8, "mbarrier.init");
  if (count < 1 || count > kMaxArrivals)
    abort_thread(fmt::format("mbarrier.init with {} expected arrivals: it must be in [1, {}]", count, kMaxArrivals));
  auto it = cta().mbarriers.find(offset);
  if (it != cta().mbarriers.end() && !it->second.in_flight.empty())
    abort_thread(fmt::format("mbarrier.init at shared offset {} while TMA copies still complete on it", offset));
  Mbarrier& b = cta().mbarriers[offset] = Mbarrier{count, count, 0, 0, {}, {}, {}};
  if (cta().race) b.arrived = b.completed = cta().race->empty_clock();
}

void mbarrier_inval(void* bar) {
  Mbarrier& b = mbarrier_at(bar, "mbarrier.inval");
  if (!b.in_flight.empty())
    abort_thread(fmt::format("mbarrier.inval while {} TMA copies still complete on it", b.in_flight.size()));
  cta().mbarriers.erase(static_cast<std::byte*>(bar) - cta().shared);
}

uint64_t mbarrier_arrive_expect_tx(void* bar, int32_t tx) {
  Mbarrier& b = mbarrier_at(bar, "mbarrier.arrive.expect_tx");
  if (b.pending == 0) abort_thread("mbarrier.arrive.expect_tx: more arrivals than the phase expects");
  uint64_t state = b.phase;
  b.tx_count += tx;
  --b.pending;
  release_to(cta(), b);
  complete_phase_if_done(cta(), b);
  return state;
}

// mbarrier.arrive (release, CTA scope): one arrival on the current phase.
uint64_t mbarrier_arrive(void* bar) {
  Mbarrier& b = mbarrier_at(bar, "mbarrier.arrive");
  if (b.pending == 0) abort_thread("mbarrier.arrive: more arrivals than the phase expects");
  uint64_t state = b.phase;
  --b.pending;
  release_to(cta(), b);
  complete_phase_if_done(cta(), b);
  // A waiter this arrival released (a producer refilling a slot) runs before the arriving
  // thread goes on, so a slot released before its last read is overwritten while it matters.
  yield_to_scheduler();
  return state;
}

// mbarrier.arrive.release.cluster.shared::cluster: `count` arrivals on an mbarrier of any CTA
// of the cluster (one that has not exited), released waiters running first as above.
void mbarrier_arrive_cluster(void* bar, int32_t count) {
  constexpr const char* op = "mbarrier.arrive.shared::cluster";
  Cta* owner = cta_holding(bar);
  if (!owner) abort_thread(fmt::format("{} at {}: the address is in no CTA of the cluster", op, bar));
  if (all_exited(*owner)) abort_thread(fmt::format("{} on cluster rank {}, which has exited", op, owner->rank));
  int64_t offset = static_cast<std::byte*>(bar) - owner->shared;
  if (offset % 8) abort_thread(fmt::format("{} at shared offset {}: it must be 8-byte aligned", op, offset));
  Mbarrier& b = mbarrier_of(*owner, offset, op);
  if (count < 1 || count > b.pending)
    abort_thread(fmt::format("{} with {} arrivals: the phase expects {} more", op, count, b.pending));
  b.pending -= count;
  release_to(*owner, b);
  complete_phase_if_done(*owner, b);
  yield_to_scheduler();
}

// Blocks until the phase of `parity` has completed (the GPU's try_wait may also return false
// before; the kernel loops then), landing the copies that complete on the mbarrier first.
bool mbarrier_try_wait_parity(void* bar, int32_t parity) {
  Thread& self = *current().thread;
  for (;;) {
    Mbarrier& b = mbarrier_at(bar, "mbarrier.try_wait.parity");  // again after each yield: the map may have grown
    if (!b.in_flight.empty()) land_copies(b);
    if ((b.phase & 1) != (static_cast<uint32_t>(parity) & 1)) {
      // acquire: what the completed phase's arrivals did comes before what follows
      if (cta().race) cta().race->acquire(self.tid / 32, b.completed);
      return true;
    }
    self.state = ThreadState::at_mbarrier;
    while (self.state == ThreadState::at_mbarrier) yield_to_scheduler();
  }
}

// The copy of one box into `block` at `offset`, completing on its mbarrier at `bar_offset`.
void issue_box(Cta& block, int64_t offset, int64_t bar_offset, const EmuTensorMap& m, const BoxAt& at,
               const char* op) {
  int64_t bytes = box_bytes(m);
  if (offset < 0 || offset + bytes > block.launch->shared_bytes)
    abort_thread(fmt::format("{} at shared offset {} ({} bytes){} is outside the CTA's {} bytes of shared memory", op,
                             offset, bytes, of_rank(block), block.launch->shared_bytes));
  if (offset % 128) abort_thread(fmt::format("{} at shared offset {}: it must be 128-byte aligned", op, offset));
  if (all_exited(block)) abort_thread(fmt::format("{} into cluster rank {}, which has exited", op, block.rank));
  Mbarrier& b = mbarrier_of(block, bar_offset, op);
  for (int64_t word = offset / 4; word < (offset + bytes) / 4; ++word)
    if (int writer = unfenced_generic_writer(block, word); writer >= 0)
      abort_thread(fmt::format("{} overwrites shared offset {}{}, which thread {} wrote through the generic proxy "
                               "without a fence.proxy.async since",
                               op, word * 4, of_rank(block), writer));
  std::memset(block.shared + offset, static_cast<int>(kInFlightPoison), static_cast<size_t>(bytes));
  b.in_flight.push_back({block.shared + offset, m, at});
  // A thread may already wait on the mbarrier (one that did not issue the copy): it lands it.
  wake_mbarrier_waiters(block);
}

// The map `map` points to, whose rank must be the copy's: `rank` coordinates, innermost first.
EmuTensorMap tensor_map_of_rank(const void* map, int rank, const char* op) {
  EmuTensorMap m = tensor_map(map, op);
  if (m.outer_dims + 2 != rank)
    abort_thread(fmt::format("{} with a tensor map of rank {}", op, m.outer_dims + 2));
  return m;
}

// Hopper faults (an illegal instruction) on a tensor copy, either way, whose innermost
// coordinate is not a whole number of 16 bytes, inside the tensor or not.
void check_column(const EmuTensorMap& m, const BoxAt& at, const char* op) {
  if (int64_t{at.column} * m.element_bytes % 16 != 0)
    abort_thread(fmt::format("{} at column {}: the innermost coordinate must be a multiple of 16 bytes (of {} "
                             "{}-byte elements); the GPU faults on any other",
                             op, at.column, std::max(16 / m.element_bytes, 1), m.element_bytes));
}

// TMA's coordinates (innermost dim first: column, row, then the outer dims from the innermost
// out) as a BoxAt.
BoxAt box_at(std::initializer_list<int32_t> coordinates) {
  const int32_t* c = coordinates.begin();
  BoxAt at{c[0], c[1], {}};
  const size_t outer = coordinates.size() - 2;
  for (size_t i = 0; i < outer; ++i) at.outer[outer - 1 - i] = c[2 + i];
  return at;
}

// cp.async.bulk.tensor.Nd: one box into the CTA that holds `to` (a shared::cluster address),
// completing on its mbarrier at `bar`'s offset (the ISA wants the mbarrier in the CTA the box
// lands in); with .multicast::cluster, into every CTA of `cta_mask` (bits by cluster rank) at
// the same offsets. Nothing extends the i16 mask and the i1 flags to the C types: only their
// own bits are read.
void tensor_copy(void* to, void* bar, const EmuTensorMap& m, const BoxAt& at, int32_t cta_mask, int32_t use_cta_mask,
                 int32_t cta_group, const char* op) {
  if (cta_group != 0) abort_thread(fmt::format("{}: .cta_group is not emulated (sm_100)", op));
  check_column(m, at, op);
  Cta* owner = cta_holding(to);
  if (!owner) abort_thread(fmt::format("{} to {}: the address is in no CTA of the cluster", op, to));
  int64_t offset = static_cast<std::byte*>(to) - owner->shared;
  int64_t bar_offset = shared_offset(bar, 8, 8, op);
  if (!(use_cta_mask & 1)) return issue_box(*owner, offset, bar_offset, m, at, op);
  const std::vector<Cta*>& ctas = cta().cluster->ctas;
  auto mask = static_cast<uint32_t>(cta_mask) & 0xffff;
  if (mask == 0 || mask >> ctas.size())
    abort_thread(fmt::format("{}.multicast::cluster with CTA mask {:#x}: the cluster has {} CTAs", op, mask, ctas.size()));
  for (uint32_t rank = 0; rank < ctas.size(); ++rank)
    if (mask >> rank & 1) issue_box(*ctas[rank], offset, bar_offset, m, at, op);
}

// The intrinsic of a rank (one i32 coordinate each): the destination, mbarrier and map, the
// coordinates, then the CTA mask, cache hint and flags.
template <typename... Coordinate>
void tensor_copy_of_rank(void* to, void* bar, const void* map, Coordinate... coordinates, int32_t cta_mask,
                         int64_t /*cache_hint*/, int32_t use_cta_mask, int32_t /*use_cache_hint*/, int32_t cta_group) {
  static constexpr const char* kNames[] = {"cp.async.bulk.tensor.2d", "cp.async.bulk.tensor.3d",
                                           "cp.async.bulk.tensor.4d", "cp.async.bulk.tensor.5d"};
  constexpr int rank = sizeof...(Coordinate);
  const char* op = kNames[rank - 2];
  tensor_copy(to, bar, tensor_map_of_rank(map, rank, op), box_at({coordinates...}), cta_mask, use_cta_mask, cta_group,
              op);
}

// cp.async.bulk.tensor.Nd.global.shared::cta.bulk_group: the box at shared `from` to `at` in
// the map's tensor, elements outside it left alone, in the thread's open bulk async-group. It
// reads the shared box at the latest moment PTX allows, the wait that completes its group's
// reads, and writes the tensor at the wait that completes the group (or when the thread
// exits); what a thread wrote there through the generic proxy it must have fenced
// (fence.proxy.async) before the issue, and nobody writes it before the read.
void tensor_store(const void* from, const EmuTensorMap& m, const BoxAt& at, const char* op) {
  check_column(m, at, op);
  int64_t offset = shared_offset(from, box_bytes(m), 128, op);
  for (int64_t word = offset / 4; word < (offset + box_bytes(m)) / 4; ++word)
    if (int writer = unfenced_generic_writer(cta(), word); writer >= 0)
      abort_thread(fmt::format("{} reads shared offset {}, which thread {} wrote through the generic proxy without a "
                               "fence.proxy.async since",
                               op, word * 4, writer));
  current().thread->open_stores.push_back({static_cast<const std::byte*>(from), m, at, false, {}});
  ++cta().unread_stores;
}

// The intrinsic of a rank: the source and map, the coordinates, then the cache hint and its flag.
template <typename... Coordinate>
void tensor_store_of_rank(const void* from, const void* map, Coordinate... coordinates, int64_t /*cache_hint*/,
                          int32_t /*use_cache_hint*/) {
  static constexpr const char* kNames[] = {
      "cp.async.bulk.tensor.2d.global.shared::cta", "cp.async.bulk.tensor.3d.global.shared::cta",
      "cp.async.bulk.tensor.4d.global.shared::cta", "cp.async.bulk.tensor.5d.global.shared::cta"};
  constexpr int rank = sizeof...(Coordinate);
  const char* op = kNames[rank - 2];
  tensor_store(from, tensor_map_of_rank(map, rank, op), box_at({coordinates...}), op);
}

void bulk_commit_group() {
  Thread& t = *current().thread;
  t.committed_stores.push_back(std::move(t.open_stores));
  t.open_stores.clear();
}

void read_box(TmaStore& store) {
  if (store.read) return;
  store.box.assign(store.from, store.from + box_bytes(store.map));
  store.read = true;
  --cta().unread_stores;
}

void write_box(const TmaStore& store) {
  auto bytes = static_cast<size_t>(store.map.element_bytes);
  int64_t base = store.from - cta().shared;
  for_each_box_element(cta(), base, store.map, store.at, [&](std::byte* shared, std::byte* tensor) {
    if (!tensor) return;
    check_global(tensor, store.map.element_bytes, codegen::kAccessWrite);
    std::memcpy(tensor, store.box.data() + (shared - (cta().shared + base)), bytes);
  });
}

// cp.async.bulk.wait_group.read N: until at most the N most recent bulk async-groups have not
// read their boxes.
void bulk_wait_group_read(int32_t pending) {
  Thread& t = *current().thread;
  size_t done = t.committed_stores.size() - std::min(t.committed_stores.size(), static_cast<size_t>(std::max(pending, 0)));
  for (size_t g = 0; g < done; ++g)
    for (TmaStore& store : t.committed_stores[g]) read_box(store);
}

// cp.async.bulk.wait_group N: until at most the N most recent bulk async-groups are pending.
void bulk_wait_group(int32_t pending) {
  Thread& t = *current().thread;
  bulk_wait_group_read(pending);
  while (t.committed_stores.size() > static_cast<size_t>(std::max(pending, 0))) {
    for (const TmaStore& store : t.committed_stores.front()) write_box(store);
    t.committed_stores.pop_front();
  }
}

}  // namespace

void check_unread_store_sources(Cta& block, int64_t offset, int64_t bytes) {
  auto overlaps = [&](const TmaStore& s) {
    int64_t from = s.from - block.shared;
    return !s.read && offset < from + box_bytes(s.map) && from < offset + bytes;
  };
  for (const Thread& t : block.threads) {
    bool hit = std::any_of(t.open_stores.begin(), t.open_stores.end(), overlaps);
    for (const auto& group : t.committed_stores) hit = hit || std::any_of(group.begin(), group.end(), overlaps);
    if (hit)
      abort_thread(fmt::format("shared memory write at offset {} into the box of a TMA store of thread {} that no "
                               "cp.async.bulk.wait_group.read has read yet",
                               offset, t.tid));
  }
}

void finish_tma_stores(Thread& thread) {
  size_t unread = thread.open_stores.size();
  for (const auto& group : thread.committed_stores)
    unread += static_cast<size_t>(std::count_if(group.begin(), group.end(), [](const TmaStore& s) { return !s.read; }));
  if (unread > 0)
    abort_thread(fmt::format("the thread exits with {} TMA stores (cp.async.bulk.tensor to global memory) whose "
                             "shared boxes no cp.async.bulk.wait_group.read has read: its CTA's shared memory may be "
                             "gone before they do",
                             unread));
  bulk_wait_group(0);
}

void add_tma_symbols(codegen::HostSymbols& out) {
  auto add = [&](const char* nvvm, void* fn) { out.emplace_back(codegen::host_intrinsic_name(nvvm), fn); };
  add("llvm.nvvm.mbarrier.init.shared", reinterpret_cast<void*>(mbarrier_init));
  add("llvm.nvvm.mbarrier.inval.shared", reinterpret_cast<void*>(mbarrier_inval));
  add("llvm.nvvm.mbarrier.arrive.shared", reinterpret_cast<void*>(mbarrier_arrive));
  // Release or relaxed, at CTA or cluster scope: the same where every access is seen at once.
  for (const char* arrive :
       {"llvm.nvvm.mbarrier.arrive.scope.cta.space.cluster", "llvm.nvvm.mbarrier.arrive.scope.cluster.space.cluster",
        "llvm.nvvm.mbarrier.arrive.relaxed.scope.cta.space.cluster",
        "llvm.nvvm.mbarrier.arrive.relaxed.scope.cluster.space.cluster"})
    add(arrive, reinterpret_cast<void*>(mbarrier_arrive_cluster));
  add("llvm.nvvm.mbarrier.arrive.expect.tx.scope.cta.space.cta", reinterpret_cast<void*>(mbarrier_arrive_expect_tx));
  // Acquire at CTA or cluster scope: the same where every access is seen at once.
  for (const char* wait : {"llvm.nvvm.mbarrier.try.wait.parity.scope.cta.space.cta",
                           "llvm.nvvm.mbarrier.try.wait.parity.scope.cluster.space.cta"})
    add(wait, reinterpret_cast<void*>(mbarrier_try_wait_parity));
  using I = int32_t;
  add("llvm.nvvm.cp.async.bulk.tensor.g2s.tile.2d", reinterpret_cast<void*>(tensor_copy_of_rank<I, I>));
  add("llvm.nvvm.cp.async.bulk.tensor.g2s.tile.3d", reinterpret_cast<void*>(tensor_copy_of_rank<I, I, I>));
  add("llvm.nvvm.cp.async.bulk.tensor.g2s.tile.4d", reinterpret_cast<void*>(tensor_copy_of_rank<I, I, I, I>));
  add("llvm.nvvm.cp.async.bulk.tensor.g2s.tile.5d", reinterpret_cast<void*>(tensor_copy_of_rank<I, I, I, I, I>));
  add("llvm.nvvm.cp.async.bulk.tensor.s2g.tile.2d", reinterpret_cast<void*>(tensor_store_of_rank<I, I>));
  add("llvm.nvvm.cp.async.bulk.tensor.s2g.tile.3d", reinterpret_cast<void*>(tensor_store_of_rank<I, I, I>));
  add("llvm.nvvm.cp.async.bulk.tensor.s2g.tile.4d", reinterpret_cast<void*>(tensor_store_of_rank<I, I, I, I>));
  add("llvm.nvvm.cp.async.bulk.tensor.s2g.tile.5d", reinterpret_cast<void*>(tensor_store_of_rank<I, I, I, I, I>));
  add("llvm.nvvm.cp.async.bulk.commit.group", reinterpret_cast<void*>(bulk_commit_group));
  add("llvm.nvvm.cp.async.bulk.wait.group.read", reinterpret_cast<void*>(bulk_wait_group_read));
  add("llvm.nvvm.cp.async.bulk.wait.group", reinterpret_cast<void*>(bulk_wait_group));
}

}  // namespace tilejit::emu
