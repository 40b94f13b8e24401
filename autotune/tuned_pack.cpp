#include "autotune/tuned_pack.h"

namespace tilejit::autotune {

TunedEntries tuned_pack_entries(const TuningDatabase& db, const std::string& arch) {
  std::set<std::string> present;
  for (const CacheEntryInfo& entry : db.cache().list()) present.insert(entry.key);
  TunedEntries out;
  std::set<std::string> missing;
  db.for_each_best([&](const std::string& key, const BestConfig& best) {
    if (best.arch != arch) {
      ++out.other_arch_results;
      return;
    }
    out.keys.insert(key);
    ++out.results;
    if (best.kernel_entries.empty()) ++out.results_without_kernels;
    for (const std::string& kernel : best.kernel_entries) {
      if (!present.contains(kernel)) {
        missing.insert(kernel);
      } else if (out.keys.insert(kernel).second) {
        ++out.kernel_entries;
      }
    }
  });
  out.missing_kernel_entries = static_cast<int>(missing.size());
  return out;
}

}  // namespace tilejit::autotune
