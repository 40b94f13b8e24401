#include "autotune/tuned_pack.h"

namespace tilejit::autotune {

TunedEntries tuned_pack_entries(const TuningDatabase& db) {
  std::set<std::string> present;
  for (const CacheEntryInfo& entry : db.cache().list()) present.insert(entry.key);
  TunedEntries out;
  db.for_each_best([&](const std::string& key, const BestConfig& best) {
    out.keys.insert(key);
    ++out.results;
    if (best.kernel_entries.empty()) ++out.results_without_kernels;
    for (const std::string& kernel : best.kernel_entries) {
      if (!present.contains(kernel)) {
        ++out.missing_kernel_entries;
      } else if (out.keys.insert(kernel).second) {
        ++out.kernel_entries;
      }
    }
  });
  return out;
}

}  // namespace tilejit::autotune
