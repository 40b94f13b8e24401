// The kernel cache: a memory layer over a content-addressed directory.
//
// Layout of the directory:
//   <dir>/<first two characters of the key>/<key>.tjk   one entry per key
//   <dir>/<shard>/<key>.tjk.tmp.<pid>.<random>           an entry being written
//   <dir>/stats                                           "<hits> <misses>\n", updated under flock(2)
//   <dir>/update.lock                                     held under flock(2) by update()
//
// An entry file is a 40-byte header, the label, then the payload. Integers are little-endian:
//   offset  0: magic "TJKCACHE"        offset 16: payload length (u64)
//   offset  8: format version (u32)    offset 24: checksum (XXH3-128 of key, label and payload)
//   offset 12: label length (u32)
// Every header byte is checked on read (magic, version, the lengths against the file size,
// the checksum against the contents), so any truncation or flipped byte is caught. The key is in
// the checksum, so an entry copied or renamed to another key's file is refused, not served.
#include "runtime/kernel_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <unordered_map>

#include "dsl/error.h"
#include "dsl/log.h"
#include "runtime/file_io.h"

namespace tilejit {
namespace {

namespace fs = std::filesystem;
using file_io::append_le;
using file_io::errno_text;
using file_io::read_exact;
using file_io::read_le;
using file_io::temp_path_for;
using file_io::UniqueFd;
using file_io::write_all;

constexpr std::string_view kMagic = "TJKCACHE";
constexpr uint32_t kFormatVersion = 2;  // 2: the key joined the checksum
constexpr size_t kHeaderSize = 40;
constexpr std::string_view kEntrySuffix = ".tjk";
constexpr size_t kMaxKeyLength = 128;

// --- hashing and encoding --------------------------------------------------------------------

// XXH3-128 over the parts, each preceded by its length, so ("ab", "c") and ("a", "bc") differ.
XXH128_hash_t hash_parts(std::initializer_list<std::string_view> parts) {
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(), &XXH3_freeState);
  TJ_CHECK(state && XXH3_128bits_reset(state.get()) == XXH_OK);
  for (std::string_view part : parts) {
    std::string length;
    append_le(length, part.size(), 8);
    XXH3_128bits_update(state.get(), length.data(), length.size());
    XXH3_128bits_update(state.get(), part.data(), part.size());
  }
  return XXH3_128bits_digest(state.get());
}

std::string encode_hash(XXH128_hash_t hash) {
  std::string out;
  append_le(out, hash.low64, 8);
  append_le(out, hash.high64, 8);
  return out;
}

std::string checksum(std::string_view key, std::string_view label, std::string_view payload) {
  return encode_hash(hash_parts({key, label, payload}));
}

std::string encode_header(std::string_view key, std::string_view label, std::string_view payload) {
  std::string header(kMagic);
  append_le(header, kFormatVersion, 4);
  append_le(header, label.size(), 4);
  append_le(header, payload.size(), 8);
  header += checksum(key, label, payload);
  return header;
}

void check_key(const std::string& key) {
  if (!is_valid_cache_key(key)) fail("kernel cache key '{}' must be 2 to {} lowercase letters or digits", key, kMaxKeyLength);
}

int64_t now_unix() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// --- entry files -------------------------------------------------------------------------------

struct StoredEntry {
  std::string label;
  std::string value;
};

struct EntryHeader {
  uint32_t label_length = 0;
  uint64_t payload_length = 0;
  std::string checksum;
};

// Parses and checks the header of a file of `file_size` bytes; on failure says why in `problem`.
std::optional<EntryHeader> read_header(int fd, int64_t file_size, std::string& problem) {
  char raw[kHeaderSize];
  if (file_size < int64_t(kHeaderSize) || !read_exact(fd, raw, kHeaderSize)) {
    problem = fmt::format("{} bytes, shorter than the {}-byte header", file_size, kHeaderSize);
    return std::nullopt;
  }
  if (std::string_view(raw, kMagic.size()) != kMagic) {
    problem = "wrong magic number";
    return std::nullopt;
  }
  if (uint32_t version = read_le(raw + 8, 4); version != kFormatVersion) {
    problem = fmt::format("format version {}, expected {}", version, kFormatVersion);
    return std::nullopt;
  }
  EntryHeader header{uint32_t(read_le(raw + 12, 4)), read_le(raw + 16, 8), std::string(raw + 24, 16)};
  // Compared without adding the lengths, which a corrupt header could make overflow.
  uint64_t after_header = uint64_t(file_size) - kHeaderSize;
  if (header.label_length > after_header || header.payload_length != after_header - header.label_length) {
    problem = fmt::format("{} bytes, the header says {} + {} + {}", file_size, kHeaderSize, header.label_length,
                          header.payload_length);
    return std::nullopt;
  }
  if (header.payload_length > kMostValueBytes || header.label_length > kMostValueBytes) {
    problem = fmt::format("its header says it holds {} + {} bytes, more than an entry may ({})", header.label_length,
                          header.payload_length, kMostValueBytes);
    return std::nullopt;
  }
  return header;
}

std::optional<StoredEntry> read_entry(int fd, std::string_view key, std::string& problem) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    problem = errno_text();
    return std::nullopt;
  }
  if (!S_ISREG(st.st_mode)) {
    problem = "not a regular file";
    return std::nullopt;
  }
  auto header = read_header(fd, st.st_size, problem);
  if (!header) return std::nullopt;
  StoredEntry entry{std::string(header->label_length, '\0'), std::string(header->payload_length, '\0')};
  if (!read_exact(fd, entry.label.data(), entry.label.size()) || !read_exact(fd, entry.value.data(), entry.value.size())) {
    problem = "shorter than its header says";
    return std::nullopt;
  }
  if (checksum(key, entry.label, entry.value) != header->checksum) {
    problem = "checksum mismatch";
    return std::nullopt;
  }
  return entry;
}

// Removes a corrupt entry, unless another process has meanwhile renamed a fresh entry over
// it (then `path` no longer names the file that `fd` has open).
void remove_if_same_file(const fs::path& path, int fd) {
  struct stat opened {}, current {};
  if (::fstat(fd, &opened) != 0 || ::stat(path.c_str(), &current) != 0) return;
  if (opened.st_dev == current.st_dev && opened.st_ino == current.st_ino) ::unlink(path.c_str());
}

// --- the stats file ----------------------------------------------------------------------------

// Hit and miss counts shared by every process using one directory: a read-modify-write of a
// small text file under an exclusive flock(2). Stats are informational, so a failure to
// update them is logged at debug level only.
class StatsFile {
 public:
  explicit StatsFile(fs::path path) : path_(std::move(path)) {}

  void add(int64_t hits, int64_t misses) const {
    update([&](CacheStats& s) {
      s.hits += hits;
      s.misses += misses;
    });
  }
  void reset() const {
    update([](CacheStats& s) { s = {}; });
  }
  CacheStats read() const {
    UniqueFd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd || ::flock(fd.get(), LOCK_SH) != 0) return {};
    return parse(fd.get());
  }

 private:
  template <typename Change>
  void update(Change change) const {
    UniqueFd fd(::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666));
    if (!fd || ::flock(fd.get(), LOCK_EX) != 0) {
      log::debug("kernel cache: cannot update {}: {}", path_.string(), errno_text());
      return;
    }
    CacheStats stats = parse(fd.get());
    change(stats);
    std::string text = fmt::format("{} {}\n", stats.hits, stats.misses);
    if (::lseek(fd.get(), 0, SEEK_SET) != 0 || ::ftruncate(fd.get(), 0) != 0 || !write_all(fd.get(), text))
      log::debug("kernel cache: cannot write {}: {}", path_.string(), errno_text());
  }

  // Counts from the file; zero for an empty or unreadable file.
  static CacheStats parse(int fd) {
    char text[64];
    ssize_t n = ::pread(fd, text, sizeof text, 0);
    CacheStats stats;
    if (n <= 0) return stats;
    const char* end = text + n;
    auto hits = std::from_chars(text, end, stats.hits);
    if (hits.ec != std::errc() || hits.ptr == end || *hits.ptr != ' ') return {};
    if (std::from_chars(hits.ptr + 1, end, stats.misses).ec != std::errc()) return {};
    return stats;
  }

  fs::path path_;
};

// --- the directory -----------------------------------------------------------------------------

// The on-disk half of the cache. Only exists for a directory that could be created and
// written to.
class DiskStore {
 public:
  static std::optional<DiskStore> open(const fs::path& root) {
    std::error_code ec;
    fs::create_directories(root, ec);
    if (ec) {
      log::warn("kernel cache: cannot create {}: {}; caching in memory only", root.string(), ec.message());
      return std::nullopt;
    }
    if (!is_writable(root)) {
      log::warn("kernel cache: cannot write to {}: {}; caching in memory only", root.string(), errno_text());
      return std::nullopt;
    }
    return DiskStore(root);
  }

  std::optional<StoredEntry> read(const std::string& key) const {
    fs::path path = entry_path(key);
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));  // a FIFO must not block
    if (!fd) {
      if (errno != ENOENT) log::warn("kernel cache: cannot open {}: {}", path.string(), errno_text());
      return std::nullopt;
    }
    std::string problem;
    auto entry = read_entry(fd.get(), key, problem);
    if (!entry) {
      log::warn("kernel cache: removing corrupt entry {}: {}", path.string(), problem);
      remove_if_same_file(path, fd.get());
    }
    return entry;
  }

  // Writes a temporary file next to the entry and renames it into place, so readers see the
  // old entry or the new one, never a part of one. False, after a warning, when the entry
  // could not be written (the value stays in memory for this process).
  //
  // A plain entry is not synced: after a crash it may be empty or partial on disk, and then its
  // checksum fails and it is compiled again, which is cheaper than syncing every write. A
  // `durable` one (update()'s, which hold tuning results) is synced before and after the
  // rename, so a crash leaves the old value or the new one.
  bool write(const std::string& key, std::string_view label, std::string_view value, bool durable) const {
    fs::path path = entry_path(key);
    std::error_code ignored;  // a missing shard directory shows up as the open's error
    if (fs::create_directories(path.parent_path(), ignored) && durable) file_io::sync_directory(root_);
    fs::path temp = temp_path_for(path);
    UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
    if (!fd) {
      log::warn("kernel cache: cannot create {}: {}", temp.string(), errno_text());
      return false;
    }
    bool written = write_all(fd.get(), encode_header(key, label, value)) && write_all(fd.get(), label) &&
                   write_all(fd.get(), value) && (!durable || ::fsync(fd.get()) == 0) && fd.close() &&
                   ::rename(temp.c_str(), path.c_str()) == 0;
    if (!written) {
      log::warn("kernel cache: cannot write {}: {}", path.string(), errno_text());
      ::unlink(temp.c_str());
      return false;
    }
    // The entry is in place; only its rename may not survive a crash.
    if (durable && !file_io::sync_directory(path.parent_path()))
      log::warn("kernel cache: wrote {}, but its directory could not be synced: {}", path.string(), errno_text());
    return true;
  }

  void record_lookup(bool hit) const { stats_file_.add(hit ? 1 : 0, hit ? 0 : 1); }

  // Holds the directory's update lock (flock(2), released when the descriptor closes). When
  // the lock file cannot be used, updates are atomic within this process only: a warning.
  UniqueFd lock_for_update() const {
    fs::path path = root_ / "update.lock";
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666));
    if (!fd || ::flock(fd.get(), LOCK_EX) != 0) {
      log::warn("kernel cache: cannot lock {}: {}; updates are not coordinated with other processes", path.string(),
                errno_text());
      return UniqueFd(-1);
    }
    return fd;
  }

  std::vector<CacheEntryInfo> list() const {
    std::vector<CacheEntryInfo> out;
    for_each_file([&](const fs::path& path) {
      if (auto info = read_info(path)) out.push_back(std::move(*info));
    });
    std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.key < b.key; });
    return out;
  }

  CacheStats stats() const {
    CacheStats stats = stats_file_.read();
    for_each_file([&](const fs::path& path) {
      struct stat st {};
      if (!key_of(path).empty() && ::stat(path.c_str(), &st) == 0) {
        ++stats.entries;
        stats.bytes += st.st_size;
      }
    });
    return stats;
  }

  // Removes entries and temporary files (also those a crashed writer left) and the counts.
  // Only files named as entries are touched: the directory may be one a user shares with
  // other files.
  void clear() const {
    for_each_file([](const fs::path& path) {
      if (is_entry_named(path) || is_entry_being_written(path)) ::unlink(path.c_str());
    });
    stats_file_.reset();
  }

 private:
  explicit DiskStore(fs::path root) : root_(std::move(root)), stats_file_(root_ / "stats") {}

  // Proven by creating (and removing) a file: permission bits alone miss read-only mounts,
  // ACLs and root's exemption.
  static bool is_writable(const fs::path& root) {
    fs::path probe = temp_path_for(root / "probe");
    UniqueFd fd(::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
    if (!fd) return false;
    ::unlink(probe.c_str());
    return true;
  }

  fs::path entry_path(const std::string& key) const {
    return root_ / key.substr(0, 2) / (key + std::string(kEntrySuffix));
  }

  // Named "<key>.tjk", in whichever shard.
  static bool is_entry_named(const fs::path& path) {
    std::string name = path.filename().string();
    return name.ends_with(kEntrySuffix) && is_valid_cache_key(name.substr(0, name.size() - kEntrySuffix.size()));
  }

  // The key an entry file is named for; empty for anything else: temporary files, and an entry
  // in another key's shard, which lookups never read.
  static std::string key_of(const fs::path& path) {
    if (!is_entry_named(path)) return {};
    std::string name = path.filename().string();
    std::string key = name.substr(0, name.size() - kEntrySuffix.size());
    return path.parent_path().filename().string() == key.substr(0, 2) ? key : std::string();
  }

  // A temporary file of write(): "<key>.tjk.tmp.<pid>.<random>".
  static bool is_entry_being_written(const fs::path& path) {
    std::string name = path.filename().string();
    size_t suffix = name.find(std::string(kEntrySuffix) + ".tmp.");
    return suffix != std::string::npos && is_valid_cache_key(name.substr(0, suffix));
  }

  // Calls `visit` for every regular file in the shard directories (named as a key's first two
  // characters); symbolic links are not followed. Non-throwing: other processes may add and
  // remove files while this runs.
  template <typename Visit>
  void for_each_file(Visit visit) const {
    std::error_code outer, inner, ignored;
    for (fs::directory_iterator shard(root_, outer), end; !outer && shard != end; shard.increment(outer)) {
      std::string name = shard->path().filename().string();
      if (name.size() != 2 || !is_valid_cache_key(name) || shard->is_symlink(ignored) ||
          !shard->is_directory(ignored))
        continue;
      for (fs::directory_iterator file(shard->path(), inner); !inner && file != end; file.increment(inner))
        if (!file->is_symlink(ignored) && file->is_regular_file(ignored)) visit(file->path());
    }
  }

  // The header of an entry file, if it looks valid (the payload is not checked).
  static std::optional<CacheEntryInfo> read_info(const fs::path& path) {
    std::string key = key_of(path);
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));  // a FIFO must not block
    struct stat st {};
    if (key.empty() || !fd || ::fstat(fd.get(), &st) != 0) return std::nullopt;
    std::string problem;
    auto header = read_header(fd.get(), st.st_size, problem);
    if (!header) return std::nullopt;
    std::string label(header->label_length, '\0');
    if (!read_exact(fd.get(), label.data(), label.size())) return std::nullopt;
    return CacheEntryInfo{std::move(key), std::move(label), st.st_size, st.st_mtim.tv_sec};
  }

  fs::path root_;
  StatsFile stats_file_;
};

struct MemoryEntry {
  std::string label;
  std::shared_ptr<const std::string> value;
  int64_t modified_unix = 0;
};

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

}  // namespace

std::string cache_key(std::initializer_list<std::string_view> parts) {
  XXH128_hash_t hash = hash_parts(parts);
  return fmt::format("{:016x}{:016x}", hash.high64, hash.low64);
}

// Keys name files, so they are restricted to characters that are safe in a file name.
bool is_valid_cache_key(std::string_view key) {
  return key.size() >= 2 && key.size() <= kMaxKeyLength &&
         std::all_of(key.begin(), key.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z'); });
}

// Lookups are counted in the directory's stats file when there is one. Memory-only, the
// memory layer is the whole cache, so its lookups are counted instead, for this process.
struct KernelCache::Impl {
  CacheOptions options;
  std::optional<DiskStore> disk;
  mutable std::mutex mutex;
  std::unordered_map<std::string, MemoryEntry> memory;  // guarded by mutex
  std::vector<std::shared_ptr<const CachePack>> packs;  // guarded by mutex
  std::mutex update_mutex;  // serializes update() within the process
  std::atomic<int64_t> memory_hits = 0, memory_misses = 0, prebuilt_hits = 0;

  explicit Impl(CacheOptions opts) : options(std::move(opts)) {
    // Absolute, so a later chdir of the program moves neither its entries nor its lock.
    std::error_code ignored;
    if (!options.directory.empty()) options.directory = fs::absolute(options.directory, ignored).string();
    if (options.enabled && !options.directory.empty()) disk = DiskStore::open(options.directory);
  }

  std::shared_ptr<const std::string> find_in_memory(const std::string& key) const {
    std::lock_guard lock(mutex);
    auto it = memory.find(key);
    return it == memory.end() ? nullptr : it->second.value;
  }

  // The first attached pack's entry under `key` (packs are searched in the order attached).
  std::optional<StoredEntry> find_in_packs(const std::string& key) const {
    std::vector<std::shared_ptr<const CachePack>> layers;
    {
      std::lock_guard lock(mutex);
      layers = packs;
    }
    for (const auto& pack : layers)
      if (auto found = pack->find(key)) return StoredEntry{std::move(found->label), std::move(found->value)};
    return std::nullopt;
  }

  // Keeps a value read from disk; a value put meanwhile by another thread is newer and stays.
  std::shared_ptr<const std::string> remember(const std::string& key, StoredEntry entry) {
    auto value = std::make_shared<const std::string>(std::move(entry.value));
    std::lock_guard lock(mutex);
    return memory.try_emplace(key, MemoryEntry{std::move(entry.label), value, now_unix()}).first->second.value;
  }

  std::vector<CacheEntryInfo> list_memory() const {
    std::lock_guard lock(mutex);
    std::vector<CacheEntryInfo> out;
    for (auto& [key, entry] : memory)
      out.push_back({key, entry.label, static_cast<int64_t>(entry.value->size()), entry.modified_unix});
    std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.key < b.key; });
    return out;
  }
};

KernelCache::KernelCache(CacheOptions options) : impl_(std::make_shared<Impl>(std::move(options))) {}

KernelCache& KernelCache::global() {
  static KernelCache cache = [] {
    KernelCache environment_cache(options_from_environment());
    environment_cache.attach_packs_or_warn(prebuilt_from_environment());
    return environment_cache;
  }();
  return cache;
}

CacheOptions KernelCache::options_from_environment() {
  CacheOptions options;
  // Any value but "0" disables, so "true" and "yes" do what they say.
  std::string disable = environment("TILEJIT_CACHE_DISABLE");
  options.enabled = disable.empty() || disable == "0";
  std::string xdg = environment("XDG_CACHE_HOME"), home = environment("HOME");
  if (std::string dir = environment("TILEJIT_CACHE_DIR"); !dir.empty())
    options.directory = dir;
  else if (xdg.starts_with('/'))  // the XDG spec says to ignore a relative path
    options.directory = xdg + "/tilejit";
  else if (!home.empty())
    options.directory = home + "/.cache/tilejit";
  return options;
}

std::vector<std::string> KernelCache::prebuilt_from_environment() {
  std::string list = environment("TILEJIT_PREBUILT");
  std::vector<std::string> paths;
  for (size_t start = 0; start <= list.size();) {
    size_t end = std::min(list.find(':', start), list.size());
    if (end > start) paths.push_back(list.substr(start, end - start));
    start = end + 1;
  }
  return paths;
}

std::optional<std::shared_ptr<const std::string>> KernelCache::get(const std::string& key) {
  check_key(key);
  if (!enabled()) return std::nullopt;
  if (auto in_memory = impl_->find_in_memory(key)) {
    if (!impl_->disk) ++impl_->memory_hits;
    return in_memory;
  }
  std::optional<StoredEntry> stored;
  if (impl_->disk) stored = impl_->disk->read(key);
  if (!stored && (stored = impl_->find_in_packs(key))) ++impl_->prebuilt_hits;
  if (impl_->disk) impl_->disk->record_lookup(stored.has_value());
  else ++(stored ? impl_->memory_hits : impl_->memory_misses);
  if (!stored) return std::nullopt;
  return impl_->remember(key, std::move(*stored));
}

bool KernelCache::update(const std::string& key, std::string_view label, const Change& change) {
  check_key(key);
  if (!enabled()) return false;
  std::lock_guard update_lock(impl_->update_mutex);
  UniqueFd directory_lock = impl_->disk ? impl_->disk->lock_for_update() : UniqueFd(-1);
  std::optional<StoredEntry> current;
  if (impl_->disk) {
    current = impl_->disk->read(key);
  } else if (auto in_memory = impl_->find_in_memory(key)) {
    current = StoredEntry{std::string(label), *in_memory};
  }
  if (!current) current = impl_->find_in_packs(key);
  std::optional<std::string> next = change(current ? std::optional<std::string_view>(current->value) : std::nullopt);
  if (next) return store(key, label, std::move(*next), true);
  if (current) {  // what this process remembers becomes what is stored
    std::lock_guard lock(impl_->mutex);
    impl_->memory[key] = MemoryEntry{std::move(current->label),
                                     std::make_shared<const std::string>(std::move(current->value)), now_unix()};
  }
  return false;
}

void KernelCache::attach_pack(std::shared_ptr<const CachePack> pack) {
  TJ_CHECK(pack);
  std::lock_guard lock(impl_->mutex);
  impl_->packs.push_back(std::move(pack));
}

void KernelCache::attach_pack(const std::string& path) {
  attach_pack(CachePack::open(path, PackRequirements::for_this_machine()));
}

void KernelCache::attach_packs_or_warn(const std::vector<std::string>& paths) {
  if (!enabled() || paths.empty()) return;
  PackRequirements requirements;
  try {
    requirements = PackRequirements::for_this_machine();
  } catch (const Error& e) {
    log::warn("kernel cache: no pack attached: this machine's architecture is unknown ({})", e.what());
    return;
  }
  for (const std::string& path : paths) {
    try {
      attach_pack(CachePack::open(path, requirements));
    } catch (const Error& e) {
      log::warn("{}", e.what());
    }
  }
}

std::vector<std::shared_ptr<const CachePack>> KernelCache::packs() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->packs;
}

void KernelCache::for_each_entry(const std::function<void(const CacheEntryInfo&, const std::string&)>& visit) const {
  if (impl_->disk) {
    for (const CacheEntryInfo& info : impl_->disk->list())
      if (auto entry = impl_->disk->read(info.key)) visit(info, entry->value);
    return;
  }
  for (const CacheEntryInfo& info : impl_->list_memory())
    if (auto value = impl_->find_in_memory(info.key)) visit(info, *value);
}

bool KernelCache::put(const std::string& key, std::string_view label, std::string value) {
  return store(key, label, std::move(value), false);
}

bool KernelCache::store(const std::string& key, std::string_view label, std::string value, bool durable) {
  check_key(key);
  if (value.size() > kMostValueBytes)
    fail("kernel cache: a value of {} bytes for {} is more than an entry may hold ({})", value.size(), key,
         kMostValueBytes);
  if (!enabled()) return false;
  auto shared = std::make_shared<const std::string>(std::move(value));
  bool stored = !impl_->disk || impl_->disk->write(key, label, *shared, durable);
  std::lock_guard lock(impl_->mutex);
  impl_->memory[key] = MemoryEntry{std::string(label), std::move(shared), now_unix()};
  return stored;
}

bool KernelCache::enabled() const { return impl_->options.enabled; }
bool KernelCache::on_disk() const { return impl_->disk.has_value(); }
const std::string& KernelCache::directory() const { return impl_->options.directory; }

// On disk `bytes` is the file's size (what the entry costs); in memory, the value's size.
std::vector<CacheEntryInfo> KernelCache::list() const {
  if (impl_->disk) return impl_->disk->list();
  return impl_->list_memory();
}

CacheStats KernelCache::stats() const {
  if (impl_->disk) {
    CacheStats stats = impl_->disk->stats();
    stats.prebuilt_hits = impl_->prebuilt_hits;
    return stats;
  }
  CacheStats stats;
  for (auto& entry : impl_->list_memory()) {
    ++stats.entries;
    stats.bytes += entry.bytes;
  }
  stats.hits = impl_->memory_hits;
  stats.misses = impl_->memory_misses;
  stats.prebuilt_hits = impl_->prebuilt_hits;
  return stats;
}

void KernelCache::clear() {
  if (impl_->disk) impl_->disk->clear();
  std::lock_guard lock(impl_->mutex);
  impl_->memory.clear();
  impl_->memory_hits = 0;
  impl_->memory_misses = 0;
  impl_->prebuilt_hits = 0;
}

}  // namespace tilejit
