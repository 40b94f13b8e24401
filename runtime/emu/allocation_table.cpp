#include "runtime/emu/allocation_table.h"

#include <algorithm>

namespace tilejit::emu {

AllocationSnapshot::AllocationSnapshot(std::vector<Allocation> sorted) : sorted_(std::move(sorted)) {
  reach_.reserve(sorted_.size());
  for (const Allocation& a : sorted_) reach_.push_back(std::max(reach_.empty() ? 0 : reach_.back(), a.begin + a.bytes));
}

const Allocation* AllocationSnapshot::find(uintptr_t address, size_t bytes) const {
  auto first_after = std::upper_bound(sorted_.begin(), sorted_.end(), address,
                                      [](uintptr_t a, const Allocation& x) { return a < x.begin; });
  // Back from the last allocation to start at or before `address`, until none further back
  // reaches the range's end (at once, unless allocations overlap).
  for (auto i = static_cast<size_t>(first_after - sorted_.begin()); i-- > 0 && reach_[i] >= address + bytes;)
    if (address + bytes <= sorted_[i].begin + sorted_[i].bytes) return &sorted_[i];
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
  // Back from the last allocation to start at or before `address` (allocations may overlap).
  for (auto it = std::make_reverse_iterator(allocations_.upper_bound(address)); it != allocations_.rend(); ++it)
    if (address + bytes <= it->first + it->second) return true;
  return false;
}

AllocationSnapshot AllocationTable::snapshot() const {
  std::lock_guard lock(mutex_);
  std::vector<Allocation> sorted;
  sorted.reserve(allocations_.size());
  for (auto& [begin, bytes] : allocations_) sorted.push_back({begin, bytes});
  return AllocationSnapshot(std::move(sorted));
}

}  // namespace tilejit::emu
