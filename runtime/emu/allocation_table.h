// Internal to the emulator: the device allocations global memory accesses are checked
// against. The device keeps the table; each launch works from an immutable snapshot.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace tilejit::emu {

struct Allocation {
  uintptr_t begin = 0;
  size_t bytes = 0;
};

// Allocations may overlap: imports of views of one host buffer (a framework's q, k and v of
// one packed tensor) are ranges of their own.
class AllocationSnapshot {
 public:
  AllocationSnapshot() = default;
  explicit AllocationSnapshot(std::vector<Allocation> sorted);
  // The allocation holding [address, address + bytes), or null.
  const Allocation* find(uintptr_t address, size_t bytes) const;
  // The allocation nearest to `address` (for error messages), or null when there is none.
  const Allocation* nearest(uintptr_t address) const;

 private:
  std::vector<Allocation> sorted_;  // by begin
  std::vector<uintptr_t> reach_;    // reach_[i]: the furthest end of sorted_[0..i]
};

class AllocationTable {
 public:
  void add(const void* begin, size_t bytes);
  void remove(const void* begin);
  bool contains(const void* begin) const;
  // Whether one allocation holds all of [begin, begin + bytes).
  bool covers(const void* begin, size_t bytes) const;
  AllocationSnapshot snapshot() const;

 private:
  mutable std::mutex mutex_;
  std::map<uintptr_t, size_t> allocations_;
};

}  // namespace tilejit::emu
