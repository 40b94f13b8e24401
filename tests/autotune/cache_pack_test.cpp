// Cache packs: a round trip from one cache directory to a fresh process with an empty cache
// (only hits, nothing traced or compiled, counted); every flipped byte and every truncation
// detected; foreign files, other architectures and other versions refused with clear
// messages; loading never writes into a pack; layering order; import; TILEJIT_PREBUILT; and
// KernelCache::update, which the tuning database relies on, across processes.
#include <sys/mman.h>
#include <sys/stat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <map>
#include <random>

#include "autotune/tuned_pack.h"
#include "autotune/tuning_db.h"
#include "codegen/target.h"
#include "runtime/cache_pack.h"
#include "runtime/cuda/cubin_compiler.h"
#include "runtime/cuda/cuda_compile.h"
#include "runtime/kernel_cache.h"
#include "tests/autotune/synthetic_op.h"
#include "tests/child_process.h"
#include "tests/error_message.h"
#include "tests/scoped_env.h"
#include "tests/temp_directory.h"

namespace tilejit {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::Not;
using testing_util::error_of;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

int64_t modified_ns(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0);
  return int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

std::atomic<int> traces{0};

// out[i] = x[i] + 1; counts its traces (a trace precedes every compile).
const dsl::Kernel& add_one() {
  using namespace tilejit::dsl;
  static const Kernel kernel = define_kernel(
      "tj_pack_add_one", {"x", "out", "n"}, {{"BLOCK", 128}},
      [](const Constants& c, Ptr<f32> x, Ptr<f32> out, Scalar<i32> n) {
        ++traces;
        Tile offs = program_id(0) * c["BLOCK"] + arange(0, c["BLOCK"]);  // (BLOCK)
        store(out + offs, load(x + offs, offs < n) + 1.0, offs < n);
      });
  return kernel;
}

class CachePackTest : public testing::Test {
 protected:
  KernelCache cache_at(const std::string& name) const { return KernelCache(CacheOptions{dir_ / name, true}); }

  // A pack of the local cache "made" holding a few entries of random bytes (NULs included).
  std::string make_pack(const PackManifest& manifest, const std::string& name = "pack.tjpack") {
    KernelCache made = cache_at("made");
    std::mt19937 rng(7);
    for (int i = 0; i < 3; ++i) {
      std::string value(size_t(20 + 30 * i), '\0');
      for (char& ch : value) ch = static_cast<char>(rng());
      std::string key = cache_key({"entry", std::to_string(i)});
      made.put(key, fmt::format("entry {}", i), value);
      entries_[key] = value;
    }
    std::string path = dir_ / name;
    EXPECT_EQ(write_cache_pack(made, manifest, path), 3);
    return path;
  }
  static PackManifest for_sm90() { return PackManifest::current("sm_90a", "test device"); }
  static PackRequirements needs_sm90() { return PackRequirements::for_arch("sm_90a"); }

  testing_util::TempDirectory dir_{"tilejit_pack_test"};
  std::map<std::string, std::string> entries_;
};

TEST_F(CachePackTest, RoundTripToAFreshProcessServesOnlyHitsAndCompilesNothing) {
  dsl::Constants constants = add_one().constants();
  KernelRequest request{&add_one(), &constants, add_one().aligned_facts()};
  const codegen::Target& target = codegen::find_target("sm_90a");
  autotune::TunableKernel op = testing_util::synthetic_op();
  autotune::ProblemShape shape{{{"n", 4096}}};
  DeviceInfo device = testing_util::SyntheticRunner().device();
  autotune::TuningKey key = autotune::TuningKey::of(op, shape, device);

  // The machine that tunes and compiles: a kernel and a tuning result into its cache, packed.
  KernelCache made = cache_at("made");
  cuda::CudaKernelImage compiled = cuda::compile_cuda_kernel(request, target, made);
  autotune::TuningDatabase(made).offer_best(key, {testing_util::synthetic_config(64, 4), 1.25, shape, 0, {}});
  std::string pack = dir_ / "made.tjpack";
  ASSERT_EQ(write_cache_pack(made, for_sm90(), pack), 3);  // launch entry, image, best config
  std::string pack_bytes = read_file(pack);

  // A fresh process with an empty cache: the pack serves every lookup.
  struct Counts {
    CacheStats stats;
    int traces = -1;
    bool found_best = false, same_image = false, from_pack = false;
    int local_entries = -1;
  };
  void* memory = ::mmap(nullptr, sizeof(Counts), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(memory, MAP_FAILED);
  auto* counts = new (memory) Counts{};
  pid_t child = testing_util::fork_child([&] {
    KernelCache fresh = cache_at("fresh");
    fresh.attach_pack(CachePack::open(pack, needs_sm90()));
    int before = traces;
    auto best = autotune::TuningDatabase(fresh).best(key, shape);
    counts->found_best = best && best->config == testing_util::synthetic_config(64, 4) && best->ms == 1.25;
    cuda::CudaKernelImage image = cuda::compile_cuda_kernel(request, target, fresh);
    counts->traces = traces - before;
    counts->from_pack = image.report.from_disk_cache;
    counts->same_image = image.ptx == compiled.ptx && image.cubin == compiled.cubin;
    counts->stats = fresh.stats();
    counts->local_entries = static_cast<int>(fresh.list().size());
    return 0;
  });
  ASSERT_EQ(testing_util::exit_status(child), 0);
  EXPECT_TRUE(counts->found_best);
  EXPECT_EQ(counts->traces, 0) << "the fresh process traced (and compiled) the kernel";
  EXPECT_TRUE(counts->from_pack);
  EXPECT_TRUE(counts->same_image);
  EXPECT_EQ(counts->stats.misses, 0);
  EXPECT_EQ(counts->stats.hits, 3);  // best config, launch key, image
  EXPECT_EQ(counts->stats.prebuilt_hits, 3);
  EXPECT_EQ(counts->local_entries, 0) << "pack hits were copied into the local cache";
  EXPECT_EQ(read_file(pack), pack_bytes);
  ::munmap(memory, sizeof(Counts));
}

// `tilejit cache pack --tuned-only`: the best configs and the kernel entries they name, not
// the trials and not the losing candidates' kernels; a fresh cache over the pack runs the
// winner with no trace and compiles the loser.
TEST_F(CachePackTest, ATunedOnlyPackHoldsTheBestConfigsAndTheirKernelsOnly) {
  if (cuda::cubin_tool() == "driver") GTEST_SKIP() << "neither nvJitLink nor ptxas is installed";
  const codegen::Target& target = codegen::find_target("sm_90a");
  dsl::Constants winner = add_one().constants(), loser = add_one().constants({{"BLOCK", 256}});
  KernelRequest wins{&add_one(), &winner, add_one().aligned_facts()};
  KernelRequest loses{&add_one(), &loser, add_one().aligned_facts()};
  autotune::TunableKernel op = testing_util::synthetic_op();
  DeviceInfo device = testing_util::SyntheticRunner().device();
  autotune::ProblemShape tuned{{{"n", 4096}}}, emulated{{{"n", 100}}}, cleared{{{"n", 20}}};

  KernelCache made = cache_at("made");
  autotune::TuningDatabase db(made);
  KernelReport won = cuda::compile_cuda_kernel(wins, target, made).report;
  KernelReport lost = cuda::compile_cuda_kernel(loses, target, made).report;
  const autotune::TuningKey key = autotune::TuningKey::of(op, tuned, device);
  using testing_util::synthetic_config;
  db.record_trial(key, tuned, synthetic_config(128, 4), {autotune::TrialStatus::ok, 1.0, "", won.cache_entries});
  db.record_trial(key, tuned, synthetic_config(256, 4), {autotune::TrialStatus::ok, 2.0, "", lost.cache_entries});
  db.offer_best(key, {synthetic_config(128, 4), 1.0, tuned, 0, won.cache_entries});
  // A result with no kernels (the emulator's) and one whose kernel left the cache since.
  db.offer_best(autotune::TuningKey::of(op, emulated, device), {synthetic_config(64, 4), 1.0, emulated, 0, {}});
  db.offer_best(autotune::TuningKey::of(op, cleared, device),
                {synthetic_config(32, 4), 1.0, cleared, 0, {cache_key({"gone"})}});
  // A result tuned on another architecture, with its kernel: neither belongs in an sm_90a pack.
  DeviceInfo ampere = device;
  ampere.arch = "sm_80";
  const autotune::TuningKey ampere_key = autotune::TuningKey::of(op, tuned, ampere);
  db.offer_best(ampere_key, {synthetic_config(256, 4), 1.5, tuned, 0, lost.cache_entries});

  autotune::TunedEntries entries = autotune::tuned_pack_entries(db, "sm_90a");
  EXPECT_EQ(entries.other_arch_results, 1);
  EXPECT_EQ(entries.results, 3);
  EXPECT_EQ(entries.kernel_entries, 2);  // the winner's launch and image entries
  EXPECT_EQ(entries.results_without_kernels, 1);
  EXPECT_EQ(entries.missing_kernel_entries, 1);
  std::string path = dir_ / "tuned.tjpack";
  auto tuned_only = [&](const CacheEntryInfo& e) { return entries.keys.contains(e.key); };
  ASSERT_EQ(write_cache_pack(made, for_sm90(), path, tuned_only), 5);
  auto pack = CachePack::open(path, needs_sm90());
  for (const std::string& k : won.cache_entries) EXPECT_TRUE(pack->find(k)) << "the winner's kernel is missing";
  for (const std::string& k : lost.cache_entries) EXPECT_FALSE(pack->find(k)) << "the loser's kernel was packed";
  for (const PackEntryInfo& e : pack->entries()) EXPECT_THAT(e.label, Not(HasSubstr("trial"))) << "a trial was packed";

  KernelCache fresh = cache_at("fresh");
  fresh.attach_pack(pack);
  autotune::TuningDatabase shipped(fresh);
  ASSERT_TRUE(shipped.best(key, tuned));
  EXPECT_EQ(shipped.best(key, tuned)->config, synthetic_config(128, 4));
  EXPECT_EQ(shipped.best(key, tuned)->arch, "sm_90a");
  EXPECT_FALSE(shipped.best(ampere_key, tuned)) << "another architecture's result was packed";
  int before = traces;
  EXPECT_TRUE(cuda::compile_cuda_kernel(wins, target, fresh).report.from_disk_cache);
  EXPECT_EQ(traces, before) << "the winner was traced again";
  EXPECT_FALSE(cuda::compile_cuda_kernel(loses, target, fresh).report.from_disk_cache);
  EXPECT_EQ(traces, before + 1);
}

TEST_F(CachePackTest, ManifestAndEntriesRoundTrip) {
  PackManifest manifest = for_sm90();
  std::string path = make_pack(manifest);
  auto pack = CachePack::open(path, needs_sm90());
  EXPECT_EQ(pack->manifest().arch, "sm_90a");
  EXPECT_EQ(pack->manifest().device, "test device");
  EXPECT_EQ(pack->manifest().tilejit_version, manifest.tilejit_version);
  EXPECT_EQ(pack->manifest().llvm_version, manifest.llvm_version);
  EXPECT_EQ(pack->manifest().cuda_toolkit, manifest.cuda_toolkit);
  EXPECT_EQ(pack->manifest().created_unix, manifest.created_unix);
  EXPECT_EQ(pack->entry_count(), 3u);
  for (auto& [key, value] : entries_) {
    auto found = pack->find(key);
    ASSERT_TRUE(found);
    EXPECT_EQ(found->value, value);
  }
  EXPECT_FALSE(pack->find(cache_key({"absent"})));
  EXPECT_TRUE(pack->verify().empty());
  EXPECT_EQ(pack->file_bytes(), read_file(path).size());
}

// Whatever byte is damaged, the pack is refused at once or the entry holding it is refused
// when read (with a warning); every other entry is served intact.
TEST_F(CachePackTest, EveryFlippedByteIsDetected) {
  std::string path = make_pack(for_sm90());
  std::string original = read_file(path);
  std::string damaged_path = dir_ / "damaged.tjpack";
  for (size_t i = 0; i < original.size(); ++i) {
    SCOPED_TRACE(fmt::format("byte {} of {}", i, original.size()));
    std::string bytes = original;
    bytes[i] = static_cast<char>(bytes[i] ^ 0x20);
    write_file(damaged_path, bytes);
    std::shared_ptr<const CachePack> pack;
    std::string refusal = error_of([&] { pack = CachePack::open(damaged_path, needs_sm90()); });
    if (!pack) {
      EXPECT_THAT(refusal, HasSubstr(damaged_path));
      EXPECT_THAT(refusal, AnyOf(HasSubstr("damaged"), HasSubstr("truncated"), HasSubstr("not a tilejit cache pack"),
                                 HasSubstr("format version")));
      continue;
    }
    int refused = 0;
    testing::internal::CaptureStderr();
    for (auto& [key, value] : entries_) {
      auto found = pack->find(key);
      if (!found) ++refused;
      else EXPECT_EQ(found->value, value) << "a damaged pack served a wrong value";
    }
    std::string warnings = testing::internal::GetCapturedStderr();
    EXPECT_EQ(refused, 1) << "the flipped byte went unnoticed";
    EXPECT_THAT(warnings, HasSubstr("is damaged (checksum mismatch); not used"));
    EXPECT_EQ(pack->verify().size(), 1u);
  }
}

TEST_F(CachePackTest, EveryTruncationIsRefused) {
  std::string path = make_pack(for_sm90());
  std::string original = read_file(path);
  std::string cut = dir_ / "cut.tjpack";
  for (size_t length = 0; length < original.size(); ++length) {
    write_file(cut, original.substr(0, length));
    std::string message = error_of([&] { CachePack::open(cut, needs_sm90()); });
    if (length < 8) EXPECT_THAT(message, HasSubstr("is not a tilejit cache pack")) << length;
    else EXPECT_THAT(message, HasSubstr(fmt::format("cache pack {} is truncated: {} bytes", cut, length))) << length;
  }
}

// A record that says its value is larger than any value may be, inside a (sparse) pack of that
// size whose index checksum holds: refused when opened, before any memory is taken for it.
TEST_F(CachePackTest, AnOversizedEntryIsRefused) {
  std::string bytes = read_file(make_pack(for_sm90()));
  auto le = [&](size_t at) { return file_io::read_le(bytes.data() + at, 8); };
  auto set_le = [](std::string& s, size_t at, uint64_t v) {
    for (int i = 0; i < 8; ++i) s[at + static_cast<size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
  };
  // Header: magic (8), version (4), reserved (4), file length, index offset, index length, checksum.
  // Index: manifest length (4), manifest, entry count (8), record positions (8 each), records;
  // a record's value length lies 14 bytes in.
  const uint64_t index_offset = le(24), gap = uint64_t{1} << 31;
  std::string index = bytes.substr(index_offset);
  const size_t positions = 4 + file_io::read_le(index.data(), 4) + 8;
  const size_t record = file_io::read_le(index.data() + positions, 8);
  const uint64_t claimed = file_io::read_le(index.data() + record + 14, 8) + gap;
  set_le(index, record + 14, claimed);
  std::string header = bytes.substr(0, 72);
  set_le(header, 16, bytes.size() + gap);
  set_le(header, 24, index_offset + gap);
  header.replace(40, 32, cache_key({index}));
  std::string path = dir_ / "oversized.tjpack";
  write_file(path, header + bytes.substr(72, index_offset - 72));
  std::error_code ec;
  fs::resize_file(path, index_offset + gap, ec);  // the entry area, sparse, then the index
  ASSERT_FALSE(ec) << "a sparse file of 2 GiB: " << ec.message();
  std::ofstream(path, std::ios::binary | std::ios::app) << index;
  ASSERT_EQ(fs::file_size(path), bytes.size() + gap);
  EXPECT_THAT(error_of([&] { CachePack::open(path, needs_sm90()); }),
              AllOf(HasSubstr(fmt::format("cache pack {} is damaged: entry", path)),
                    HasSubstr(fmt::format("holds {} bytes, more than a value may", claimed))));
}

TEST_F(CachePackTest, ForeignFilesAreRefused) {
  std::string text = dir_ / "notes.txt", empty = dir_ / "empty", entry = dir_ / "entry.tjk";
  write_file(text, "these are not the kernels you are looking for\n");
  write_file(empty, "");
  KernelCache local = cache_at("local");
  std::string key = cache_key({"x"});
  local.put(key, "label", "value");  // a kernel cache entry file is not a pack either
  fs::copy_file(dir_.path() / "local" / key.substr(0, 2) / (key + ".tjk"), entry);
  for (const std::string& path : {text, empty, entry})
    EXPECT_THAT(error_of([&] { CachePack::open(path, needs_sm90()); }),
                HasSubstr(path + " is not a tilejit cache pack"));
  EXPECT_THAT(error_of([&] { CachePack::open(dir_ / "missing", needs_sm90()); }),
              HasSubstr("cannot open: No such file or directory"));
  EXPECT_THAT(error_of([&] { CachePack::open(dir_.path().string(), needs_sm90()); }), HasSubstr("is not a regular file"));
  // Opening a FIFO would wait for a writer: it is refused at once.
  const std::string fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THAT(error_of([&] { CachePack::open(fifo, needs_sm90()); }), HasSubstr(fifo + " is not a regular file"));
}

TEST_F(CachePackTest, PacksForAnotherArchOrVersionAreRefused) {
  PackManifest sm80 = for_sm90(), other_tilejit = for_sm90(), other_llvm = for_sm90();
  sm80.arch = "sm_80";
  other_tilejit.tilejit_version = "0.0.1-other";
  other_llvm.llvm_version = "11.0.0";
  std::string arch_pack = make_pack(sm80, "sm80.tjpack");
  std::string tilejit_pack = make_pack(other_tilejit, "tilejit.tjpack");
  std::string llvm_pack = make_pack(other_llvm, "llvm.tjpack");
  EXPECT_THAT(error_of([&] { CachePack::open(arch_pack, needs_sm90()); }),
              HasSubstr(fmt::format(
                  "cache pack {} holds kernels for sm_80 (made on test device); this machine needs sm_90a", arch_pack)));
  EXPECT_THAT(error_of([&] { CachePack::open(tilejit_pack, needs_sm90()); }),
              HasSubstr(fmt::format("was made by tilejit 0.0.1-other; this is tilejit {}", sm80.tilejit_version)));
  EXPECT_THAT(error_of([&] { CachePack::open(llvm_pack, needs_sm90()); }),
              HasSubstr(fmt::format("was made with LLVM 11.0.0; this tilejit uses LLVM {}", sm80.llvm_version)));
  // Intact all the same, and usable where they belong.
  EXPECT_TRUE(CachePack::open_unchecked(arch_pack)->verify().empty());
  EXPECT_NO_THROW(CachePack::open(arch_pack, PackRequirements::for_arch("sm_80")));

  // An application given them through the environment starts anyway, without them.
  KernelCache local = cache_at("local");
  testing::internal::CaptureStderr();
  local.attach_packs_or_warn({arch_pack, tilejit_pack, llvm_pack, dir_ / "missing.tjpack"});
  std::string warnings = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(local.packs().empty());
  EXPECT_THAT(warnings, HasSubstr("holds kernels for sm_80"));
  EXPECT_THAT(warnings, HasSubstr("0.0.1-other"));
  EXPECT_THAT(warnings, HasSubstr("LLVM 11.0.0"));
  EXPECT_THAT(warnings, HasSubstr("missing.tjpack: cannot open"));
  for (auto& [key, value] : entries_) EXPECT_FALSE(local.get(key));
}

TEST_F(CachePackTest, LoadingNeverWritesIntoAPack) {
  std::string path = make_pack(for_sm90());
  std::string bytes = read_file(path);
  int64_t modified = modified_ns(path);
  ::chmod(path.c_str(), 0444);
  {
    KernelCache local = cache_at("local");
    local.attach_pack(CachePack::open(path, needs_sm90()));
    for (auto& [key, value] : entries_) {
      ASSERT_TRUE(local.get(key));
      local.put(key, "local", "replaced locally");  // goes to the local directory
    }
    local.update(entries_.begin()->first, "local", [](auto) { return std::string("updated"); });
    local.clear();
    auto pack = CachePack::open(path, needs_sm90());
    pack->verify();
    KernelCache imported = cache_at("imported");
    import_cache_pack(*pack, imported);
  }
  EXPECT_EQ(read_file(path), bytes);
  EXPECT_EQ(modified_ns(path), modified);
  std::vector<std::string> next_to_it;
  for (auto& f : fs::directory_iterator(dir_.path()))
    if (f.is_regular_file()) next_to_it.push_back(f.path().filename().string());
  EXPECT_EQ(next_to_it, std::vector<std::string>{"pack.tjpack"}) << "a file appeared beside the pack";
}

TEST_F(CachePackTest, LocalEntriesComeFirstThenPacksInOrder) {
  KernelCache first_cache = cache_at("first"), second_cache = cache_at("second");
  std::string shared_key = cache_key({"shared"}), only_second = cache_key({"only second"});
  first_cache.put(shared_key, "k", "from the first pack");
  second_cache.put(shared_key, "k", "from the second pack");
  second_cache.put(only_second, "k", "second");
  std::string first = dir_ / "first.tjpack", second = dir_ / "second.tjpack";
  write_cache_pack(first_cache, for_sm90(), first);
  write_cache_pack(second_cache, for_sm90(), second);

  KernelCache local = cache_at("local");
  local.attach_pack(CachePack::open(first, needs_sm90()));
  local.attach_pack(CachePack::open(second, needs_sm90()));
  EXPECT_EQ(**local.get(shared_key), "from the first pack");
  EXPECT_EQ(**local.get(only_second), "second");
  local.put(shared_key, "k", "local");
  KernelCache next = cache_at("local");
  next.attach_pack(CachePack::open(first, needs_sm90()));
  EXPECT_EQ(**next.get(shared_key), "local");
  EXPECT_EQ(local.packs().size(), 2u);
}

TEST_F(CachePackTest, ImportKeepsLocalEntriesAndRefusesADamagedPack) {
  std::string path = make_pack(for_sm90());
  KernelCache local = cache_at("local");
  const std::string& kept = entries_.begin()->first;
  local.put(kept, "local", "mine");
  PackImport result = import_cache_pack(*CachePack::open(path, needs_sm90()), local);
  EXPECT_EQ(result.added, 2);
  EXPECT_EQ(result.already_present, 1);
  KernelCache next = cache_at("local");
  for (auto& [key, value] : entries_) EXPECT_EQ(**next.get(key), key == kept ? "mine" : value);

  // One damaged entry: nothing at all is imported.
  std::string bytes = read_file(path);
  auto pack = CachePack::open(path, needs_sm90());
  PackEntryInfo victim = pack->entries().back();
  bytes[victim.offset] = static_cast<char>(bytes[victim.offset] ^ 1);
  write_file(path, bytes);
  KernelCache empty = cache_at("empty");
  EXPECT_THAT(error_of([&] { import_cache_pack(*CachePack::open(path, needs_sm90()), empty); }),
              HasSubstr(fmt::format("is damaged; nothing imported: entry {} ({}): checksum mismatch", victim.key,
                                    victim.label)));
  EXPECT_TRUE(empty.list().empty());
}

// An import whose entries cannot be stored fails and says which, rather than counting them.
TEST_F(CachePackTest, AnImportThatCannotWriteFailsAndSaysWhere) {
  std::string path = make_pack(for_sm90());
  KernelCache memory_only(CacheOptions{"", true});
  EXPECT_THAT(error_of([&] { import_cache_pack(*CachePack::open(path, needs_sm90()), memory_only); }),
              HasSubstr("the kernel cache is in memory only"));
  KernelCache disabled(CacheOptions{dir_ / "disabled", false});
  EXPECT_THAT(error_of([&] { import_cache_pack(*CachePack::open(path, needs_sm90()), disabled); }),
              HasSubstr("the kernel cache is disabled"));

  // A regular file where the first entry's shard directory belongs.
  KernelCache blocked = cache_at("blocked");
  const auto& [first, value] = *entries_.begin();
  write_file(fs::path(blocked.directory()) / first.substr(0, 2), "not a directory");
  EXPECT_THAT(error_of([&] { import_cache_pack(*CachePack::open(path, needs_sm90()), blocked); }),
              HasSubstr(fmt::format("entry {} (", first)));
}

TEST_F(CachePackTest, WritingReplacesAPackWhole) {
  std::string path = make_pack(for_sm90());
  KernelCache other = cache_at("other");
  other.put(cache_key({"new"}), "new", "new value");
  EXPECT_EQ(write_cache_pack(other, for_sm90(), path), 1);
  auto pack = CachePack::open(path, needs_sm90());
  EXPECT_EQ(pack->entry_count(), 1u);
  EXPECT_EQ(pack->find(cache_key({"new"}))->value, "new value");
  for (auto& f : fs::directory_iterator(dir_.path()))
    EXPECT_FALSE(f.path().filename().string().find(".tmp.") != std::string::npos) << "left behind: " << f.path();
  EXPECT_THAT(error_of([&] { write_cache_pack(other, for_sm90(), dir_ / "no/such/dir/pack"); }),
              HasSubstr("cannot write cache pack"));
}

TEST_F(CachePackTest, TheEnvironmentListsPacks) {
  {
    testing_util::ScopedEnv env("TILEJIT_PREBUILT", "/a.tjpack::/b.tjpack:");
    EXPECT_EQ(KernelCache::prebuilt_from_environment(), (std::vector<std::string>{"/a.tjpack", "/b.tjpack"}));
  }
  testing_util::ScopedEnv unset("TILEJIT_PREBUILT", nullptr);
  EXPECT_TRUE(KernelCache::prebuilt_from_environment().empty());
  // This machine's arch: a pack made for it is attached from the list.
  std::string path = make_pack(PackManifest::current(PackRequirements::for_this_machine().arch, "here"));
  KernelCache local = cache_at("local");
  local.attach_packs_or_warn({path});
  ASSERT_EQ(local.packs().size(), 1u);
  EXPECT_EQ(**local.get(entries_.begin()->first), entries_.begin()->second);
}

// The read-compare-write the tuning database's best entries rely on: no update is lost when
// two processes (each with two threads) update one entry at once.
TEST_F(CachePackTest, ConcurrentUpdatesAreNeverLost) {
  constexpr int kUpdatesPerThread = 40;
  std::string key = cache_key({"counter"});
  auto increment_many = [&] {
    KernelCache cache = cache_at("shared");
    auto increment = [&] {
      for (int i = 0; i < kUpdatesPerThread; ++i)
        cache.update(key, "counter", [](std::optional<std::string_view> current) {
          return std::to_string((current ? std::stoi(std::string(*current)) : 0) + 1);
        });
    };
    std::thread other(increment);
    increment();
    other.join();
    return 0;
  };
  std::vector<pid_t> children = {testing_util::fork_child(increment_many), testing_util::fork_child(increment_many)};
  for (pid_t child : children) EXPECT_EQ(testing_util::exit_status(child), 0);
  EXPECT_EQ(**cache_at("shared").get(key), std::to_string(4 * kUpdatesPerThread));

  KernelCache memory_only(CacheOptions{"", true});
  memory_only.update(key, "counter", [](auto current) { return std::string(current ? "again" : "first"); });
  memory_only.update(key, "counter", [](auto current) { return std::string(current ? "again" : "first"); });
  EXPECT_EQ(**memory_only.get(key), "again");
}

}  // namespace
}  // namespace tilejit
