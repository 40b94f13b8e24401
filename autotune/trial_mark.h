// While the tuner measures a config it leaves a mark in the config's trial entry naming its
// process; the measured trial replaces it. A mark whose process has ended says that measuring
// the config ended that process: a crash (a fault the driver took the process down for), or a
// kernel that never finished and was killed. The next run records such a config as failed
// rather than running it again, so a tuning that resumes after it gets past it.
#pragma once

#include "autotune/tuning_db.h"

namespace tilejit::autotune {

// The mark of this process.
TrialRecord running_mark();

// Whether the process that left `mark` is known to have ended: it ran on this host and no
// process has its pid now. A mark from another host, or whose pid is in use (by it or by a
// later process), reads as live: at worst a config is measured again.
bool mark_outlived_its_process(const TrialRecord& mark);

// The failure recorded for a config whose mark outlived its process.
TrialRecord failure_of_ended_run(const TrialRecord& mark);

}  // namespace tilejit::autotune
