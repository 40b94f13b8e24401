// The persistent kernel cache: compiled kernels by key, in memory and on disk.
//
// On disk it is a content-addressed directory (one file per key, written to a temporary
// file and renamed into place, so readers never see a half-written entry and concurrent
// writers of one key both leave a valid file). Every file carries a magic number, the
// format version, its length and a checksum of its contents; an entry that fails any check
// is removed with a warning and reported as a miss, never served. A directory that cannot
// be created or written degrades to an in-memory cache with a warning.
//
// Cache packs (runtime/cache_pack.h) are layered under the local cache, read-only: a lookup
// goes to memory, then the local directory, then each attached pack in order. Hits from a pack
// are kept in memory only; nothing is ever written into a pack.
//
// Environment: TILEJIT_CACHE_DIR (default: $XDG_CACHE_HOME/tilejit, else ~/.cache/tilejit),
// TILEJIT_CACHE_DISABLE=1 (no disk, no memory, no packs: every lookup misses),
// TILEJIT_PREBUILT=path1:path2 (packs attached to the process-wide cache; one that does not
// suit this machine, whose arch is that of its first GPU, else the emulator's, or that is
// damaged is skipped with a warning saying why).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/cache_pack.h"

namespace tilejit {

// A cache key: a 128-bit hash of the parts (each length-prefixed, so parts cannot run
// together), as 32 hex digits.
std::string cache_key(std::initializer_list<std::string_view> parts);
// Whether `key` can name an entry: 2 to 128 lowercase letters or digits (keys name files).
bool is_valid_cache_key(std::string_view key);

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
  int64_t prebuilt_hits = 0;  // lookups served by attached packs, in this process (counted in hits too)
};

class KernelCache {
 public:
  explicit KernelCache(CacheOptions options);
  // The process-wide cache configured from the environment, TILEJIT_PREBUILT's packs attached.
  static KernelCache& global();
  static CacheOptions options_from_environment();
  // The packs TILEJIT_PREBUILT lists (separated by ':'), in order.
  static std::vector<std::string> prebuilt_from_environment();

  // The value stored under `key`: from memory, else from disk (then kept in memory).
  std::optional<std::shared_ptr<const std::string>> get(const std::string& key);
  // Stores `value` under `key`. False when it is not stored: the cache is disabled, or the
  // directory's entry could not be written (a warning says why; memory keeps the value).
  bool put(const std::string& key, std::string_view label, std::string value);
  // Replaces the value under `key` with `change(current)`, or keeps it when that returns
  // nullopt. `current` is read from the directory (else a pack), not from memory, and no
  // other thread or process using the directory updates the key in between (a lock file
  // under flock(2)), so concurrent updates never lose one another. True when a changed
  // value was stored (as put's result).
  using Change = std::function<std::optional<std::string>(std::optional<std::string_view> current)>;
  bool update(const std::string& key, std::string_view label, const Change& change);

  // Layers `pack` under this cache (read-only; after the packs attached before).
  void attach_pack(std::shared_ptr<const CachePack> pack);
  // Opens the pack at `path` for this machine and attaches it; throws tilejit::Error when it
  // is damaged or made for another arch or version.
  void attach_pack(const std::string& path);
  // Attaches each pack in `paths` that suits this machine; one that does not, or is damaged,
  // is skipped with a warning saying why (an application must still start, compiling what it
  // needs, when its pack is for another GPU).
  void attach_packs_or_warn(const std::vector<std::string>& paths);
  std::vector<std::shared_ptr<const CachePack>> packs() const;

  // Calls `visit` with every valid entry of this cache's own (not the packs'), by key.
  void for_each_entry(const std::function<void(const CacheEntryInfo&, const std::string& value)>& visit) const;

  bool enabled() const;
  bool on_disk() const;                 // false when memory only (no directory, or it failed)
  const std::string& directory() const;
  std::vector<CacheEntryInfo> list() const;
  CacheStats stats() const;
  void clear();                         // memory and disk

 private:
  bool store(const std::string& key, std::string_view label, std::string value, bool durable);

  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace tilejit
