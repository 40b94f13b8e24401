// How an op call picks its config: a result the tuning database holds for the shape's bucket
// (tuned offline, loaded from a pack, or tuned earlier); where none serves the shape, the op's
// heuristic, or with TILEJIT_AUTOTUNE=1 the shape is tuned right then, on fresh random inputs
// of that shape, and remembered in the database for every later call and process.
//
// A stored config serves a call only when it names exactly the op's tunable constants and
// meets the constraints for the exact shape of the call (a bucket holds shapes a constraint may
// tell apart). Of those that do, the one tuned on the call's shape is taken, else the one tuned
// on the nearest shape.
#pragma once

#include "autotune/tunable.h"
#include "autotune/tuner.h"
#include "autotune/tuning_db.h"

namespace tilejit::autotune {

enum class ConfigSource { database, tuned_now, heuristic };
const char* config_source_name(ConfigSource source);

struct ConfigChoice {
  Config config;
  ConfigSource source = ConfigSource::heuristic;
};

// Whether `config` can serve a call of `shape`: exactly the space's constants, every
// constraint met.
bool fits(const TunableKernel& op, const Config& config, const ProblemShape& shape);

// TILEJIT_AUTOTUNE: any value but "" or "0" tunes untuned shapes on first use.
bool autotune_on_first_use();

// The stored result that serves `shape`, of a bucket's `results`: among those that fit it, the
// one tuned on `shape` itself, else the one tuned on the nearest shape (extents compared by
// ratio), the newest on a tie.
std::optional<BestConfig> result_serving(const TunableKernel& op, const ProblemShape& shape,
                                         const std::vector<BestConfig>& results);

// `may_tune`: whether a shape no stored result serves is tuned now (TILEJIT_AUTOTUNE) or takes
// the heuristic.
ConfigChoice choose_config(const TunableKernel& op, const ProblemShape& shape, Device& device,
                           TuningDatabase& db = TuningDatabase::global(), const TuneOptions& options = {},
                           bool may_tune = autotune_on_first_use());

}  // namespace tilejit::autotune
