// What a pack of tuned kernels holds (`tilejit cache pack --tuned-only`): every best config
// of a cache's tuning database and the kernel cache entries those configs were built into,
// and nothing else: not the trials, not the kernels of the candidates that lost. An
// application that loads it finds the tuned config and the kernels the tuned candidate's
// build named (an op's runner names the kernels a call runs beside it) with no compiler work,
// from a file a fraction of the whole cache's size; a call that specializes differently (other
// strides or alignment than the tuning problem's) still compiles its own.
#pragma once

#include <set>
#include <string>

#include "autotune/tuning_db.h"

namespace tilejit::autotune {

struct TunedEntries {
  std::set<std::string> keys;        // best-config entries and the kernel entries they name
  int results = 0;                   // best configs
  int kernel_entries = 0;            // kernel entries named and present
  int results_without_kernels = 0;   // best configs that name none (tuned on the emulator, or
                                     // made of trials recorded before kernels were)
  int missing_kernel_entries = 0;    // distinct entries named but no longer in the cache
  int other_arch_results = 0;        // best configs tuned for another architecture, left out
};

// Reads the cache's own entries (not its packs'), for a pack for `arch`: results tuned on
// another architecture stay out (a loader on `arch` never looks them up).
TunedEntries tuned_pack_entries(const TuningDatabase& db, const std::string& arch);

}  // namespace tilejit::autotune
