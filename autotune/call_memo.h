// An op's memory of the tuned config each call ran, under plain values, so that a warm call
// pays one lookup and no strings. It is bounded: a workload whose shapes keep changing
// (decoding, where the key length grows by one each step) starts over when the bound is
// reached, rather than growing for as long as the process runs.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <utility>

namespace tilejit::autotune {

template <typename Key, typename Value>
class CallMemo {
 public:
  explicit CallMemo(size_t capacity = 4096) : capacity_(capacity) {}

  // The value remembered for `key`, else `decide()`'s, remembered. `decide` runs without the
  // lock held (it may tune), so two threads may both decide a new key; the first one's stays.
  template <typename Decide>
  Value get(const Key& key, Decide&& decide) {
    {
      std::lock_guard lock(mutex_);
      if (auto it = values_.find(key); it != values_.end()) return it->second;
    }
    Value value = decide();
    std::lock_guard lock(mutex_);
    if (values_.size() >= capacity_ && !values_.contains(key)) values_.clear();
    return values_.emplace(key, std::move(value)).first->second;
  }

  size_t size() const {
    std::lock_guard lock(mutex_);
    return values_.size();
  }

 private:
  const size_t capacity_;
  mutable std::mutex mutex_;
  std::map<Key, Value> values_;
};

}  // namespace tilejit::autotune
