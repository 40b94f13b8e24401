// The tuner: finds the fastest correct config of an op for one problem shape on one device.
//
//   1. Every config of the space that breaks a constraint for the shape is pruned.
//   2. The rest are ranked by the analytic cost model, after the op's heuristic config when it
//      is among them (what an untuned call runs, timed whatever the cost model says of it, so a
//      tuned result is never slower than the default); only the first `top_k` are timed.
//   3. Candidates are compiled in parallel on host threads, a batch at a time; a config whose
//      kernel exceeds the device's limits (shared memory, registers, threads) or does not
//      compile is recorded and replaced by the next in rank, so up to `top_k` are timed.
//   4. Each timed candidate's output is checked against the reference first: a wrong kernel
//      is recorded and never chosen, however fast. A failing launch is recorded and skipped;
//      one that leaves the device unusable (DeviceLost) is recorded and ends the run with an
//      error, since every later candidate would fail for it.
//   5. Every outcome is recorded in the tuning database as it happens, so an interrupted run
//      resumes where it stopped (recorded trials are reused, not run again), and the fastest
//      correct config is offered as the shape's best (a faster stored result is kept).
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "autotune/candidate_runner.h"
#include "autotune/tunable.h"
#include "autotune/tuning_db.h"

namespace tilejit::autotune {

struct TuneProgress {
  int done = 0;    // candidates timed (or whose recorded outcome was reused)
  int reused = 0;  // of those done, outcomes an earlier or concurrent run recorded
  int total = 0;   // candidates to time: top_k, or fewer when fewer configs are left
  std::optional<Config> best;
  double best_ms = 0;
};

struct TuneOptions {
  int top_k = 8;
  int compile_threads = 0;  // 0: one per core
  std::function<void(const TuneProgress&)> on_progress;
  std::function<bool()> should_stop;  // checked before each candidate; true ends the run early
};

struct CandidateResult {
  Config config;
  TrialRecord trial;
  bool reused = false;  // from the database: recorded by an earlier or concurrent run
};

struct TuneResult {
  TuningKey key;
  std::optional<BestConfig> best;  // what the database holds for the shape after this run
  std::vector<CandidateResult> candidates;  // every candidate built or timed, in rank order
  int configs = 0;                // in the space
  int pruned = 0;                 // by constraints, before any compile
  int timed = 0;                  // checked and timed in this run
  int reused = 0;                 // outcomes an earlier or concurrent run recorded
  int rejected = 0;               // did not compile, exceed the limits, compute wrong, or fail to launch
  bool interrupted = false;       // should_stop ended the run; no best was offered
  // Where the run's wall time went: compiling candidates (in parallel, so the longest of each
  // batch), and checking and timing them on the device.
  double build_seconds = 0, measure_seconds = 0;
};

// A config as the tuner ranks it: the cost model's estimate on the device, and whether it is
// the op's heuristic config (timed first, whatever its estimate).
struct RankedConfig {
  Config config;
  double estimate_ms = 0;
  bool heuristic = false;
};
struct Ranking {
  std::vector<RankedConfig> configs;  // in the order tune() times them
  int configs_in_space = 0, pruned = 0;
};
// The candidates of `shape` (checked_shape's) on `device` in the order tune() times them:
// the heuristic config when it meets the constraints, then every other config of the space
// that meets them, cheapest estimate first (ties keep the space's order).
Ranking rank_candidates(const TunableKernel& op, const ProblemShape& shape, const DeviceInfo& device);

// Whether a candidate with this outcome fills one of the top_k places: one that ran (right,
// wrong or failing at launch) does; one that never ran (no compile, over the device's limits)
// makes way for the next in rank order.
bool takes_a_top_k_place(TrialStatus status);

TuneResult tune(const TunableKernel& op, const ProblemShape& shape, CandidateRunner& runner, TuningDatabase& db,
                const TuneOptions& options = {});

}  // namespace tilejit::autotune
