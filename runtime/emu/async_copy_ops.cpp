// Emulation of cp.async (sm_80): cp.async.{ca,cg}.shared.global [dst], [src], cp-size,
// src-size copies cp-size (4, 8 or 16) bytes to shared memory, the first src-size of them
// from global memory and the rest zeros, asynchronously: the copies a thread issued since
// its last cp.async.commit_group form a group, and cp.async.wait_group N returns once at
// most the N most recent groups are pending (wait_all: none, the open group included).
//
// The emulator makes the copies land at the latest moment PTX allows, the wait, and fills
// the destination with poison at the issue, so a kernel that reads a tile before waiting
// for it, or before the barrier that makes other threads' copies visible, reads garbage
// here as it may on the GPU. Both addresses must be aligned to cp-size.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "codegen/host_compiler.h"
#include "runtime/emu/cta.h"
#include "runtime/emu/runtime_symbols.h"

namespace tilejit::emu {
namespace {

constexpr std::byte kInFlightPoison{0xA7};

template <int Bytes>
void copy_async(void* to, const void* from, int32_t source_bytes) {
  auto dst = reinterpret_cast<uintptr_t>(to), src = reinterpret_cast<uintptr_t>(from);
  if (source_bytes < 0 || source_bytes > Bytes)
    abort_thread(fmt::format("cp.async with src-size {}: it must be between 0 and the copy size {}", source_bytes, Bytes));
  if (dst % Bytes || src % Bytes)
    abort_thread(fmt::format("cp.async of {} bytes from {:#x} to shared {:#x}: both must be {}-byte aligned", Bytes,
                             src, dst, Bytes));
  check_shared(to, Bytes, codegen::kAccessWrite);
  if (source_bytes > 0) check_global(from, source_bytes, 0);
  std::memset(to, static_cast<int>(kInFlightPoison), Bytes);
  current().thread->open_copies.push_back(
      {static_cast<std::byte*>(to), static_cast<const std::byte*>(from), Bytes, source_bytes});
}

void land(const std::vector<AsyncCopy>& group) {
  for (const AsyncCopy& c : group) {
    check_shared(c.to, c.bytes, codegen::kAccessWrite);
    std::memcpy(c.to, c.from, static_cast<size_t>(c.source_bytes));
    std::memset(c.to + c.source_bytes, 0, static_cast<size_t>(c.bytes - c.source_bytes));
  }
}

void commit_group() {
  Thread& t = *current().thread;
  t.committed_copies.push_back(std::move(t.open_copies));
  t.open_copies.clear();
}

void wait_group(int32_t pending) {
  Thread& t = *current().thread;
  while (t.committed_copies.size() > static_cast<size_t>(std::max(pending, 0))) {
    land(t.committed_copies.front());
    t.committed_copies.pop_front();
  }
}

void wait_all() {
  commit_group();
  wait_group(0);
}

}  // namespace

void add_async_copy_symbols(codegen::HostSymbols& out) {
  auto add = [&](const char* nvvm, void* fn) { out.emplace_back(codegen::host_intrinsic_name(nvvm), fn); };
  add("llvm.nvvm.cp.async.ca.shared.global.4.s", reinterpret_cast<void*>(copy_async<4>));
  add("llvm.nvvm.cp.async.ca.shared.global.8.s", reinterpret_cast<void*>(copy_async<8>));
  add("llvm.nvvm.cp.async.ca.shared.global.16.s", reinterpret_cast<void*>(copy_async<16>));
  add("llvm.nvvm.cp.async.cg.shared.global.16.s", reinterpret_cast<void*>(copy_async<16>));
  add("llvm.nvvm.cp.async.commit.group", reinterpret_cast<void*>(commit_group));
  add("llvm.nvvm.cp.async.wait.group", reinterpret_cast<void*>(wait_group));
  add("llvm.nvvm.cp.async.wait.all", reinterpret_cast<void*>(wait_all));
}

}  // namespace tilejit::emu
