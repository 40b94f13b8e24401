// `tilejit cache ls | stats | clear`: look at and empty the kernel cache configured by the
// environment (TILEJIT_CACHE_DIR, TILEJIT_CACHE_DISABLE, TILEJIT_PREBUILT). The pack
// subcommands are in cache_pack_command.cpp.
#include <ctime>

#include <fmt/format.h>

#include "runtime/kernel_cache.h"
#include "tools/commands.h"

namespace tilejit::tools {
namespace {

// Local time as "2025-01-31 14:05:09".
std::string format_time(int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm local{};
  char text[32];
  if (!localtime_r(&t, &local) || !std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &local)) return "?";
  return text;
}

// The directory with a note when entries do not outlive the process.
std::string describe_location(const KernelCache& cache) {
  if (!cache.enabled()) return "disabled (TILEJIT_CACHE_DISABLE)";
  if (cache.on_disk()) return cache.directory();
  if (cache.directory().empty()) return "memory only (no directory: set TILEJIT_CACHE_DIR or HOME)";
  return fmt::format("{} (memory only: the directory cannot be created or written)", cache.directory());
}

int run_ls(const KernelCache& cache) {
  for (auto& entry : cache.list())
    fmt::print("{}  {:>10}  {}  {}\n", entry.key, entry.bytes, format_time(entry.modified_unix), entry.label);
  return 0;
}

int run_stats(const KernelCache& cache) {
  CacheStats stats = cache.stats();
  fmt::print("directory: {}\n", describe_location(cache));
  fmt::print("entries:   {}\n", stats.entries);
  fmt::print("bytes:     {}\n", stats.bytes);
  fmt::print("hits:      {}\n", stats.hits);
  fmt::print("misses:    {}\n", stats.misses);
  for (const auto& pack : cache.packs())
    fmt::print("pack:      {} ({}, {} entries, read-only)\n", pack->path(), pack->manifest().arch, pack->entry_count());
  return 0;
}

int run_clear(KernelCache& cache) {
  int64_t entries = cache.stats().entries;
  cache.clear();
  fmt::print("removed {} entries from {}\n", entries, describe_location(cache));
  return 0;
}

}  // namespace

Command add_cache_command(CLI::App& app) {
  auto* cache = app.add_subcommand("cache", "Inspect, empty, pack or import the kernel cache (TILEJIT_CACHE_DIR)");
  cache->require_subcommand(1);
  auto* ls = cache->add_subcommand("ls", "One line per entry: key, bytes, modified time, label");
  auto* stats = cache->add_subcommand("stats", "Directory, entries, bytes, hits and misses");
  auto* clear = cache->add_subcommand("clear", "Remove every entry and reset the counts");
  Command pack_commands = add_cache_pack_commands(*cache);
  // -1: `cache` was not the command given (tilejit.cpp tries each command in turn). The
  // cache is opened only when it was, so other commands never create its directory.
  return [cache, ls, stats, clear, pack_commands] {
    if (!cache->parsed()) return -1;
    if (int status = pack_commands(); status >= 0) return status;
    KernelCache& kernel_cache = KernelCache::global();
    if (ls->parsed()) return run_ls(kernel_cache);
    if (stats->parsed()) return run_stats(kernel_cache);
    return run_clear(kernel_cache);  // require_subcommand(1): clear is the one left
  };
}

}  // namespace tilejit::tools
