// While the tuner measures a config it leaves a mark in the config's trial entry; the measured
// trial replaces it. A process that leaves marks holds a lock (flock(2)) on a file of its own,
// <cache directory>/tuners/<its id>, for as long as it runs, and the kernel releases the lock
// however the process ends. A mark whose lock is free therefore says that measuring the config
// ended the process that left it: a crash, or a hang it was killed for. That holds across
// hosts and PID namespaces sharing the directory, and a reused pid cannot fake a live one.
//
// A process may also end for reasons of its own while it measures (killed from outside, out
// of memory), so one ended measurement is not enough to blame the config: it is measured
// again, and the config whose measurements ended kEndedMeasurementsToFail processes is
// recorded as failed, so that a resumed tuning gets past it instead of crashing again.
#pragma once

#include <optional>

#include "autotune/tuning_db.h"
#include "runtime/kernel_cache.h"

namespace tilejit::autotune {

constexpr int kEndedMeasurementsToFail = 2;

// The mark of this process for a config whose measurements have ended `ended_before`
// processes already, or nullopt where marks cannot be kept: a cache without a directory, or
// no lock file could be made in it (a mark nobody could check is worse than none).
std::optional<TrialRecord> running_mark(const KernelCache& cache, int ended_before);

// Whether the process that left `mark` in `cache`'s directory has ended.
bool mark_outlived_its_process(const KernelCache& cache, const TrialRecord& mark);

// The failure recorded for a config whose mark outlived its process and the processes
// before it (kEndedMeasurementsToFail in all).
TrialRecord failure_of_ended_measurements(const TrialRecord& mark);

}  // namespace tilejit::autotune
