// Cache packs: a whole kernel cache (compiled kernels, tuning results, anything stored in it)
// as ONE file with a manifest, made on one machine and loaded read-only by another, layered
// under its local cache (KernelCache::attach_pack, TILEJIT_PREBUILT).
//
// What a pack promises:
//   - Opening checks the structure at once: magic number, format version, exact length (so a
//     truncated copy is refused), and the index with its checksum (so the key -> entry map
//     cannot be damaged unnoticed). A foreign, truncated or damaged file is refused with an
//     error naming the file and what is wrong.
//   - A pack made for another architecture or another tilejit / LLVM version is refused with
//     a message naming both sides (its kernels could never be used here: every cache key names
//     the target and the versions).
//   - Every entry carries a checksum of its key, label and bytes, checked each time it is read:
//     a damaged entry is refused with a warning and compiled again, never served. Opening
//     reads the index but no entry, and a lookup is a binary search of the index, so a pack of
//     thousands of kernels opens about as fast as one of a few; `verify()` reads them all.
//   - Packs are opened read-only and never written; a pack is written to a temporary file and
//     renamed into place, so a reader never sees half of one.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/file_io.h"

namespace tilejit {

class KernelCache;
struct CacheEntryInfo;

// The most bytes one value may hold, in a cache directory or a pack. No kernel image or tuning
// result comes near it: a larger length is damage, refused before any memory is taken for it.
constexpr uint64_t kMostValueBytes = uint64_t{1} << 30;

// Who made a pack, and for what.
struct PackManifest {
  std::string arch;             // the code generation target its kernels are for, e.g. "sm_90a"
  std::string device;           // the device it was made on, e.g. "NVIDIA H100 80GB HBM3"
  std::string tilejit_version;
  std::string llvm_version;
  std::string cuda_toolkit;     // the CUDA headers tilejit was built with, e.g. "13.0"
  std::string cuda_driver;      // the driver of the machine that made it, e.g. "13.0", or "none"
  int64_t created_unix = 0;

  // A manifest for kernels made for `arch` on the device called `device`, with this build's
  // versions and this machine's driver.
  static PackManifest current(const std::string& arch, const std::string& device);
};

// What a pack must be for to be used here.
struct PackRequirements {
  std::string arch;
  std::string tilejit_version;
  std::string llvm_version;

  // For kernels built for `arch` by this build of tilejit.
  static PackRequirements for_arch(const std::string& arch);
  // For this machine: the arch of its first GPU, else the emulator's.
  static PackRequirements for_this_machine();
};

struct PackEntryInfo {
  std::string key;
  std::string label;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  std::string checksum;
};

struct PackedValue {
  std::string label;
  std::string value;
};

class CachePack {
 public:
  // Opens `path` and checks its structure and that it suits `requirements`; throws
  // tilejit::Error naming the file and the problem.
  static std::shared_ptr<const CachePack> open(const std::string& path, const PackRequirements& requirements);
  // Opens `path` and checks its structure only (for inspection and verification).
  static std::shared_ptr<const CachePack> open_unchecked(const std::string& path);

  const std::string& path() const { return path_; }
  const PackManifest& manifest() const { return manifest_; }
  uint64_t entry_count() const { return entry_count_; }
  // Every entry's description, in key order.
  std::vector<PackEntryInfo> entries() const;
  uint64_t file_bytes() const { return file_bytes_; }

  // Why this pack cannot be used under `requirements`; empty when it can.
  std::string mismatch(const PackRequirements& requirements) const;
  // The entry stored under `key`, its checksum checked; nullopt when the pack has no such
  // entry, or (with a warning) when the entry is damaged.
  std::optional<PackedValue> find(const std::string& key) const;
  // Reads every entry and checks its checksum; one line per damaged entry (empty: intact).
  std::vector<std::string> verify() const;

 private:
  CachePack(std::string path, file_io::UniqueFd fd);
  void check_index(uint64_t entry_area_end);
  // The index's description of entry `i` (in key order); the index was checked when opened.
  PackEntryInfo entry(uint64_t i) const;
  std::string_view entry_key(uint64_t i) const;
  std::optional<PackedValue> read_entry(const PackEntryInfo& entry, std::string& problem) const;

  std::string path_;
  file_io::UniqueFd fd_;
  uint64_t file_bytes_ = 0;
  PackManifest manifest_;
  std::string index_;            // the index as stored: manifest, entry count, record positions, records
  uint64_t entry_count_ = 0;
  uint64_t positions_start_ = 0;  // where the record positions begin in index_
};

// Writes every valid entry of `cache` (its own entries: not those of packs layered under it)
// that `keep` keeps (all, when unset) into a pack at `path`, replacing the file atomically.
// Returns the number of entries written.
int64_t write_cache_pack(const KernelCache& cache, const PackManifest& manifest, const std::string& path,
                         const std::function<bool(const CacheEntryInfo&)>& keep = nullptr);

struct PackImport {
  int64_t added = 0;
  int64_t already_present = 0;
};
// Copies the pack's entries into `cache`'s directory, keeping entries the cache already holds.
// Every entry is checked first: a damaged pack imports nothing (tilejit::Error naming the
// entries). A cache with no directory, or an entry that cannot be written, is an error.
PackImport import_cache_pack(const CachePack& pack, KernelCache& cache);

}  // namespace tilejit
