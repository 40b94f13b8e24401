// Emulation of the memory spaces and the checks on every access: global accesses must fall
// inside an allocation the runtime knows and be naturally aligned; shared accesses must fall
// inside the CTA's shared block. With TILEJIT_EMU_RACECHECK=1, shared accesses are also
// checked for races (runtime/emu/race_detector.h). Every shared write is also remembered for
// the async-proxy check of wgmma's operand reads (runtime/emu/wgmma_ops.cpp).
#include <cstdint>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "codegen/host_compiler.h"
#include "runtime/emu/cta.h"
#include "runtime/emu/runtime_symbols.h"

namespace tilejit::emu {
namespace {

const char* access_name(uint32_t flags) {
  if (flags & codegen::kAccessAtomic) return "atomic";
  return flags & codegen::kAccessWrite ? "store" : "load";
}

// PTX requires every access to be aligned to its size (vector accesses included).
bool misaligned(uintptr_t address, int64_t bytes) {
  return (bytes == 2 || bytes == 4 || bytes == 8 || bytes == 16) && address % static_cast<uintptr_t>(bytes) != 0;
}

std::byte* shared_base() { return current().cta->shared; }

std::string race_message(const Race& race, bool write) {
  std::string whom = race.other == -2 ? std::string("several threads") : fmt::format("thread {}", race.other);
  return fmt::format("shared memory race at offset {}: {} here, {} {} with no barrier ordering the two", race.offset,
                     write ? "written" : "read", race.other_wrote ? "written by" : "read by", whom);
}

void check_race(Cta& cta, int64_t offset, int64_t bytes, uint32_t flags) {
  bool write = flags & codegen::kAccessWrite;
  std::optional<Race> race = cta.race->access(current().thread->tid, offset, bytes, write);
  // No string may live in this frame: abort_thread never unwinds it.
  if (race) abort_thread(race_message(*race, write));
}

// Where an out-of-bounds global access fell, relative to the nearest allocation.
std::string out_of_bounds_global(const Launch& launch, uintptr_t address, int64_t bytes, uint32_t flags) {
  std::string where = "no allocation is near";
  if (const Allocation* a = launch.allocations.nearest(address)) {
    if (address < a->begin)
      where = fmt::format("{} bytes before the {}-byte allocation at {:#x}", a->begin - address, a->bytes, a->begin);
    else
      where = fmt::format("{} bytes past the start of the {}-byte allocation at {:#x}", address - a->begin, a->bytes, a->begin);
  }
  return fmt::format("out-of-bounds global {} of {} bytes at {:#x} ({})", access_name(flags), bytes, address, where);
}

}  // namespace

void check_global(const void* pointer, int64_t bytes, uint32_t flags) {
  const Launch& launch = *current().cta->launch;
  auto address = reinterpret_cast<uintptr_t>(pointer);
  if (misaligned(address, bytes))
    abort_thread(fmt::format("misaligned {}-byte global {} at {:#x}", bytes, access_name(flags), address));
  if (launch.allocations.find(address, static_cast<size_t>(bytes))) return;
  // No string may live in this frame: abort_thread never unwinds it.
  abort_thread(out_of_bounds_global(launch, address, bytes, flags));
}

void check_shared(const void* pointer, int64_t bytes, uint32_t flags) {
  Cta& cta = *current().cta;
  auto address = reinterpret_cast<uintptr_t>(pointer);
  int64_t offset = static_cast<int64_t>(address - reinterpret_cast<uintptr_t>(cta.shared));
  int64_t size = cta.launch->shared_bytes;
  if (offset < 0 || offset + bytes > size)
    abort_thread(fmt::format("shared memory {} of {} bytes at offset {} is outside the CTA's {} bytes of shared memory",
                             access_name(flags), bytes, offset, size));
  if (misaligned(address, bytes))
    abort_thread(fmt::format("misaligned {}-byte shared {} at offset {}", bytes, access_name(flags), offset));
  if (cta.race && !(flags & codegen::kAccessAtomic)) check_race(cta, offset, bytes, flags);
  if (flags & codegen::kAccessWrite) {
    if (cta.unread_stores > 0) check_unread_store_sources(cta, offset, bytes);
    for (int64_t word = offset / 4; word <= (offset + bytes - 1) / 4; ++word)
      cta.generic_writes[static_cast<size_t>(word)] = {cta.proxy_clock, current().thread->tid};
  }
}

Cta* cta_holding(const void* p) {
  auto address = reinterpret_cast<uintptr_t>(p);
  for (Cta* c : current().cta->cluster->ctas) {
    auto base = reinterpret_cast<uintptr_t>(c->shared);
    if (address >= base && address - base < static_cast<uintptr_t>(kSharedWindowBytes)) return c;
  }
  return nullptr;
}

namespace {

// An access through a shared::cluster address: the running CTA's own shared memory is
// checked as such; another CTA's must be inside its block, aligned, and that CTA must not
// have exited (PTX: a CTA accessing a peer's shared memory must make sure the peer is still
// running, as with barrier.cluster before it exits). Accesses to a peer's memory are not
// race-checked, nor seen by the async-proxy check.
void check_cluster_shared(const void* pointer, int64_t bytes, uint32_t flags) {
  Cta* owner = cta_holding(pointer);
  if (owner == current().cta) return check_shared(pointer, bytes, flags);
  auto address = reinterpret_cast<uintptr_t>(pointer);
  if (!owner) abort_thread(fmt::format("shared::cluster {} at {:#x} is in no CTA of the cluster", access_name(flags), address));
  int64_t offset = static_cast<int64_t>(address - reinterpret_cast<uintptr_t>(owner->shared));
  if (offset + bytes > owner->launch->shared_bytes)
    abort_thread(fmt::format("shared::cluster {} of {} bytes at offset {} of cluster rank {} is outside its {} bytes of "
                             "shared memory",
                             access_name(flags), bytes, offset, owner->rank, owner->launch->shared_bytes));
  if (misaligned(address, bytes))
    abort_thread(fmt::format("misaligned {}-byte shared::cluster {} at offset {} of cluster rank {}", bytes,
                             access_name(flags), offset, owner->rank));
  if (all_exited(*owner))
    abort_thread(fmt::format("shared::cluster {} at offset {} of cluster rank {}, which has exited", access_name(flags),
                             offset, owner->rank));
}

// mapa.shared::cluster: the address of the variable at `p` in the running CTA's shared memory
// in the shared memory of the cluster's CTA `rank`.
void* map_to_rank(void* p, uint32_t rank) {
  Cta& self = *current().cta;
  int64_t offset = static_cast<std::byte*>(p) - self.shared;
  if (offset < 0 || offset >= self.launch->shared_bytes)
    abort_thread(fmt::format("mapa of shared offset {}: outside the CTA's {} bytes of shared memory", offset,
                             self.launch->shared_bytes));
  if (rank >= self.cluster->ctas.size())
    abort_thread(fmt::format("mapa to cluster rank {}: the cluster has {} CTAs", rank, self.cluster->ctas.size()));
  return self.cluster->ctas[rank]->shared + offset;
}

}  // namespace

void add_memory_symbols(codegen::HostSymbols& out) {
  out.emplace_back(codegen::kHostSharedBase, reinterpret_cast<void*>(shared_base));
  out.emplace_back(codegen::kHostCheckGlobal, reinterpret_cast<void*>(check_global));
  out.emplace_back(codegen::kHostCheckShared, reinterpret_cast<void*>(check_shared));
  out.emplace_back(codegen::kHostCheckClusterShared, reinterpret_cast<void*>(check_cluster_shared));
  for (const char* mapa : {"llvm.nvvm.mapa.shared.cluster", "llvm.nvvm.mapa"})  // shared / generic addresses
    out.emplace_back(codegen::host_intrinsic_name(mapa), reinterpret_cast<void*>(map_to_rank));
}

}  // namespace tilejit::emu
