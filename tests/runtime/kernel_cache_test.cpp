// The persistent kernel cache: hits across instances ("processes"), corrupt and truncated
// entries detected and removed, concurrent writers in separate processes, directories that
// cannot be used, the environment, keys, list / stats / clear. Each test gets a fresh
// temporary directory; no GPU is needed.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <thread>

#include "dsl/error.h"
#include "runtime/kernel_cache.h"
#include "tests/child_process.h"
#include "tests/scoped_env.h"

namespace {

namespace fs = std::filesystem;
using tilejit::CacheOptions;
using tilejit::cache_key;
using tilejit::KernelCache;
using tilejit::testing_util::exit_status;
using tilejit::testing_util::fork_child;
using tilejit::testing_util::ScopedEnv;

std::string value_of(const std::optional<std::shared_ptr<const std::string>>& got) {
  return got ? **got : "<miss>";
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

class KernelCacheTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "tilejit_cache_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr) << std::strerror(errno);
    root_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  CacheOptions options() const { return {root_.string(), true}; }
  // A new KernelCache on the same directory sees only what is on disk, like another process.
  KernelCache next_process() const { return KernelCache(options()); }
  fs::path entry_file(const std::string& key) const { return root_ / key.substr(0, 2) / (key + ".tjk"); }

  // A corrupt entry: a miss, the file is gone, and the key works again after a put.
  void expect_detected(const std::string& key, const std::string& what) const {
    SCOPED_TRACE(what);
    EXPECT_FALSE(next_process().get(key));
    EXPECT_FALSE(fs::exists(entry_file(key)));
    next_process().put(key, "label", "fresh");
    EXPECT_EQ(value_of(next_process().get(key)), "fresh");
  }

  fs::path root_;
};

// Every file under the root that is neither an entry, a shard directory nor the stats file.
std::vector<std::string> stray_files(const fs::path& root) {
  std::vector<std::string> stray;
  for (auto& f : fs::recursive_directory_iterator(root)) {
    bool expected = f.is_directory() || f.path().extension() == ".tjk" || f.path() == root / "stats";
    if (!expected) stray.push_back(f.path().string());
  }
  return stray;
}

// --- hits and misses -------------------------------------------------------------------------

TEST_F(KernelCacheTest, MissThenPutThenHitInThisAndTheNextProcess) {
  std::string key = cache_key({"gemm", "sm_90a"});
  KernelCache cache(options());
  EXPECT_TRUE(cache.enabled());
  EXPECT_TRUE(cache.on_disk());
  EXPECT_EQ(cache.directory(), root_.string());
  EXPECT_FALSE(cache.get(key));

  cache.put(key, "gemm sm_90a cubin", "cubin bytes");
  EXPECT_EQ(value_of(cache.get(key)), "cubin bytes");
  EXPECT_TRUE(fs::is_regular_file(entry_file(key)));

  KernelCache next = next_process();
  EXPECT_EQ(value_of(next.get(key)), "cubin bytes");
}

TEST_F(KernelCacheTest, MemoryLayerServesTheSameObjectAndKeepsDiskHits) {
  std::string key = cache_key({"k"});
  next_process().put(key, "label", "payload");
  KernelCache cache(options());
  auto first = cache.get(key);
  ASSERT_TRUE(first);
  fs::remove(entry_file(key));  // later gets must come from memory
  auto second = cache.get(key);
  ASSERT_TRUE(second);
  EXPECT_EQ(first->get(), second->get());
}

TEST_F(KernelCacheTest, PutReplacesTheValue) {
  std::string key = cache_key({"k"});
  KernelCache cache(options());
  cache.put(key, "label", "old");
  cache.put(key, "label", "new");
  EXPECT_EQ(value_of(cache.get(key)), "new");
  EXPECT_EQ(value_of(next_process().get(key)), "new");
}

TEST_F(KernelCacheTest, EmptyLabelAndPayloadRoundTrip) {
  std::string key = cache_key({"empty"});
  next_process().put(key, "", "");
  EXPECT_EQ(value_of(next_process().get(key)), "");
}

TEST_F(KernelCacheTest, StatsCountDiskLookupsAcrossInstances) {
  std::string a = cache_key({"a"}), b = cache_key({"b"});
  {
    KernelCache first(options());
    EXPECT_FALSE(first.get(a));  // miss
    first.put(a, "a", "A");
    EXPECT_TRUE(first.get(a));  // memory: not counted
  }
  {
    KernelCache second(options());
    EXPECT_TRUE(second.get(a));   // disk hit
    EXPECT_TRUE(second.get(a));   // memory: not counted
    EXPECT_FALSE(second.get(b));  // miss
  }
  auto stats = next_process().stats();
  EXPECT_EQ(stats.hits, 1);
  EXPECT_EQ(stats.misses, 2);
}

TEST_F(KernelCacheTest, ThreadsShareOneCache) {
  KernelCache cache(options());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&cache, t] {
      for (int i = 0; i < 50; ++i) {
        std::string key = cache_key({std::to_string(i)});
        cache.put(key, "label", std::to_string(i));
        auto got = cache.get(key);
        if (!got || **got != std::to_string(i)) ADD_FAILURE() << "thread " << t << " key " << i;
      }
    });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(cache.stats().entries, 50);
}

// --- corrupt entries -------------------------------------------------------------------------

// The bytes of a fresh entry file for `key`: header, a label and a 100-byte payload.
std::string written_entry(const CacheOptions& options, const fs::path& file, const std::string& key) {
  KernelCache(options).put(key, "gemm sm_90a cubin", std::string(100, 'p'));
  return read_file(file);
}

TEST_F(KernelCacheTest, TruncatedEntriesAreMissesAndRemoved) {
  std::string key = cache_key({"truncated"});
  std::string bytes = written_entry(options(), entry_file(key), key);
  // Every length short of the whole file: 0, inside the header, header only, inside the
  // label, inside the payload, one byte short.
  for (size_t length = 0; length < bytes.size(); ++length) {
    write_file(entry_file(key), bytes.substr(0, length));
    expect_detected(key, "truncated to " + std::to_string(length));
  }
}

TEST_F(KernelCacheTest, AnyFlippedByteIsAMissAndRemoved) {
  std::string key = cache_key({"flipped"});
  std::string bytes = written_entry(options(), entry_file(key), key);
  // Every position: magic, version, lengths, checksum, label, payload.
  for (size_t position = 0; position < bytes.size(); ++position) {
    std::string flipped = bytes;
    flipped[position] ^= 0x01;
    write_file(entry_file(key), flipped);
    expect_detected(key, "byte " + std::to_string(position) + " flipped");
  }
}

TEST_F(KernelCacheTest, TrailingGarbageIsAMiss) {
  std::string key = cache_key({"long"});
  write_file(entry_file(key), written_entry(options(), entry_file(key), key) + "x");
  expect_detected(key, "one byte appended");
}

// A header that claims more than any value holds, over a (sparse) file of that size: a miss,
// before anything is read into memory for it.
TEST_F(KernelCacheTest, AnOversizedEntryIsAMissAndRemoved) {
  std::string key = cache_key({"oversized"});
  std::string bytes = written_entry(options(), entry_file(key), key);
  const uint64_t label = bytes.size() - 40 - 100, claimed = uint64_t{1} << 40;  // 40-byte header, 100-byte value
  for (int i = 0; i < 8; ++i) bytes[static_cast<size_t>(16 + i)] = static_cast<char>((claimed >> (8 * i)) & 0xff);
  write_file(entry_file(key), bytes);
  std::error_code ec;
  fs::resize_file(entry_file(key), 40 + label + claimed, ec);
  ASSERT_FALSE(ec) << "a sparse file of 1 TiB: " << ec.message();
  expect_detected(key, "a value of 1 TiB");
}

TEST_F(KernelCacheTest, CorruptEntryIsReportedAsAWarning) {
  std::string key = cache_key({"warned"});
  next_process().put(key, "label", "payload");
  write_file(entry_file(key), "not an entry");
  testing::internal::CaptureStderr();
  EXPECT_FALSE(next_process().get(key));
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("tilejit: warning: kernel cache: removing corrupt entry"), std::string::npos) << log;
}

TEST_F(KernelCacheTest, CorruptStatsFileCountsFromZero) {
  write_file(root_ / "stats", "garbage");
  KernelCache cache(options());
  EXPECT_FALSE(cache.get(cache_key({"x"})));
  EXPECT_EQ(cache.stats().misses, 1);
}

// --- concurrent processes --------------------------------------------------------------------

// Writer `writer`'s value number `i`: its own prefix, then a length that varies with i.
std::string concurrent_value(int writer, int i) {
  std::string head = "writer " + std::to_string(writer) + " value " + std::to_string(i) + ":";
  return head + std::string(size_t(1 + (i * 7919) % 50000), char('a' + writer));
}

bool is_written_value(const std::string& value, int iterations) {
  for (int writer = 0; writer < 2; ++writer)
    for (int i = 0; i < iterations; ++i)
      if (value == concurrent_value(writer, i)) return true;
  return false;
}

TEST_F(KernelCacheTest, ConcurrentWritersAndAReaderInSeparateProcesses) {
  constexpr int kIterations = 200;
  std::string key = cache_key({"contended"});
  // Shared with the children: how many writers finished, how many lookups the reader made.
  struct Shared {
    std::atomic<int> writers_done{0};
    std::atomic<int> lookups{0}, hits{0};
  };
  void* memory = ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(memory, MAP_FAILED);
  auto* shared = new (memory) Shared;

  std::vector<pid_t> writers;
  for (int w = 0; w < 2; ++w)
    writers.push_back(fork_child([&, w] {
      KernelCache cache(options());
      for (int i = 0; i < kIterations; ++i) cache.put(key, "label", concurrent_value(w, i));
      ++shared->writers_done;
      return 0;
    }));
  // Exit status 1: a wrong value read; 2: a miss after a hit, i.e. a valid entry disappeared.
  pid_t reader = fork_child([&] {
    bool seen = false;
    // Until the writers are done and at least one value was read.
    while (shared->writers_done < 2 || !seen) {
      auto got = next_process().get(key);  // a fresh instance always reads the disk
      ++shared->lookups;
      if (got && !is_written_value(**got, kIterations)) return 1;
      if (!got && seen) return 2;
      seen = seen || got.has_value();
      shared->hits += got.has_value();
    }
    return 0;
  });

  for (pid_t writer : writers) EXPECT_EQ(exit_status(writer), 0);
  EXPECT_EQ(exit_status(reader), 0) << "1: a corrupt or foreign value was read, 2: an entry vanished";
  EXPECT_GT(shared->hits.load(), 0);
  auto last = next_process().get(key);
  ASSERT_TRUE(last);
  EXPECT_TRUE(**last == concurrent_value(0, kIterations - 1) || **last == concurrent_value(1, kIterations - 1));
  EXPECT_EQ(stray_files(root_), std::vector<std::string>{});
  // The stats file's read-modify-write lost no update: the reader's lookups, plus the last get.
  auto stats = next_process().stats();
  EXPECT_EQ(stats.hits + stats.misses, shared->lookups + 1);
  EXPECT_EQ(stats.entries, 1);
  ::munmap(memory, sizeof(Shared));
}

// --- directories that cannot be used ---------------------------------------------------------

void expect_memory_only_works(KernelCache& cache) {
  EXPECT_FALSE(cache.on_disk());
  std::string key = cache_key({"in memory"});
  EXPECT_FALSE(cache.get(key));
  cache.put(key, "label", "value");
  EXPECT_EQ(value_of(cache.get(key)), "value");
  auto stats = cache.stats();
  EXPECT_EQ(stats.entries, 1);
  EXPECT_EQ(stats.hits, 1);
  EXPECT_EQ(stats.misses, 1);
  ASSERT_EQ(cache.list().size(), 1u);
  EXPECT_EQ(cache.list()[0].label, "label");
}

TEST_F(KernelCacheTest, MissingDirectoryIsCreated) {
  fs::path nested = root_ / "a" / "b";
  KernelCache cache({nested.string(), true});
  EXPECT_TRUE(cache.on_disk());
  EXPECT_TRUE(fs::is_directory(nested));
}

TEST_F(KernelCacheTest, ReadOnlyDirectoryFallsBackToMemory) {
  fs::path dir = root_ / "read-only";
  fs::create_directory(dir);
  fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                           fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  if (::access(dir.c_str(), W_OK) != 0) {
    KernelCache cache({dir.string(), true});
    expect_memory_only_works(cache);
    EXPECT_TRUE(fs::is_empty(dir));
    return;
  }
  // Root may write a 0555 directory: check as the unprivileged user `nobody` in a child.
  if (::geteuid() != 0) GTEST_SKIP() << "a 0555 directory is writable here (CAP_DAC_OVERRIDE without root)";
  fs::permissions(root_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                             fs::perms::others_read | fs::perms::others_exec);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    constexpr uid_t kNobody = 65534;
    if (::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) ::_exit(3);
    if (::access(dir.c_str(), W_OK) == 0) ::_exit(4);
    KernelCache cache({dir.string(), true});
    expect_memory_only_works(cache);
    ::_exit(!HasFailure() && fs::is_empty(dir) ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the cache misbehaved, 3: could not become nobody, 4: still writable";
}

TEST_F(KernelCacheTest, DirectoryUnderARegularFileFallsBackToMemory) {
  write_file(root_ / "file", "not a directory");
  testing::internal::CaptureStderr();
  KernelCache cache({(root_ / "file" / "cache").string(), true});
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("caching in memory only"), std::string::npos) << log;
  expect_memory_only_works(cache);
}

TEST_F(KernelCacheTest, NoDirectoryMeansMemoryOnly) {
  KernelCache cache({"", true});
  expect_memory_only_works(cache);
}

TEST_F(KernelCacheTest, DisabledCacheAlwaysMisses) {
  KernelCache cache({root_.string(), false});
  EXPECT_FALSE(cache.enabled());
  EXPECT_FALSE(cache.on_disk());
  std::string key = cache_key({"k"});
  cache.put(key, "label", "value");
  EXPECT_FALSE(cache.get(key));
  EXPECT_TRUE(cache.list().empty());
  EXPECT_TRUE(fs::is_empty(root_));
}

// --- the environment -------------------------------------------------------------------------

TEST(KernelCacheEnvironment, DirectoryFromTheEnvironment) {
  ScopedEnv home("HOME", "/home/someone"), xdg("XDG_CACHE_HOME", nullptr), dir("TILEJIT_CACHE_DIR", nullptr),
      disable("TILEJIT_CACHE_DISABLE", nullptr);
  EXPECT_EQ(KernelCache::options_from_environment().directory, "/home/someone/.cache/tilejit");
  EXPECT_TRUE(KernelCache::options_from_environment().enabled);
  {
    ScopedEnv relative("XDG_CACHE_HOME", "relative/ignored");
    EXPECT_EQ(KernelCache::options_from_environment().directory, "/home/someone/.cache/tilejit");
  }
  ScopedEnv xdg_set("XDG_CACHE_HOME", "/xdg");
  EXPECT_EQ(KernelCache::options_from_environment().directory, "/xdg/tilejit");
  ScopedEnv dir_set("TILEJIT_CACHE_DIR", "/explicit");
  EXPECT_EQ(KernelCache::options_from_environment().directory, "/explicit");
}

TEST(KernelCacheEnvironment, DisableFromTheEnvironment) {
  {
    ScopedEnv disable("TILEJIT_CACHE_DISABLE", "1");
    EXPECT_FALSE(KernelCache::options_from_environment().enabled);
  }
  ScopedEnv enable("TILEJIT_CACHE_DISABLE", "0");
  EXPECT_TRUE(KernelCache::options_from_environment().enabled);
}

// --- keys ------------------------------------------------------------------------------------

TEST(KernelCacheKey, ThirtyTwoLowercaseHexDigits) {
  std::string key = cache_key({"ir", "sm_90a", "O3"});
  ASSERT_EQ(key.size(), 32u);
  for (char c : key) EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << key;
  EXPECT_EQ(key, cache_key({"ir", "sm_90a", "O3"}));
}

TEST(KernelCacheKey, DifferentPartsGiveDifferentKeys) {
  std::set<std::string> keys = {cache_key({}),           cache_key({""}),         cache_key({"", ""}),
                                cache_key({"ab", "c"}),  cache_key({"a", "bc"}),  cache_key({"abc"}),
                                cache_key({"c", "ab"}),  cache_key({"sm_80"}),    cache_key({"sm_90a"})};
  EXPECT_EQ(keys.size(), 9u);
}

TEST_F(KernelCacheTest, KeysThatAreNotFileNamesAreErrors) {
  KernelCache cache(options());
  for (const std::string& bad : std::vector<std::string>{"", "a", "../escape", "UPPER", "a/b", std::string(129, 'a')}) {
    EXPECT_THROW(cache.get(bad), tilejit::Error) << bad;
    EXPECT_THROW(cache.put(bad, "label", "value"), tilejit::Error) << bad;
  }
}

// --- list, stats, clear ----------------------------------------------------------------------

TEST_F(KernelCacheTest, ListStatsAndClear) {
  KernelCache cache(options());
  auto before = std::chrono::system_clock::now();
  std::vector<std::string> keys = {cache_key({"1"}), cache_key({"2"}), cache_key({"3"})};
  for (size_t i = 0; i < keys.size(); ++i) cache.put(keys[i], "kernel " + std::to_string(i), std::string(10 * i, 'x'));
  write_file(entry_file(keys[0]).parent_path() / "leftover.tjk.tmp.1.2", "a crashed writer's file");

  auto entries = cache.list();
  ASSERT_EQ(entries.size(), 3u);
  int64_t total = 0;
  for (auto& entry : entries) {
    size_t i = std::find(keys.begin(), keys.end(), entry.key) - keys.begin();
    ASSERT_LT(i, keys.size()) << entry.key;
    EXPECT_EQ(entry.label, "kernel " + std::to_string(i));
    EXPECT_EQ(entry.bytes, int64_t(fs::file_size(entry_file(entry.key))));
    EXPECT_GE(entry.modified_unix, std::chrono::system_clock::to_time_t(before) - 1);
    total += entry.bytes;
  }
  EXPECT_TRUE(std::is_sorted(entries.begin(), entries.end(), [](auto& a, auto& b) { return a.key < b.key; }));
  EXPECT_FALSE(next_process().get(cache_key({"absent"})));
  auto stats = cache.stats();
  EXPECT_EQ(stats.entries, 3);
  EXPECT_EQ(stats.bytes, total);
  EXPECT_EQ(stats.misses, 1);

  cache.clear();
  EXPECT_TRUE(cache.list().empty());
  stats = next_process().stats();
  EXPECT_EQ(stats.entries, 0);
  EXPECT_EQ(stats.bytes, 0);
  EXPECT_EQ(stats.hits, 0);
  EXPECT_EQ(stats.misses, 0);
  EXPECT_EQ(stray_files(root_), std::vector<std::string>{});
  EXPECT_FALSE(cache.get(keys[0]));  // the memory layer was cleared too
}

// A cache directory may be one that holds other files too (TILEJIT_CACHE_DIR=$HOME): clear
// removes what the cache wrote and nothing else, and follows no link out of the directory.
TEST_F(KernelCacheTest, ClearRemovesOnlyWhatTheCacheWrote) {
  KernelCache cache(options());
  std::string key = cache_key({"entry"});
  cache.put(key, "kernel", "payload");
  fs::path outside = root_ / "outside";  // stands for a directory elsewhere
  fs::create_directories(outside);
  std::string lookalike = cache_key({"lookalike"});
  std::vector<fs::path> kept = {root_ / "notes.txt", entry_file(key).parent_path() / "notes.txt",
                                root_ / "docs" / (lookalike + ".tjk"), outside / (lookalike + ".tjk")};
  fs::create_directories(root_ / "docs");
  for (const fs::path& file : kept) write_file(file, "a user's file");
  fs::create_directory_symlink(outside, root_ / lookalike.substr(0, 2));                   // a shard that is a link
  fs::create_symlink(outside / (lookalike + ".tjk"), entry_file(key).parent_path() / (cache_key({"link"}) + ".tjk"));

  cache.clear();
  EXPECT_FALSE(fs::exists(entry_file(key)));
  for (const fs::path& file : kept) EXPECT_EQ(read_file(file), "a user's file") << file;
}

// The key is in an entry's checksum: a file copied to another key's name is refused, not served.
TEST_F(KernelCacheTest, AnEntryUnderAnotherKeysNameIsAMiss) {
  std::string key = cache_key({"original"}), other = cache_key({"other"});
  next_process().put(key, "label", "the original's payload");
  fs::create_directories(entry_file(other).parent_path());
  fs::copy_file(entry_file(key), entry_file(other));
  EXPECT_EQ(value_of(next_process().get(key)), "the original's payload");
  expect_detected(other, "copied under another key");
}

// A lookup never reads an entry outside its key's shard, so neither do listings and packs.
TEST_F(KernelCacheTest, AnEntryOutsideItsShardIsNotListed) {
  std::string key = cache_key({"listed"});
  KernelCache cache(options());
  cache.put(key, "label", "payload");
  std::string elsewhere = key.substr(0, 1) + (key[1] == '0' ? "1" : "0");
  fs::create_directories(root_ / elsewhere);
  fs::copy_file(entry_file(key), root_ / elsewhere / (key + ".tjk"));
  auto entries = cache.list();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].key, key);
  EXPECT_EQ(cache.stats().entries, 1);
  cache.clear();  // it is still the cache's file
  EXPECT_FALSE(fs::exists(root_ / elsewhere / (key + ".tjk")));
}

// A FIFO where an entry belongs is a miss at once, not a read that never returns.
TEST_F(KernelCacheTest, AFifoInPlaceOfAnEntryIsAMiss) {
  std::string key = cache_key({"fifo"});
  fs::create_directories(entry_file(key).parent_path());
  ASSERT_EQ(::mkfifo(entry_file(key).c_str(), 0600), 0) << std::strerror(errno);
  testing::internal::CaptureStderr();
  EXPECT_FALSE(next_process().get(key));
  EXPECT_THAT(testing::internal::GetCapturedStderr(), testing::HasSubstr("not a regular file"));
  next_process().put(key, "label", "fresh");
  EXPECT_EQ(value_of(next_process().get(key)), "fresh");
}

// A relative directory is taken from the working directory when the cache is made, and stays
// that directory after the program changes its working directory.
TEST_F(KernelCacheTest, ARelativeDirectoryIsFixedWhenTheCacheIsMade) {
  const fs::path before = fs::current_path();
  fs::current_path(root_);
  const fs::path here = fs::current_path();  // root_ as the system spells it
  KernelCache cache(CacheOptions{"relative", true});
  fs::current_path(before);
  EXPECT_EQ(cache.directory(), (here / "relative").string());
  std::string key = cache_key({"relative"});
  cache.put(key, "label", "payload");
  EXPECT_TRUE(fs::exists(root_ / "relative" / key.substr(0, 2) / (key + ".tjk")));
}

TEST_F(KernelCacheTest, ListSkipsEntriesThatDoNotLookValid) {
  std::string good = cache_key({"good"}), bad = cache_key({"bad"});
  KernelCache cache(options());
  cache.put(good, "good", "payload");
  cache.put(bad, "bad", "payload");
  write_file(entry_file(bad), "TJKCACHE but nothing else");
  auto entries = cache.list();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].key, good);
}

}  // namespace
