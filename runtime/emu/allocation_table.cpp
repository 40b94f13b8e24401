#include "runtime/emu/allocation_table.h"

#include <algorithm>

namespace tilejit::emu {

const Allocation* AllocationSnapshot::find(uintptr_t address, size_t bytes) const {
  auto it = std::upper_bound(sorted_.begin(), sorted_.end(), address,
                             [](uintptr_t a, const Allocation& x) { return a < x.begin; });
  if (it == sorted_.begin()) return nullptr;
  --it;
  if (address + bytes <= it->begin + it->bytes) return &*it;
  return nullptr;
}

const Allocation* AllocationSnapshot::nearest(uintptr_t address) const {
  const Allocation* best = nullptr;
  uintptr_t best_distance = UINTPTR_MAX;
  for (const Allocation& a : sorted_) {
    uintptr_t distance = address < a.begin ? a.begin - address : address >= a.begin + a.bytes ? address - (a.begin + a.bytes) + 1 : 0;
    if (distance < best_distance) best = &a, best_distance = distance;
  }
  return best;
}

void AllocationTable::add(const void* begin, size_t bytes) {
  std::lock_guard lock(mutex_);
  allocations_[reinterpret_cast<uintptr_t>(begin)] = bytes;
}

void AllocationTable::remove(const void* begin) {
  std::lock_guard lock(mutex_);
  allocations_.erase(reinterpret_cast<uintptr_t>(begin));
}

bool AllocationTable::contains(const void* begin) const {
  std::lock_guard lock(mutex_);
  return allocations_.count(reinterpret_cast<uintptr_t>(begin)) != 0;
}

bool AllocationTable::covers(const void* begin, size_t bytes) const {
  auto address = reinterpret_cast<uintptr_t>(begin);
  std::lock_guard lock(mutex_);
  auto it = allocations_.upper_bound(address);
  if (it == allocations_.begin()) return false;
  --it;
  return address + bytes <= it->first + it->second;
}

bool AllocationTable::overlaps(const void* begin, size_t bytes) const {
  auto address = reinterpret_cast<uintptr_t>(begin);
  std::lock_guard lock(mutex_);
  // Allocations never overlap one another: the last one to start before the range ends is the
  // one to reach furthest into it.
  auto it = allocations_.lower_bound(address + bytes);
  if (it == allocations_.begin()) return false;
  --it;
  return it->first + it->second > address;
}

AllocationSnapshot AllocationTable::snapshot() const {
  std::lock_guard lock(mutex_);
  std::vector<Allocation> sorted;
  sorted.reserve(allocations_.size());
  for (auto& [begin, bytes] : allocations_) sorted.push_back({begin, bytes});
  return AllocationSnapshot(std::move(sorted));
}

}  // namespace tilejit::emu
