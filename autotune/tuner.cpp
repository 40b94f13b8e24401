#include "autotune/tuner.h"

#include <algorithm>
#include <functional>
#include <optional>

#include "autotune/config_choice.h"
#include "autotune/parallel.h"
#include "autotune/resource_limits.h"
#include "autotune/stopwatch.h"
#include "autotune/trial_mark.h"
#include "dsl/error.h"
#include "dsl/log.h"
#include "runtime/device_lost.h"

namespace tilejit::autotune {
namespace {

struct Build {
  std::optional<KernelReport> report;
  std::string error;
  std::optional<std::string> device_lost;  // why, when building it (a module load) lost the device
};

// Runs `config` if it built and fits the device, calling `before_measuring` first.
TrialRecord run_candidate(CandidateRunner& runner, const Config& config, const Build& build,
                          const std::function<void()>& before_measuring) {
  if (!build.report) return {TrialStatus::compile_failed, 0, build.error, {}};
  if (auto too_big = exceeds_device_limits(*build.report, runner.device()))
    return {TrialStatus::over_limits, 0, *too_big, {}};
  before_measuring();
  try {
    Measurement m = runner.measure(config);
    if (!m.correct) return {TrialStatus::wrong, 0, m.mismatch, {}};
    return {TrialStatus::ok, m.ms, "", build.report->cache_entries};
  } catch (const DeviceLost&) {
    throw;  // not this config's outcome alone: every later one would fail too
  } catch (const std::exception& e) {  // what its measurement throws is its failure, std::bad_alloc included
    return {TrialStatus::launch_failed, 0, e.what(), {}};
  }
}

// What the database says of `config` before this run measures it (trial_mark.h).
struct Recorded {
  std::optional<TrialRecord> trial;  // an outcome to reuse
  int ended_before = 0;              // else: the processes that ended while measuring it
};

Recorded recorded_trial(TuningDatabase& db, const TuningKey& key, const ProblemShape& shape, const Config& config) {
  std::optional<TrialRecord> trial = db.trial(key, shape, config);
  if (!trial || trial->status != TrialStatus::running) return {trial, 0};
  // A mark: settled against the directory, where the mark's process may have stored its result.
  bool ended = false;
  trial = db.update_trial(key, shape, config, [&](const std::optional<TrialRecord>& current) -> std::optional<TrialRecord> {
    ended = current && mark_outlived_its_process(db.cache(), *current);
    if (ended && current->ended_before + 1 >= kEndedMeasurementsToFail) return failure_of_ended_measurements(*current);
    return std::nullopt;
  });
  if (!trial || trial->status != TrialStatus::running) return {trial, 0};
  return {std::nullopt, trial->ended_before + (ended ? 1 : 0)};
}

}  // namespace

// The heuristic config is timed whether or not the space lists it, so a tuned result is never
// slower than an untuned call; one the constraints rule out is not (a stored best always meets
// them).
Ranking rank_candidates(const TunableKernel& op, const ProblemShape& shape, const DeviceInfo& device) {
  std::optional<Config> heuristic;
  if (op.heuristic || op.kernel) heuristic = op.heuristic_config(shape, device);
  const bool heuristic_allowed = heuristic && fits(op, *heuristic, shape);
  auto estimate = [&](const Config& c) { return op.work ? estimate_ms(op.work(c, shape, device), device) : 0; };
  Ranking ranking;
  std::vector<RankedConfig> others;
  for (Config& config : op.space.configs()) {
    ++ranking.configs_in_space;
    if (auto broken = op.space.violated(config, shape)) {
      ++ranking.pruned;
      log::debug("autotune {} [{}]: {} pruned: needs {}", op.name, shape.str(), config.str(), *broken);
      continue;
    }
    if (config == heuristic) continue;
    double ms = estimate(config);
    others.push_back({std::move(config), ms, false});
  }
  std::stable_sort(others.begin(), others.end(), [](auto& a, auto& b) { return a.estimate_ms < b.estimate_ms; });
  if (heuristic_allowed) ranking.configs.push_back({*heuristic, estimate(*heuristic), true});
  ranking.configs.insert(ranking.configs.end(), std::make_move_iterator(others.begin()),
                         std::make_move_iterator(others.end()));
  return ranking;
}

bool takes_a_top_k_place(TrialStatus status) {
  return status == TrialStatus::ok || status == TrialStatus::wrong || status == TrialStatus::launch_failed;
}

TuneResult tune(const TunableKernel& op, const ProblemShape& requested_shape, CandidateRunner& runner,
                TuningDatabase& db, const TuneOptions& options) {
  if (options.top_k < 1) fail("autotune {}: top_k must be at least 1, got {}", op.name, options.top_k);
  ProblemShape shape = op.checked_shape(requested_shape);
  TuneResult result;
  result.key = TuningKey::of(op, shape, runner.device());
  Ranking ranking = rank_candidates(op, shape, runner.device());
  result.configs = ranking.configs_in_space, result.pruned = ranking.pruned;
  const std::vector<RankedConfig>& ranked = ranking.configs;
  TuneProgress progress{0, 0, static_cast<int>(std::min<size_t>(size_t(options.top_k), ranked.size())), {}, 0};
  std::vector<std::string> best_entries;  // the kernel cache entries the best config runs

  for (size_t next = 0; progress.done < options.top_k && next < ranked.size() && !result.interrupted;) {
    size_t count = std::min(ranked.size() - next, size_t(options.top_k - progress.done));
    std::vector<Recorded> recorded(count);
    for (size_t i = 0; i < count; ++i) recorded[i] = recorded_trial(db, result.key, shape, ranked[next + i].config);
    std::vector<Build> builds(count);
    const Stopwatch building;
    run_in_parallel(count, options.compile_threads, [&](size_t i) {
      if (recorded[i].trial) return;
      // A job must not throw (parallel.h): what a config's compile throws is its failure,
      // std::bad_alloc of a huge tile included.
      try {
        builds[i].report = runner.prepare(ranked[next + i].config);
      } catch (const DeviceLost& e) {
        builds[i].device_lost = e.what();
      } catch (const std::exception& e) {
        builds[i].error = e.what();
      }
    });
    result.build_seconds += building.seconds();
    // The faulting config is recorded, so that a run in a new process resumes past it; nothing
    // runs after a fault (on a GPU, every later call would fail too).
    auto end_with_fault = [&](const Config& config, const std::string& why) {
      db.record_trial(result.key, shape, config, {TrialStatus::launch_failed, 0, why, {}});
      fail("autotune {} [{}]: {} left the device unusable: {}. Its trial is recorded as failed; run the tuning "
           "again in a new process to go on from there",
           op.name, shape.str(), config.str(), why);
    };
    for (size_t i = 0; i < count; ++i)
      if (builds[i].device_lost) end_with_fault(ranked[next + i].config, *builds[i].device_lost);

    for (size_t i = 0; i < count; ++i) {
      if (options.should_stop && options.should_stop()) {
        result.interrupted = true;
        break;
      }
      const Config& config = ranked[next + i].config;
      CandidateResult candidate{config, {}, recorded[i].trial.has_value()};
      if (candidate.reused) {
        candidate.trial = *recorded[i].trial;
        ++result.reused;
      } else {
        auto mark = [&] {
          if (auto m = running_mark(db.cache(), recorded[i].ended_before)) db.record_trial(result.key, shape, config, *m);
        };
        const Stopwatch measuring;
        try {
          candidate.trial = run_candidate(runner, config, builds[i], mark);
        } catch (const DeviceLost& e) {
          end_with_fault(config, e.what());
        }
        result.measure_seconds += measuring.seconds();
        db.record_trial(result.key, shape, config, candidate.trial);
        if (candidate.trial.status == TrialStatus::ok) ++result.timed;
      }
      const TrialRecord& trial = candidate.trial;
      log::info("autotune {} [{}] {}: {} {}", op.name, shape.str(), config.str(), trial_status_name(trial.status),
                trial.status == TrialStatus::ok ? fmt::format("{:.4f} ms", trial.ms) : trial.detail);
      if (trial.status != TrialStatus::ok) ++result.rejected;
      if (takes_a_top_k_place(trial.status)) {
        ++progress.done;
        if (candidate.reused) ++progress.reused;
      }
      if (trial.status == TrialStatus::ok && (!progress.best || trial.ms < progress.best_ms)) {
        progress.best = config;
        progress.best_ms = trial.ms;
        best_entries = trial.kernel_entries;
      }
      result.candidates.push_back(std::move(candidate));
      if (options.on_progress) options.on_progress(progress);
    }
    next += count;
  }

  if (!result.interrupted && progress.best)
    result.best =
        db.offer_best(result.key, {*progress.best, progress.best_ms, shape, 0, best_entries, "", options.top_k});
  else
    result.best = db.best(result.key, shape);
  return result;
}

}  // namespace tilejit::autotune
