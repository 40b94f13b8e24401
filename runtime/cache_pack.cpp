// The cache pack file format.
//
//   header (72 bytes; integers here and below little-endian)
//     offset  0: magic "TJKPACK\n"            offset 24: index offset (u64)
//     offset  8: format version (u32)         offset 32: index length (u64)
//     offset 12: reserved, zero (u32)         offset 40: index checksum (32 hex digits)
//     offset 16: file length (u64)
//   entry values, back to back
//   index
//     manifest length (u32), manifest (JSON: arch, device, versions, time made)
//     entry count (u64)
//     record positions (u64 each, from the start of the index), one per entry, in key order
//     records: key length (u16), label length (u32), value offset (u64), value length (u64),
//              checksum (32 hex digits), key, label
//
// The index ends the file, so a truncated pack loses its index and its length no longer
// matches the header. The index checksum and the entry checksums are cache_key() hashes
// (XXH3-128 of length-prefixed parts); an entry's covers its key and label too, so no entry
// can be served under another's key. Records in key order make a lookup a binary search of
// the index as read, with nothing decoded or allocated per entry when a pack is opened.
#include "runtime/cache_pack.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cuda.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <exception>
#include <set>

#include "codegen/compiler.h"
#include "dsl/error.h"
#include "dsl/log.h"
#include "runtime/device.h"
#include "runtime/kernel_cache.h"
#include "runtime/version.h"

namespace tilejit {
namespace {

using file_io::UniqueFd;
using nlohmann::json;

constexpr std::string_view kPackMagic = "TJKPACK\n";
constexpr uint32_t kPackFormatVersion = 1;
constexpr size_t kChecksumDigits = 32;
constexpr size_t kPackHeaderSize = 40 + kChecksumDigits;
constexpr size_t kRecordFixedSize = 2 + 4 + 8 + 8 + kChecksumDigits;  // before the key and label

std::string entry_checksum(std::string_view key, std::string_view label, std::string_view value) {
  return cache_key({key, label, value});
}

std::string cuda_version_text(int version) {
  return version > 0 ? fmt::format("{}.{}", version / 1000, version % 1000 / 10) : "none";
}

json manifest_to_json(const PackManifest& m) {
  return {{"arch", m.arch},
          {"device", m.device},
          {"tilejit", m.tilejit_version},
          {"llvm", m.llvm_version},
          {"cuda_toolkit", m.cuda_toolkit},
          {"cuda_driver", m.cuda_driver},
          {"created_unix", m.created_unix}};
}

PackManifest manifest_from_json(const json& j) {
  PackManifest m;
  j.at("arch").get_to(m.arch);
  j.at("device").get_to(m.device);
  j.at("tilejit").get_to(m.tilejit_version);
  j.at("llvm").get_to(m.llvm_version);
  j.at("cuda_toolkit").get_to(m.cuda_toolkit);
  j.at("cuda_driver").get_to(m.cuda_driver);
  j.at("created_unix").get_to(m.created_unix);
  return m;
}

struct PackHeader {
  uint64_t file_length = 0, index_offset = 0, index_length = 0;
  std::string index_checksum;
};

std::string encode_header(const PackHeader& h) {
  std::string out(kPackMagic);
  file_io::append_le(out, kPackFormatVersion, 4);
  file_io::append_le(out, 0, 4);
  file_io::append_le(out, h.file_length, 8);
  file_io::append_le(out, h.index_offset, 8);
  file_io::append_le(out, h.index_length, 8);
  out += h.index_checksum;
  TJ_CHECK(out.size() == kPackHeaderSize);
  return out;
}

// Checks every header field against the file's size; throws naming the problem.
PackHeader read_header(int fd, const std::string& path, uint64_t size) {
  char raw[kPackHeaderSize] = {};
  size_t available = std::min<uint64_t>(size, kPackHeaderSize);
  if (!file_io::read_exact_at(fd, 0, raw, available)) fail("cache pack {}: cannot read: {}", path, file_io::errno_text());
  if (available < kPackMagic.size() || std::string_view(raw, kPackMagic.size()) != kPackMagic)
    fail("{} is not a tilejit cache pack (it does not start with the pack magic number)", path);
  if (size < kPackHeaderSize)
    fail("cache pack {} is truncated: {} bytes, shorter than the {}-byte header", path, size, kPackHeaderSize);
  if (uint32_t version = uint32_t(file_io::read_le(raw + 8, 4)); version != kPackFormatVersion)
    fail("cache pack {} has format version {}; this tilejit reads version {}", path, version, kPackFormatVersion);
  PackHeader h{file_io::read_le(raw + 16, 8), file_io::read_le(raw + 24, 8), file_io::read_le(raw + 32, 8),
               std::string(raw + 40, kChecksumDigits)};
  if (file_io::read_le(raw + 12, 4) != 0) fail("cache pack {} is damaged: a reserved header field is not zero", path);
  if (size < h.file_length)
    fail("cache pack {} is truncated: {} bytes, its header says {}", path, size, h.file_length);
  if (size > h.file_length)
    fail("cache pack {} is damaged: {} bytes, {} more than its header says", path, size, size - h.file_length);
  // Compared without adding, which a damaged header could make overflow.
  if (h.index_offset < kPackHeaderSize || h.index_offset > size || h.index_length != size - h.index_offset)
    fail("cache pack {} is damaged: its header puts the index at {} + {} in a file of {} bytes", path, h.index_offset,
         h.index_length, size);
  return h;
}

// A record as it lies in the index.
struct RecordView {
  std::string_view key, label;
  uint64_t offset = 0, bytes = 0;
  std::string_view checksum;
  PackEntryInfo info() const { return {std::string(key), std::string(label), offset, bytes, std::string(checksum)}; }
};

// The record at `position` of `index`, or nullopt when it does not fit inside the index.
std::optional<RecordView> decode_record(std::string_view index, uint64_t position) {
  if (position > index.size() || index.size() - position < kRecordFixedSize) return std::nullopt;
  const char* r = index.data() + position;
  uint64_t key_length = file_io::read_le(r, 2), label_length = file_io::read_le(r + 2, 4);
  if (index.size() - position - kRecordFixedSize < key_length + label_length) return std::nullopt;
  std::string_view text(r + kRecordFixedSize, key_length + label_length);
  return RecordView{text.substr(0, key_length), text.substr(key_length), file_io::read_le(r + 6, 8),
                    file_io::read_le(r + 14, 8), std::string_view(r + 22, kChecksumDigits)};
}

void encode_record(std::string& out, const PackEntryInfo& e) {
  file_io::append_le(out, e.key.size(), 2);
  file_io::append_le(out, e.label.size(), 4);
  file_io::append_le(out, e.offset, 8);
  file_io::append_le(out, e.bytes, 8);
  out += e.checksum;
  out += e.key;
  out += e.label;
}

std::string encode_index(const PackManifest& manifest, std::vector<PackEntryInfo> entries) {
  std::sort(entries.begin(), entries.end(), [](auto& a, auto& b) { return a.key < b.key; });
  std::string json_text = manifest_to_json(manifest).dump();
  std::string index;
  file_io::append_le(index, json_text.size(), 4);
  index += json_text;
  file_io::append_le(index, entries.size(), 8);
  uint64_t position = index.size() + 8 * entries.size();
  std::string records;
  for (const PackEntryInfo& e : entries) {
    file_io::append_le(index, position + records.size(), 8);
    encode_record(records, e);
  }
  return index + records;
}

}  // namespace

PackManifest PackManifest::current(const std::string& arch, const std::string& device) {
  PackManifest m;
  m.arch = arch;
  m.device = device;
  m.tilejit_version = tilejit::tilejit_version();
  m.llvm_version = codegen::llvm_version();
  m.cuda_toolkit = cuda_version_text(CUDA_VERSION);
  m.cuda_driver = cuda_version_text(cuda_driver_version());
  m.created_unix =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  return m;
}

PackRequirements PackRequirements::for_arch(const std::string& arch) {
  return {arch, tilejit::tilejit_version(), codegen::llvm_version()};
}

PackRequirements PackRequirements::for_this_machine() { return for_arch(Device::best().info().arch); }

CachePack::CachePack(std::string path, UniqueFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}

std::shared_ptr<const CachePack> CachePack::open_unchecked(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));  // a FIFO must not block
  if (!fd) fail("cache pack {}: cannot open: {}", path, file_io::errno_text());
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail("cache pack {}: cannot read: {}", path, file_io::errno_text());
  if (!S_ISREG(st.st_mode)) fail("cache pack {} is not a regular file", path);
  uint64_t size = static_cast<uint64_t>(st.st_size);
  PackHeader header = read_header(fd.get(), path, size);

  std::string index;
  try {
    index.resize(header.index_length);
  } catch (const std::exception&) {  // bad_alloc or length_error: a damaged length in a big (or sparse) file
    fail("cache pack {} is damaged: its index of {} bytes does not fit in memory", path, header.index_length);
  }
  if (!file_io::read_exact_at(fd.get(), header.index_offset, index.data(), index.size()))
    fail("cache pack {}: cannot read its index: {}", path, file_io::errno_text());
  if (cache_key({index}) != header.index_checksum)
    fail("cache pack {} is damaged: the checksum of its index does not match", path);

  auto pack = std::shared_ptr<CachePack>(new CachePack(path, std::move(fd)));
  pack->file_bytes_ = size;
  pack->index_ = std::move(index);
  pack->check_index(header.index_offset);
  return pack;
}

std::shared_ptr<const CachePack> CachePack::open(const std::string& path, const PackRequirements& requirements) {
  auto pack = open_unchecked(path);
  if (std::string why = pack->mismatch(requirements); !why.empty()) fail("{}", why);
  return pack;
}

// Checks every record: inside the index, a valid key, its value inside the entry area, keys in
// strictly increasing order (so lookups can search, and no key appears twice). A pack whose
// index checksum matched fails these only if its writer was broken; still never a crash.
void CachePack::check_index(uint64_t entry_area_end) {
  auto damaged = [&](const std::string& what) { fail("cache pack {} is damaged: {}", path_, what); };
  std::string_view index = index_;
  if (index.size() < 4) damaged("its index is empty");
  uint64_t manifest_length = file_io::read_le(index.data(), 4);
  if (index.size() - 4 < manifest_length || index.size() - 4 - manifest_length < 8) damaged("its manifest is cut short");
  try {
    manifest_ = manifest_from_json(json::parse(index.substr(4, manifest_length)));
  } catch (const json::exception& e) {
    damaged(fmt::format("its manifest is not what this tilejit writes ({})", e.what()));
  }
  positions_start_ = 4 + manifest_length + 8;
  entry_count_ = file_io::read_le(index.data() + positions_start_ - 8, 8);
  if ((index.size() - positions_start_) / 8 < entry_count_) damaged("its index lists more entries than it holds");
  std::string_view previous;
  for (uint64_t i = 0; i < entry_count_; ++i) {
    auto e = decode_record(index, file_io::read_le(index.data() + positions_start_ + 8 * i, 8));
    if (!e) damaged(fmt::format("record {} lies outside the index", i));
    if (!is_valid_cache_key(e->key)) damaged(fmt::format("'{}' is not a cache key", e->key));
    if (e->offset < kPackHeaderSize || e->offset > entry_area_end || e->bytes > entry_area_end - e->offset)
      damaged(fmt::format("entry {} lies outside the entry area", e->key));
    if (e->bytes > kMostValueBytes)
      damaged(fmt::format("entry {} holds {} bytes, more than a value may ({})", e->key, e->bytes, kMostValueBytes));
    if (i > 0 && e->key <= previous) damaged(fmt::format("entry {} is out of order", e->key));
    previous = e->key;
  }
}

PackEntryInfo CachePack::entry(uint64_t i) const {
  return decode_record(index_, file_io::read_le(index_.data() + positions_start_ + 8 * i, 8))->info();
}

std::string_view CachePack::entry_key(uint64_t i) const {
  return decode_record(index_, file_io::read_le(index_.data() + positions_start_ + 8 * i, 8))->key;
}

std::vector<PackEntryInfo> CachePack::entries() const {
  std::vector<PackEntryInfo> out;
  for (uint64_t i = 0; i < entry_count_; ++i) out.push_back(entry(i));
  return out;
}

std::string CachePack::mismatch(const PackRequirements& r) const {
  const PackManifest& m = manifest_;
  if (m.arch != r.arch)
    return fmt::format("cache pack {} holds kernels for {} (made on {}); this machine needs {}: not used", path_,
                       m.arch, m.device, r.arch);
  if (m.tilejit_version != r.tilejit_version)
    return fmt::format("cache pack {} was made by tilejit {}; this is tilejit {}: not used", path_, m.tilejit_version,
                       r.tilejit_version);
  if (m.llvm_version != r.llvm_version)
    return fmt::format("cache pack {} was made with LLVM {}; this tilejit uses LLVM {}: not used", path_,
                       m.llvm_version, r.llvm_version);
  return {};
}

std::optional<PackedValue> CachePack::read_entry(const PackEntryInfo& entry, std::string& problem) const {
  PackedValue out{entry.label, std::string(entry.bytes, '\0')};
  if (!file_io::read_exact_at(fd_.get(), entry.offset, out.value.data(), out.value.size())) {
    problem = "cannot be read: the file changed since it was opened";
    return std::nullopt;
  }
  if (entry_checksum(entry.key, entry.label, out.value) != entry.checksum) {
    problem = "checksum mismatch";
    return std::nullopt;
  }
  return out;
}

std::optional<PackedValue> CachePack::find(const std::string& key) const {
  uint64_t low = 0, high = entry_count_;  // binary search over the records, in key order
  while (low < high) {
    uint64_t mid = low + (high - low) / 2;
    if (entry_key(mid) < key) low = mid + 1;
    else high = mid;
  }
  if (low == entry_count_ || entry_key(low) != key) return std::nullopt;
  PackEntryInfo found = entry(low);
  std::string problem;
  auto value = read_entry(found, problem);
  if (!value) log::warn("cache pack {}: entry {} ({}) is damaged ({}); not used", path_, key, found.label, problem);
  return value;
}

std::vector<std::string> CachePack::verify() const {
  std::vector<std::string> problems;
  for (const PackEntryInfo& entry : entries()) {
    std::string problem;
    if (!read_entry(entry, problem))
      problems.push_back(fmt::format("entry {} ({}): {}", entry.key, entry.label, problem));
  }
  return problems;
}

int64_t write_cache_pack(const KernelCache& cache, const PackManifest& manifest, const std::string& path,
                         const std::function<bool(const CacheEntryInfo&)>& keep) {
  std::filesystem::path temp = file_io::temp_path_for(path);
  UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd) fail("cannot write cache pack {}: {}", path, file_io::errno_text());
  auto fail_writing = [&]() {
    std::string why = file_io::errno_text();
    ::unlink(temp.c_str());
    fail("cannot write cache pack {}: {}", path, why);
  };

  if (!file_io::write_all(fd.get(), std::string(kPackHeaderSize, '\0'))) fail_writing();
  std::vector<PackEntryInfo> entries;
  uint64_t offset = kPackHeaderSize;
  bool written = true;
  cache.for_each_entry([&](const CacheEntryInfo& info, const std::string& value) {
    if (!written || (keep && !keep(info))) return;
    written = file_io::write_all(fd.get(), value);
    entries.push_back({info.key, info.label, offset, value.size(), entry_checksum(info.key, info.label, value)});
    offset += value.size();
  });
  if (!written) fail_writing();

  std::string index = encode_index(manifest, entries);
  PackHeader header{offset + index.size(), offset, index.size(), cache_key({index})};
  bool finished = file_io::write_all(fd.get(), index) && ::lseek(fd.get(), 0, SEEK_SET) == 0 &&
                  file_io::write_all(fd.get(), encode_header(header)) && ::fsync(fd.get()) == 0 && fd.close() &&
                  ::rename(temp.c_str(), path.c_str()) == 0;
  if (!finished) fail_writing();
  // The pack is in place; only its rename may not survive a crash.
  if (!file_io::sync_directory(std::filesystem::absolute(path).parent_path()))
    log::warn("cache pack {}: written, but its directory could not be synced: {}", path, file_io::errno_text());
  return static_cast<int64_t>(entries.size());
}

PackImport import_cache_pack(const CachePack& pack, KernelCache& cache) {
  if (!cache.on_disk())
    fail("cannot import cache pack {}: the kernel cache is {}", pack.path(),
         cache.enabled() ? "in memory only (no usable directory)" : "disabled");
  if (auto problems = pack.verify(); !problems.empty())
    fail("cache pack {} is damaged; nothing imported: {}", pack.path(), fmt::join(problems, "; "));
  // The directory alone, not the packs attached to `cache`: an entry only a pack holds is
  // not there yet.
  KernelCache directory(CacheOptions{cache.directory(), true});
  if (!directory.on_disk())
    fail("cannot import cache pack {}: {} is not a usable directory", pack.path(), cache.directory());
  PackImport result;
  for (const PackEntryInfo& entry : pack.entries()) {
    auto value = pack.find(entry.key);
    if (!value) fail("cache pack {} changed while it was imported (entry {})", pack.path(), entry.key);
    // Under the cache's update lock: an entry another process stores meanwhile (a tuner's
    // result) is kept, not overwritten.
    bool present = false;
    bool stored = directory.update(entry.key, value->label, [&](std::optional<std::string_view> current) {
      present = current.has_value();
      return present ? std::nullopt : std::optional<std::string>(std::move(value->value));
    });
    if (present) {
      ++result.already_present;
    } else if (!stored) {
      fail("cannot import cache pack {}: entry {} ({}) could not be written into {} ({} entries imported before it)",
           pack.path(), entry.key, entry.label, cache.directory(), result.added);
    } else {
      ++result.added;
    }
  }
  return result;
}

}  // namespace tilejit
