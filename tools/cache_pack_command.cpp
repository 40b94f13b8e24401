// `tilejit cache pack | import | verify`: the kernel cache as one file that ships.
//   pack -o FILE [--device D] [--arch A]   every entry of the local cache (compiled kernels,
//        [--tuned-only]                    tuning results) and a manifest into FILE; with
//                                          --tuned-only the best configs and their kernels only
//   import FILE [--arch A]                 the pack's entries into the local cache
//   verify FILE [--arch A]                 every entry's checksum, and whether it suits A
// --arch names the architecture a pack is for (default: this machine's GPU, else the
// emulator's), so packs for another GPU can be made and checked on a machine without it.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>

#include "autotune/tuned_pack.h"
#include "codegen/target.h"
#include "runtime/cache_pack.h"
#include "runtime/device.h"
#include "runtime/kernel_cache.h"
#include "tools/commands.h"

namespace tilejit::tools {
namespace {

// --arch as given (checked: a typo would make a pack no machine uses), or this machine's.
PackRequirements requirements_for(const std::string& arch) {
  return arch.empty() ? PackRequirements::for_this_machine() : PackRequirements::for_arch(codegen::find_target(arch).arch);
}

std::string mebibytes(uint64_t bytes) { return fmt::format("{:.2f} MiB", double(bytes) / double(1 << 20)); }

void print_manifest(const CachePack& pack) {
  const PackManifest& m = pack.manifest();
  fmt::print("pack:         {} ({} entries, {})\n", pack.path(), pack.entry_count(), mebibytes(pack.file_bytes()));
  fmt::print("arch:         {}\n", m.arch);
  fmt::print("made on:      {}\n", m.device);
  fmt::print("tilejit:      {}   LLVM: {}   CUDA toolkit: {}   CUDA driver: {}\n", m.tilejit_version, m.llvm_version,
             m.cuda_toolkit, m.cuda_driver);
}

struct Options {
  std::string file, device = "best", arch;
  bool tuned_only = false;
};

int run_pack(const Options& o) {
  const KernelCache& cache = KernelCache::global();
  if (!cache.on_disk()) fail("cache pack: the kernel cache has no directory to pack (set TILEJIT_CACHE_DIR)");
  const DeviceInfo& device = Device::by_name(o.device).info();
  PackManifest manifest = PackManifest::current(o.arch.empty() ? device.arch : codegen::find_target(o.arch).arch,
                                                device.name);
  std::optional<autotune::TunedEntries> tuned;
  if (o.tuned_only) tuned = autotune::tuned_pack_entries(autotune::TuningDatabase::global(), manifest.arch);
  int64_t entries = write_cache_pack(cache, manifest, o.file, [&](const CacheEntryInfo& entry) {
    return !tuned || tuned->keys.contains(entry.key);
  });
  auto pack = CachePack::open_unchecked(o.file);
  fmt::print("packed {} entries of {} into {} ({}) for {}\n", entries, cache.directory(), o.file,
             mebibytes(pack->file_bytes()), manifest.arch);
  if (tuned) {
    fmt::print("tuned only: {} tuned results and the {} kernel entries they run\n", tuned->results,
               tuned->kernel_entries);
    if (tuned->results_without_kernels > 0)
      fmt::print("{} tuned results name no compiled kernels (tuned on the emulator, or by an older tilejit): "
                 "their kernels compile on first use\n",
                 tuned->results_without_kernels);
    if (tuned->other_arch_results > 0)
      fmt::print("{} tuned results for other architectures than {} left out\n", tuned->other_arch_results,
                 manifest.arch);
    if (tuned->missing_kernel_entries > 0)
      fmt::print("{} kernel entries that tuned results name are no longer in the cache: they compile on first use\n",
                 tuned->missing_kernel_entries);
  }
  return 0;
}

int run_import(const Options& o) {
  auto pack = CachePack::open(o.file, requirements_for(o.arch));
  KernelCache& cache = KernelCache::global();
  PackImport imported = import_cache_pack(*pack, cache);
  fmt::print("imported {} entries from {} into {} ({} were there already)\n", imported.added, o.file,
             cache.directory(), imported.already_present);
  return 0;
}

// Exit status 1 when the pack is damaged or does not suit the architecture asked for.
int run_verify(const Options& o) {
  auto pack = CachePack::open_unchecked(o.file);
  print_manifest(*pack);
  std::vector<std::string> problems = pack->verify();
  for (const std::string& problem : problems) fmt::print("damaged:      {}\n", problem);
  if (problems.empty()) fmt::print("entries:      all {} intact\n", pack->entry_count());
  std::string mismatch = pack->mismatch(requirements_for(o.arch));
  fmt::print("usable:       {}\n", mismatch.empty() ? "yes" : "no: " + mismatch);
  return problems.empty() && mismatch.empty() ? 0 : 1;
}

}  // namespace

Command add_cache_pack_commands(CLI::App& cache) {
  auto o = std::make_shared<Options>();
  auto* pack =
      cache.add_subcommand("pack", "Write the whole cache (kernels, tuning results) and a manifest into one file");
  pack->add_option("-o,--output", o->file, "The pack file to write")->required();
  pack->add_option("--device", o->device, "The device the pack is made on: cuda, cuda:N, emu or best")
      ->capture_default_str();
  pack->add_option("--arch", o->arch, "The architecture the pack is for (default: the device's)");
  pack->add_flag("--tuned-only", o->tuned_only,
                 "Only the tuned results and the kernels their configs run (not the trials, not the other "
                 "candidates' kernels)");
  auto* import = cache.add_subcommand("import", "Copy a pack's entries into the local cache");
  import->add_option("file", o->file, "The pack file")->required();
  import->add_option("--arch", o->arch, "The architecture it must be for (default: this machine's)");
  auto* verify = cache.add_subcommand("verify", "Check every entry of a pack and whether it suits this machine");
  verify->add_option("file", o->file, "The pack file")->required();
  verify->add_option("--arch", o->arch, "The architecture it must be for (default: this machine's)");
  return [o, pack, import, verify] {
    if (pack->parsed()) return run_pack(*o);
    if (import->parsed()) return run_import(*o);
    if (verify->parsed()) return run_verify(*o);
    return -1;
  };
}

}  // namespace tilejit::tools
