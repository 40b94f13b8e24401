// The persistent kernel cache: compiled kernels by key, in memory and on disk.
//
// On disk it is a content-addressed directory (one file per key, written to a temporary
// file and renamed into place, so readers never see a half-written entry and concurrent
// writers of one key both leave a valid file). Every file carries a magic number, the
// format version, its length and a checksum of its contents; an entry that fails any check
// is removed with a warning and reported as a miss, never served. A directory that cannot
// be created or written degrades to an in-memory cache with a warning.
//
// Environment: TILEJIT_CACHE_DIR (default: $XDG_CACHE_HOME/tilejit, else ~/.cache/tilejit),
// TILEJIT_CACHE_DISABLE=1 (no disk, no memory: every lookup misses).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tilejit {

// A cache key: a 128-bit hash of the parts (each length-prefixed, so parts cannot run
// together), as 32 hex digits.
std::string cache_key(std::initializer_list<std::string_view> parts);

struct CacheOptions {
  std::string directory;  // empty: memory only
  bool enabled = true;
};

struct CacheEntryInfo {
  std::string key;
  std::string label;  // what the entry holds, for people: "gemm sm_90a cubin"
  int64_t bytes = 0;
  int64_t modified_unix = 0;
};

struct CacheStats {
  int64_t entries = 0;
  int64_t bytes = 0;
  int64_t hits = 0;    // lookups served from disk, over the directory's lifetime
  int64_t misses = 0;  // lookups that found nothing valid, over the directory's lifetime
};

class KernelCache {
 public:
  explicit KernelCache(CacheOptions options);
  // The process-wide cache configured from the environment.
  static KernelCache& global();
  static CacheOptions options_from_environment();

  // The value stored under `key`: from memory, else from disk (then kept in memory).
  std::optional<std::shared_ptr<const std::string>> get(const std::string& key);
  void put(const std::string& key, std::string_view label, std::string value);

  bool enabled() const;
  bool on_disk() const;                 // false when memory only (no directory, or it failed)
  const std::string& directory() const;
  std::vector<CacheEntryInfo> list() const;
  CacheStats stats() const;
  void clear();                         // memory and disk

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace tilejit
