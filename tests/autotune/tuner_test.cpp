// The tuner with an injected, synthetic cost (tests/autotune/synthetic_op.h): it finds the
// known best config; times only the top k by the cost model; prunes by constraints before
// compiling and by resource limits before timing; records and skips configs that fail; never
// lets a wrong kernel win; compiles in parallel; resumes an interrupted run, and past a config
// that ended the process measuring it; keeps the faster result when two tuners in two
// processes work on one database at once.
#include <sys/mman.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <limits>

#include "autotune/trial_mark.h"
#include "autotune/tuner.h"
#include "tests/autotune/synthetic_op.h"
#include "tests/child_process.h"
#include "tests/error_message.h"
#include "tests/temp_directory.h"

namespace tilejit::autotune {
namespace {

using ::testing::HasSubstr;
using testing_util::synthetic_config;
using testing_util::synthetic_entry;
using testing_util::synthetic_ms;
using testing_util::SyntheticRunner;

// The fastest of `configs` by the synthetic cost, found by trying them all.
Config fastest_of(const std::vector<Config>& configs) {
  return *std::min_element(configs.begin(), configs.end(),
                           [](auto& a, auto& b) { return synthetic_ms(a) < synthetic_ms(b); });
}

std::vector<Config> without(std::vector<Config> configs, const std::vector<Config>& removed) {
  std::erase_if(configs, [&](const Config& c) { return std::find(removed.begin(), removed.end(), c) != removed.end(); });
  return configs;
}

class TunerTest : public testing::Test {
 protected:
  // Another cache object on the same directory: what another process sees.
  KernelCache cache_in_another_process() const { return KernelCache(CacheOptions{dir_.path().string(), true}); }
  TuneOptions all_configs() const {
    TuneOptions options;
    options.top_k = static_cast<int>(op_.space.size());
    return options;
  }
  std::optional<TrialRecord> trial_of(const Config& config, const DeviceInfo& device) const {
    return db_.trial(TuningKey::of(op_, shape_, device), shape_, config);
  }
  // The order the tuner takes the configs in with no cost model: the kernel's declared
  // constants first (BLOCK=32, num_warps=4: what an untuned call runs), then the space's order.
  std::vector<Config> tuner_order() const {
    std::vector<Config> order{testing_util::synthetic_config(32, 4)};
    for (Config& c : op_.space.configs())
      if (!(c == order.front())) order.push_back(std::move(c));
    return order;
  }

  // Tunes in a child process whose measurement of `deadly` ends it (as a crash would); the
  // child's exit status.
  int in_a_child_dying_measuring(const Config& deadly, const TuneOptions& options) const {
    return testing_util::exit_status(testing_util::fork_child([&] {
      KernelCache cache = cache_in_another_process();
      TuningDatabase db(cache);
      SyntheticRunner runner;
      runner.ends_process_in.insert(deadly.str());
      tune(op_, shape_, runner, db, options);
      return 0;  // not reached: measuring `deadly` ends the process
    }));
  }

  // A child process that marks `config` as being measured and keeps running until this
  // object is destroyed; it then records 0.125 ms for `config` and ends.
  class ChildHoldingAMark {
   public:
    ChildHoldingAMark(const TunerTest& test, const TuningKey& key, const Config& config) {
      EXPECT_EQ(::pipe(marked_), 0);
      EXPECT_EQ(::pipe(go_), 0);
      child_ = testing_util::fork_child([&] {
        KernelCache cache = test.cache_in_another_process();
        TuningDatabase db(cache);
        db.record_trial(key, test.shape_, config, *running_mark(cache, 0));
        char byte = 1;
        if (::write(marked_[1], &byte, 1) != 1 || ::read(go_[0], &byte, 1) != 1) return 1;
        db.record_trial(key, test.shape_, config, {TrialStatus::ok, 0.125, "", {}});
        return 0;
      });
      char byte = 0;
      EXPECT_EQ(::read(marked_[0], &byte, 1), 1) << "the child did not mark";
    }
    ~ChildHoldingAMark() {
      char byte = 1;
      EXPECT_EQ(::write(go_[1], &byte, 1), 1);
      EXPECT_EQ(testing_util::exit_status(child_), 0);
      for (int fd : {marked_[0], marked_[1], go_[0], go_[1]}) ::close(fd);
    }

   private:
    int marked_[2] = {-1, -1}, go_[2] = {-1, -1};
    pid_t child_ = 0;
  };

  testing_util::TempDirectory dir_{"tilejit_tuner_test"};
  KernelCache cache_{CacheOptions{dir_.path().string(), true}};
  TuningDatabase db_{cache_};
  TunableKernel op_ = testing_util::synthetic_op();
  ProblemShape shape_{{{"n", 1000}}};
};

TEST_F(TunerTest, FindsTheKnownBestConfig) {
  SyntheticRunner runner;
  TuneResult r = tune(op_, shape_, runner, db_, all_configs());
  Config expected = fastest_of(op_.space.configs());
  ASSERT_TRUE(r.best);
  EXPECT_EQ(r.best->config, expected) << r.best->config.str();
  EXPECT_DOUBLE_EQ(r.best->ms, synthetic_ms(expected));
  EXPECT_EQ(r.best->tuned_shape, shape_);
  EXPECT_EQ(r.timed, 20);
  EXPECT_EQ(r.configs, 20);
  EXPECT_EQ(runner.measured_configs().size(), 20u);

  // Remembered for another process, under the key of every shape of the bucket (n rounds up
  // to 1024).
  KernelCache other = cache_in_another_process();
  TuningDatabase other_db(other);
  for (int64_t n : {1000, 513, 1024}) {
    std::vector<BestConfig> stored = other_db.results(TuningKey::of(op_, ProblemShape{{{"n", n}}}, runner.device()));
    ASSERT_EQ(stored.size(), 1u) << n;
    EXPECT_EQ(stored[0].config, expected);
    EXPECT_EQ(stored[0].tuned_shape, shape_);
    EXPECT_EQ(stored[0].top_k, 20);
    EXPECT_EQ(stored[0].kernel_entries, std::vector<std::string>{synthetic_entry(expected)});
  }
  EXPECT_TRUE(other_db.results(TuningKey::of(op_, ProblemShape{{{"n", 1025}}}, runner.device())).empty());
}

TEST_F(TunerTest, TimesOnlyTheTopKByTheCostModel) {
  // A model that wrongly prefers BLOCK=128 num_warps=2: the tuner must time exactly its top 3.
  op_.work = [](const Config& c, const ProblemShape&, const DeviceInfo&) {
    double miss = 10 * std::abs(std::log2(double(c["BLOCK"])) - 7) + std::abs(std::log2(double(c["num_warps"])) - 1);
    return LaunchWork{1, 4, 1e9 * (1 + miss), 0, 0};
  };
  SyntheticRunner runner;
  TuneOptions options;
  options.top_k = 3;
  TuneResult r = tune(op_, shape_, runner, db_, options);

  std::vector<Config> ranked = op_.space.configs();
  std::stable_sort(ranked.begin(), ranked.end(), [&](auto& a, auto& b) {
    return estimate_ms(op_.work(a, shape_, runner.device()), runner.device()) <
           estimate_ms(op_.work(b, shape_, runner.device()), runner.device());
  });
  // The declared default (what an untuned call runs) is timed first whatever the model says.
  const Config declared = synthetic_config(32, 4);
  ranked.erase(std::find(ranked.begin(), ranked.end(), declared));
  std::vector<Config> top3 = {declared, ranked[0], ranked[1]};
  std::vector<std::string> expected_measured;
  for (auto& c : top3) expected_measured.push_back(c.str());
  EXPECT_EQ(runner.measured_configs(), expected_measured);
  EXPECT_EQ(runner.prepares, 3);
  ASSERT_TRUE(r.best);
  EXPECT_EQ(r.best->config, fastest_of(top3));
  EXPECT_EQ(ranked.front(), synthetic_config(128, 2));
}

// The heuristic's config is what an untuned call runs: it is timed first, though the cost
// model ranks it last, so the tuned result is never slower; so is one the space does not list
// (an op's heuristic may pick a split-K of 3, say). One the constraints rule out is not timed
// (a stored best always meets them).
TEST_F(TunerTest, TheHeuristicConfigIsAlwaysTimed) {
  const Config fastest = synthetic_config(64, 4), outside = synthetic_config(64, 3);
  TuneOptions options;
  options.top_k = 3;
  for (auto [heuristic, n] : {std::pair{fastest, 1000}, std::pair{outside, 900}}) {
    SCOPED_TRACE(heuristic.str());
    op_.work = [h = heuristic](const Config& c, const ProblemShape&, const DeviceInfo&) {
      return LaunchWork{1, 4, c == h ? 1e12 : 1e9, 0, 0};
    };
    op_.heuristic = [h = heuristic](const ProblemShape&, const DeviceInfo&) { return h; };
    SyntheticRunner runner;
    TuneResult r = tune(op_, ProblemShape{{{"n", n}}}, runner, db_, options);
    ASSERT_EQ(runner.measured_configs().size(), 3u);
    EXPECT_EQ(runner.measured_configs().front(), heuristic.str());
    EXPECT_EQ(r.configs, 20);
    ASSERT_TRUE(r.best);
    EXPECT_LE(r.best->ms, synthetic_ms(heuristic));
  }

  op_.heuristic = [&](const ProblemShape&, const DeviceInfo&) { return fastest; };
  op_.space.require("BLOCK != 64", [](const Config& c, const ProblemShape&) { return c["BLOCK"] != 64; });
  SyntheticRunner pruned;
  TuneResult without = tune(op_, ProblemShape{{{"n", 5000}}}, pruned, db_, options);
  ASSERT_EQ(pruned.measured_configs().size(), 3u);
  for (const std::string& measured : pruned.measured_configs()) EXPECT_NE(measured, fastest.str());
  ASSERT_TRUE(without.best);
  EXPECT_NE(without.best->config["BLOCK"], 64);
}

TEST_F(TunerTest, ConstraintsPruneBeforeAnyCompile) {
  op_.space.require_divides("BLOCK", "n");
  ProblemShape shape{{{"n", 96}}};  // 16 and 32 divide it; 64, 128 and 256 do not
  SyntheticRunner runner;
  TuneResult r = tune(op_, shape, runner, db_, all_configs());
  EXPECT_EQ(r.pruned, 12);
  EXPECT_EQ(runner.prepares, 8);
  for (const std::string& measured : runner.measured_configs())
    EXPECT_THAT(measured, ::testing::AnyOf(HasSubstr("BLOCK=16 "), HasSubstr("BLOCK=32 ")));
  std::vector<Config> allowed;
  for (Config& c : op_.space.configs())
    if (96 % c["BLOCK"] == 0) allowed.push_back(c);
  ASSERT_TRUE(r.best);
  EXPECT_EQ(r.best->config, fastest_of(allowed));
  EXPECT_EQ(op_.space.violated(synthetic_config(64, 4), shape), "BLOCK divides n");
}

TEST_F(TunerTest, KernelsOverTheDeviceLimitsArePrunedBeforeTimingAndReplaced) {
  op_.work = [](const Config& c, const ProblemShape&, const DeviceInfo&) { return LaunchWork{1, 4, 1e9 * synthetic_ms(c), 0, 0}; };
  Config best = fastest_of(op_.space.configs());
  SyntheticRunner runner;
  runner.shared_bytes[best.str()] = 300 * 1024;  // over the 227 KiB a CTA may have
  TuneOptions options;
  options.top_k = 3;
  TuneResult r = tune(op_, shape_, runner, db_, options);

  std::vector<std::string> measured = runner.measured_configs();
  EXPECT_EQ(measured.size(), 3u) << "the oversized config's place goes to the next in rank";
  EXPECT_EQ(std::count(measured.begin(), measured.end(), best.str()), 0);
  EXPECT_EQ(r.rejected, 1);
  auto trial = trial_of(best, runner.device());
  ASSERT_TRUE(trial);
  EXPECT_EQ(trial->status, TrialStatus::over_limits);
  EXPECT_THAT(trial->detail, HasSubstr("307200 bytes of shared memory"));
  ASSERT_TRUE(r.best);
  EXPECT_EQ(r.best->config, fastest_of(without(op_.space.configs(), {best})));
}

TEST_F(TunerTest, ConfigsThatFailAreRecordedAndSkipped) {
  Config compile_fails = fastest_of(op_.space.configs());
  Config launch_fails = fastest_of(without(op_.space.configs(), {compile_fails}));
  SyntheticRunner runner;
  runner.compile_errors.insert(compile_fails.str());
  runner.launch_errors.insert(launch_fails.str());
  TuneResult r = tune(op_, shape_, runner, db_, all_configs());

  ASSERT_TRUE(r.best);
  EXPECT_EQ(r.best->config, fastest_of(without(op_.space.configs(), {compile_fails, launch_fails})));
  EXPECT_EQ(r.rejected, 2);
  auto compile_trial = trial_of(compile_fails, runner.device()), launch_trial = trial_of(launch_fails, runner.device());
  ASSERT_TRUE(compile_trial && launch_trial);
  EXPECT_EQ(compile_trial->status, TrialStatus::compile_failed);
  EXPECT_THAT(compile_trial->detail, HasSubstr("synthetic compile error"));
  EXPECT_EQ(launch_trial->status, TrialStatus::launch_failed);
  EXPECT_THAT(launch_trial->detail, HasSubstr("synthetic launch failure"));
  std::vector<std::string> measured = runner.measured_configs();
  EXPECT_EQ(std::count(measured.begin(), measured.end(), compile_fails.str()), 0) << "a config that did not compile ran";
}

// Whatever a config's build throws is that config's failure: std::bad_alloc too (a huge tile),
// which on a compile thread would otherwise end the process.
TEST_F(TunerTest, ABuildThatThrowsAnythingIsThatConfigsFailure) {
  Config throws = fastest_of(op_.space.configs());
  SyntheticRunner runner;
  runner.compile_throws.insert(throws.str());
  TuneOptions options = all_configs();
  options.compile_threads = 4;
  TuneResult r = tune(op_, shape_, runner, db_, options);
  ASSERT_TRUE(r.best);
  EXPECT_EQ(r.best->config, fastest_of(without(op_.space.configs(), {throws})));
  auto trial = trial_of(throws, runner.device());
  ASSERT_TRUE(trial);
  EXPECT_EQ(trial->status, TrialStatus::compile_failed);
  EXPECT_THAT(trial->detail, HasSubstr("bad_alloc"));
}

// A build that loses the device (a module load that faults) ends the run as a faulting launch
// does: recorded for its config alone, nothing measured after it, and skipped by the next run.
TEST_F(TunerTest, ABuildThatLosesTheDeviceEndsTheRunAndIsSkippedOnResumption) {
  std::vector<Config> configs = tuner_order();
  SyntheticRunner lost;
  lost.device_lost_when_built.insert(configs[1].str());
  TuneOptions options;
  options.top_k = 4;
  EXPECT_THAT(testing_util::error_of([&] { tune(op_, shape_, lost, db_, options); }),
              HasSubstr(fmt::format("{} left the device unusable: synthetic fault loading", configs[1].str())));
  EXPECT_TRUE(lost.measured_configs().empty()) << "a config ran on a lost device";
  ASSERT_TRUE(trial_of(configs[1], lost.device()));
  EXPECT_EQ(trial_of(configs[1], lost.device())->status, TrialStatus::launch_failed);
  EXPECT_FALSE(trial_of(configs[0], lost.device()));

  SyntheticRunner fresh;
  TuneResult r = tune(op_, shape_, fresh, db_, options);
  EXPECT_EQ(r.reused, 1);
  EXPECT_EQ(fresh.measured_configs().size(), 3u);
  ASSERT_TRUE(r.best);
}

// A fault that leaves the device unusable (a CUDA context after an illegal address) is the
// faulting config's outcome only: it is recorded, the run ends with an error naming it, and
// no later config is blamed. A run in a new process goes on past it.
TEST_F(TunerTest, AConfigThatLosesTheDeviceEndsTheRunAndIsSkippedOnResumption) {
  std::vector<Config> configs = tuner_order();
  const Config faults = configs[2];
  SyntheticRunner lost;
  lost.device_lost_by.insert(faults.str());
  TuneOptions options;
  options.top_k = 6;
  EXPECT_THAT(testing_util::error_of([&] { tune(op_, shape_, lost, db_, options); }),
              HasSubstr(fmt::format("autotune synthetic [n=1000]: {} left the device unusable: synthetic fault",
                                    faults.str())));
  EXPECT_EQ(lost.measured_configs().size(), 3u);
  ASSERT_TRUE(trial_of(faults, lost.device()));
  EXPECT_EQ(trial_of(faults, lost.device())->status, TrialStatus::launch_failed);
  EXPECT_FALSE(trial_of(configs[3], lost.device()));

  SyntheticRunner fresh;
  TuneResult r = tune(op_, shape_, fresh, db_, options);
  EXPECT_EQ(r.reused, 3);
  EXPECT_EQ(fresh.measured_configs().size(), 3u);
  for (const std::string& measured : fresh.measured_configs()) EXPECT_NE(measured, faults.str());
  ASSERT_TRUE(r.best);
}

// A config whose measurement ends the tuning process (a crash; a hang it was killed for)
// leaves its mark behind. Once may be the process's own end: the next run measures it again.
// When that ends a second process too, the config is recorded as failed, and a resumed
// tuning goes on past it.
TEST_F(TunerTest, AConfigWhoseMeasurementEndsTwoProcessesIsRecordedAsFailed) {
  std::vector<Config> configs = tuner_order();
  const Config deadly = configs[2];
  TuneOptions options;
  options.top_k = 6;
  const DeviceInfo device = SyntheticRunner().device();
  ASSERT_EQ(in_a_child_dying_measuring(deadly, options), SyntheticRunner::kEndedProcessStatus);
  std::optional<TrialRecord> mark = trial_of(deadly, device);
  ASSERT_TRUE(mark);
  EXPECT_EQ(mark->status, TrialStatus::running);
  EXPECT_EQ(mark->ended_before, 0);
  ASSERT_EQ(in_a_child_dying_measuring(deadly, options), SyntheticRunner::kEndedProcessStatus)
      << "one ended process is not enough to skip the config";
  mark = db_.update_trial(TuningKey::of(op_, shape_, device), shape_, deadly, [](auto&) { return std::nullopt; });
  ASSERT_TRUE(mark);
  EXPECT_EQ(mark->status, TrialStatus::running);
  EXPECT_EQ(mark->ended_before, 1);

  SyntheticRunner fresh;
  TuneResult r = tune(op_, shape_, fresh, db_, options);
  EXPECT_EQ(r.reused, 3) << "the two trials before it and its failure";
  EXPECT_EQ(fresh.measured_configs().size(), 3u);
  for (const std::string& measured : fresh.measured_configs()) EXPECT_NE(measured, deadly.str());
  std::optional<TrialRecord> failure = trial_of(deadly, device);
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->status, TrialStatus::launch_failed);
  EXPECT_THAT(failure->detail, HasSubstr("measuring it ended 2 tuning processes without a result"));
  ASSERT_TRUE(r.best);
}

TEST_F(TunerTest, AConfigWhoseMeasurementEndedOneProcessIsMeasuredAgain) {
  std::vector<Config> configs = tuner_order();
  TuneOptions options;
  options.top_k = 4;
  ASSERT_EQ(in_a_child_dying_measuring(configs[1], options), SyntheticRunner::kEndedProcessStatus);
  SyntheticRunner fresh;
  TuneResult r = tune(op_, shape_, fresh, db_, options);
  EXPECT_EQ(r.reused, 1);
  EXPECT_EQ(fresh.measured_configs().front(), configs[1].str());
  EXPECT_EQ(trial_of(configs[1], fresh.device())->status, TrialStatus::ok);
}

// A mark of a process that is still running (another tuner on the directory, this process)
// is no result: the config is measured.
TEST_F(TunerTest, AMarkOfALiveProcessIsMeasuredAgain) {
  std::vector<Config> configs = tuner_order();
  SyntheticRunner runner;
  const TuningKey key = TuningKey::of(op_, shape_, runner.device());
  ChildHoldingAMark other(*this, key, configs[1]);
  db_.record_trial(key, shape_, configs[0], *running_mark(cache_, 0));
  TuneOptions options;
  options.top_k = 2;
  TuneResult r = tune(op_, shape_, runner, db_, options);
  EXPECT_EQ(r.reused, 0);
  EXPECT_EQ(runner.measured_configs().size(), 2u);
  for (const Config& c : {configs[0], configs[1]}) EXPECT_EQ(trial_of(c, runner.device())->status, TrialStatus::ok);
}

// This process may hold another's mark in memory long after that process stored its result:
// the mark is settled against the directory, and the result is reused, never overwritten.
TEST_F(TunerTest, AMarkSeenEarlierDoesNotHideTheResultStoredSince) {
  std::vector<Config> configs = tuner_order();
  SyntheticRunner runner;
  const TuningKey key = TuningKey::of(op_, shape_, runner.device());
  {
    ChildHoldingAMark other(*this, key, configs[0]);
    ASSERT_EQ(trial_of(configs[0], runner.device())->status, TrialStatus::running);  // now in memory
  }  // it stores a result of 0.125 ms, and ends
  TuneOptions options;
  options.top_k = 1;
  TuneResult r = tune(op_, shape_, runner, db_, options);
  EXPECT_EQ(r.reused, 1);
  EXPECT_TRUE(runner.measured_configs().empty());
  std::optional<TrialRecord> stored = db_.update_trial(key, shape_, configs[0], [](auto&) { return std::nullopt; });
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->status, TrialStatus::ok);
  EXPECT_EQ(stored->ms, 0.125);
}

TEST_F(TunerTest, AFastWrongKernelNeverWins) {
  Config fastest = fastest_of(op_.space.configs());
  SyntheticRunner runner;
  runner.wrong_outputs.insert(fastest.str());
  TuneResult r = tune(op_, shape_, runner, db_, all_configs());
  ASSERT_TRUE(r.best);
  EXPECT_NE(r.best->config, fastest);
  EXPECT_EQ(r.best->config, fastest_of(without(op_.space.configs(), {fastest})));
  auto trial = trial_of(fastest, runner.device());
  ASSERT_TRUE(trial);
  EXPECT_EQ(trial->status, TrialStatus::wrong);
}

TEST_F(TunerTest, NoBestWhenNothingRunsCorrectly) {
  SyntheticRunner runner;
  for (const Config& c : op_.space.configs()) runner.wrong_outputs.insert(c.str());
  TuneResult r = tune(op_, shape_, runner, db_, all_configs());
  EXPECT_FALSE(r.best);
  EXPECT_EQ(r.rejected, 20);
  EXPECT_FALSE(db_.best(r.key, shape_));
}

TEST_F(TunerTest, CompilesCandidatesInParallel) {
  SyntheticRunner runner;
  runner.compile_time = std::chrono::milliseconds(50);
  TuneOptions options;
  options.top_k = 8;
  options.compile_threads = 4;
  TuneResult r = tune(op_, shape_, runner, db_, options);
  EXPECT_EQ(runner.prepares, 8);
  EXPECT_GE(runner.max_running, 2);
  // Eight 50 ms builds on 4 threads: two rounds at least, eight at most; measuring is instant.
  EXPECT_GE(r.build_seconds, 0.1);
  EXPECT_LT(r.build_seconds, 8 * 0.05 + 5) << "the build time is the batches' wall time";
  EXPECT_LT(r.measure_seconds, r.build_seconds);
}

TEST_F(TunerTest, ResumesAfterAnInterruption) {
  TuneOptions options;
  options.top_k = 10;
  std::vector<Config> configs = tuner_order();
  std::vector<Config> top10(configs.begin(), configs.begin() + 10);

  SyntheticRunner first;
  options.should_stop = [&] { return first.measured_configs().size() >= 4; };
  TuneResult interrupted = tune(op_, shape_, first, db_, options);
  EXPECT_TRUE(interrupted.interrupted);
  EXPECT_EQ(interrupted.candidates.size(), 4u);
  EXPECT_FALSE(db_.best(interrupted.key, shape_)) << "an interrupted run offered a best config";

  // Another process picks up where the first stopped: the four trials are reused, not run.
  KernelCache cache = cache_in_another_process();
  TuningDatabase db(cache);
  SyntheticRunner second;
  options.should_stop = nullptr;
  TuneResult resumed = tune(op_, shape_, second, db, options);
  EXPECT_FALSE(resumed.interrupted);
  EXPECT_EQ(resumed.reused, 4);
  EXPECT_EQ(resumed.timed, 6);
  EXPECT_EQ(second.prepares, 6) << "a recorded trial was compiled again";
  std::vector<std::string> all = first.measured_configs(), later = second.measured_configs();
  all.insert(all.end(), later.begin(), later.end());
  std::vector<std::string> expected;
  for (auto& c : top10) expected.push_back(c.str());
  EXPECT_EQ(all, expected) << "every config of the top 10 ran exactly once over both runs";
  ASSERT_TRUE(resumed.best);
  EXPECT_EQ(resumed.best->config, fastest_of(top10));
}

// A best config found among reused trials still names the kernel entries its build reported.
TEST_F(TunerTest, ABestFromAReusedTrialKeepsItsKernelEntries) {
  TuneOptions options;
  options.top_k = 11;
  SyntheticRunner first;
  options.should_stop = [&] { return first.measured_configs().size() >= 10; };
  EXPECT_TRUE(tune(op_, shape_, first, db_, options).interrupted);

  SyntheticRunner second;
  options.top_k = 10;
  options.should_stop = nullptr;
  TuneResult resumed = tune(op_, shape_, second, db_, options);
  EXPECT_EQ(resumed.reused, 10);
  EXPECT_EQ(second.prepares, 0);
  ASSERT_TRUE(resumed.best);
  EXPECT_EQ(resumed.best->kernel_entries, std::vector<std::string>{synthetic_entry(resumed.best->config)});
}

TEST_F(TunerTest, TwoTunersAtOnceOnOneDatabaseKeepTheFasterResult) {
  // Each child reports the best its run ended with; a child that fails exits non-zero.
  struct Shared {
    double best_ms[2];
  };
  void* memory = ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(memory, MAP_FAILED);
  auto* shared = new (memory) Shared{};
  // The second tuner's device is 10% faster; the best config is the same on both.
  std::vector<pid_t> children;
  for (int child = 0; child < 2; ++child)
    children.push_back(testing_util::fork_child([&, child] {
      KernelCache cache = cache_in_another_process();
      TuningDatabase db(cache);
      SyntheticRunner runner(child == 0 ? 1.0 : 0.9);
      runner.compile_time = std::chrono::milliseconds(10);
      TuneResult r = tune(op_, shape_, runner, db, all_configs());
      if (!r.best) return 1;
      shared->best_ms[child] = r.best->ms;
      return 0;
    }));
  for (pid_t child : children) EXPECT_EQ(testing_util::exit_status(child), 0);

  KernelCache after = cache_in_another_process();
  auto stored = TuningDatabase(after).best(TuningKey::of(op_, shape_, SyntheticRunner().device()), shape_);
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->config, fastest_of(op_.space.configs()));
  EXPECT_DOUBLE_EQ(stored->ms, std::min(shared->best_ms[0], shared->best_ms[1]));
  // One best entry and one trial per config, every one intact.
  std::vector<CacheEntryInfo> entries = after.list();
  EXPECT_EQ(entries.size(), 21u);
  for (const CacheEntryInfo& entry : entries) EXPECT_TRUE(after.get(entry.key)) << entry.label;
  ::munmap(memory, sizeof(Shared));
}

TEST_F(TunerTest, TheStoredBestIsReplacedOnlyByAFasterOne) {
  TuningKey key = TuningKey::of(op_, shape_, SyntheticRunner().device());
  EXPECT_DOUBLE_EQ(db_.offer_best(key, {synthetic_config(32, 4), 2.0, shape_, 0, {}, "", 8}).ms, 2.0);
  BestConfig kept = db_.offer_best(key, {synthetic_config(16, 4), 3.0, shape_, 0, {}, "", 12});
  EXPECT_EQ(kept.config, synthetic_config(32, 4));
  EXPECT_DOUBLE_EQ(kept.ms, 2.0);
  EXPECT_EQ(kept.top_k, 12) << "the deeper search found nothing faster: the result stands for it";
  db_.offer_best(key, {synthetic_config(64, 4), 1.5, shape_, 0, {}, "", 4});
  KernelCache other = cache_in_another_process();
  auto stored = TuningDatabase(other).best(key, shape_);
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->config, synthetic_config(64, 4));
  EXPECT_DOUBLE_EQ(stored->ms, 1.5);
  EXPECT_EQ(stored->top_k, 12);
  EXPECT_EQ(TuningDatabase(other).results(key).size(), 1u);
}

// Times of two shapes of one bucket do not compare, and one shape's config may not serve the
// other: each shape keeps its own result, replaced only by a faster one for that shape.
TEST_F(TunerTest, EachShapeOfABucketKeepsItsOwnResult) {
  ProblemShape bigger{{{"n", 1024}}};
  TuningKey key = TuningKey::of(op_, shape_, SyntheticRunner().device());
  ASSERT_EQ(key.str(), TuningKey::of(op_, bigger, SyntheticRunner().device()).str());
  db_.offer_best(key, {synthetic_config(32, 4), 1.0, shape_, 0, {}});
  BestConfig added = db_.offer_best(key, {synthetic_config(16, 4), 5.0, bigger, 0, {}});
  EXPECT_EQ(added.config, synthetic_config(16, 4));
  EXPECT_EQ(added.tuned_shape, bigger);
  BestConfig kept = db_.offer_best(key, {synthetic_config(64, 4), 6.0, bigger, 0, {}});
  EXPECT_EQ(kept.config, synthetic_config(16, 4));
  KernelCache other = cache_in_another_process();
  TuningDatabase other_db(other);
  ASSERT_EQ(other_db.results(key).size(), 2u);
  EXPECT_EQ(other_db.best(key, shape_)->config, synthetic_config(32, 4));
  EXPECT_EQ(other_db.best(key, bigger)->config, synthetic_config(16, 4));
  EXPECT_DOUBLE_EQ(other_db.best(key, bigger)->ms, 5.0);
}

TEST_F(TunerTest, ABucketKeepsTheNewestShapesResults) {
  TuningKey key = TuningKey::of(op_, shape_, SyntheticRunner().device());
  const int64_t kept = TuningDatabase::kShapesPerBucket;
  for (int64_t n = 513; n < 513 + kept + 2; ++n)
    db_.offer_best(key, {synthetic_config(64, 4), 1.0, ProblemShape{{{"n", n}}}, n, {}});
  std::vector<BestConfig> results = db_.results(key);
  ASSERT_EQ(results.size(), size_t(kept));
  EXPECT_EQ(results.front().tuned_shape, (ProblemShape{{{"n", 515}}}));
  EXPECT_EQ(results.back().tuned_shape, (ProblemShape{{{"n", 513 + kept + 1}}}));
  EXPECT_FALSE(db_.best(key, ProblemShape{{{"n", 514}}}));
  // Tuned again (a faster result), the oldest shape is the newest: the next oldest makes way.
  db_.offer_best(key, {synthetic_config(64, 4), 0.5, ProblemShape{{{"n", 515}}}, 10000, {}});
  db_.offer_best(key, {synthetic_config(64, 4), 1.0, ProblemShape{{{"n", 1000}}}, 10001, {}});
  EXPECT_TRUE(db_.best(key, ProblemShape{{{"n", 515}}}));
  EXPECT_FALSE(db_.best(key, ProblemShape{{{"n", 516}}}));
}

TEST_F(TunerTest, AnUnreadableBestEntryIsIgnoredAndReplaced) {
  SyntheticRunner runner;
  TuneResult r = tune(op_, shape_, runner, db_, all_configs());
  int damaged = 0;
  for (const CacheEntryInfo& entry : cache_.list())
    if (entry.label.ends_with(" results")) {
      cache_.put(entry.key, entry.label, "{not json");
      ++damaged;
    }
  ASSERT_EQ(damaged, 1);
  EXPECT_TRUE(db_.results(r.key).empty());
  BestConfig stored = db_.offer_best(r.key, {synthetic_config(16, 1), 9.0, shape_, 0, {}});
  EXPECT_EQ(stored.config, synthetic_config(16, 1));
  EXPECT_TRUE(db_.best(r.key, shape_));
}

// Trial records written before kernel entries were kept read as naming none, and so does a
// best result made of them; the same config built again fills them in without replacing the
// faster time.
TEST_F(TunerTest, RecordsWithoutKernelEntriesReadAndAreFilledIn) {
  SyntheticRunner runner;
  TuneResult r = tune(op_, shape_, runner, db_, all_configs());
  const Config best = r.best->config;
  for (const CacheEntryInfo& entry : cache_.list())
    if (entry.label.find(" trial ") != std::string::npos)
      cache_.put(entry.key, entry.label, R"({"status":"ok","ms":2.0,"detail":""})");
  std::optional<TrialRecord> trial = db_.trial(r.key, shape_, best);
  ASSERT_TRUE(trial);
  EXPECT_EQ(trial->status, TrialStatus::ok);
  EXPECT_TRUE(trial->kernel_entries.empty());
  db_.offer_best(r.key, {best, 0.5, shape_, 0, trial->kernel_entries});
  ASSERT_TRUE(db_.best(r.key, shape_));
  EXPECT_TRUE(db_.best(r.key, shape_)->kernel_entries.empty());

  BestConfig slower{best, 0.9, shape_, 0, {synthetic_entry(best)}};
  EXPECT_EQ(db_.offer_best(r.key, slower).kernel_entries, std::vector<std::string>{synthetic_entry(best)});
  EXPECT_DOUBLE_EQ(db_.best(r.key, shape_)->ms, 0.5);
  EXPECT_EQ(db_.best(r.key, shape_)->kernel_entries, std::vector<std::string>{synthetic_entry(best)});
  // Another config, slower, changes nothing.
  db_.offer_best(r.key, {synthetic_config(16, 1), 0.9, shape_, 0, {synthetic_entry(synthetic_config(16, 1))}});
  EXPECT_EQ(db_.best(r.key, shape_)->config, best);
  EXPECT_EQ(db_.best(r.key, shape_)->kernel_entries, std::vector<std::string>{synthetic_entry(best)});
}

TEST_F(TunerTest, KeysTellDevicesDtypesLayoutsAndBucketsApart) {
  DeviceInfo device = SyntheticRunner().device();
  std::string base = TuningKey::of(op_, shape_, device).str();
  EXPECT_EQ(TuningKey::of(op_, ProblemShape{{{"n", 1024}}}, device).str(), base);  // the same bucket
  EXPECT_NE(TuningKey::of(op_, ProblemShape{{{"n", 1025}}}, device).str(), base);
  EXPECT_THAT(base, HasSubstr("tilejit "));
  std::vector<DeviceInfo> others(3, device);
  others[0].name = "another GPU";
  others[1].arch = "sm_80";
  others[2].sm_count = 132;
  for (const DeviceInfo& other : others) EXPECT_NE(TuningKey::of(op_, shape_, other).str(), base);
  TunableKernel bf16 = op_, transposed = op_;
  bf16.dtypes = "bf16";
  transposed.layout = "nt";
  EXPECT_NE(TuningKey::of(bf16, shape_, device).str(), base);
  EXPECT_NE(TuningKey::of(transposed, shape_, device).str(), base);
}

// Every shard directory's name taken by a file: the cache opens, but no entry can be written.
TEST_F(TunerTest, ResultsThatCannotBeWrittenAreCounted) {
  for (int shard = 0; shard < 256; ++shard)
    std::ofstream(dir_.path() / fmt::format("{:02x}", shard)) << "not a directory";
  testing::internal::CaptureStderr();
  SyntheticRunner runner;
  TuneResult r = tune(op_, shape_, runner, db_, all_configs());
  const std::string log = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(r.best);
  EXPECT_THAT(log, HasSubstr("kernel cache: cannot create"));
  EXPECT_EQ(db_.unstored_writes(), 2 * 20 + 1) << "every trial, the mark before it, and the best";
  EXPECT_EQ(db_.best(TuningKey::of(op_, shape_, runner.device()), shape_)->config, r.best->config)
      << "kept in memory for this process";
  KernelCache disabled(CacheOptions{dir_.path().string(), false});
  TuningDatabase disabled_db(disabled);
  tune(op_, shape_, runner, disabled_db, all_configs());
  EXPECT_EQ(disabled_db.unstored_writes(), 0) << "a disabled cache stores nothing by request";
}

TEST_F(TunerTest, ClearErrors) {
  SyntheticRunner runner;
  TuneOptions options;
  options.top_k = 0;
  EXPECT_THAT(testing_util::error_of([&] { tune(op_, shape_, runner, db_, options); }),
              HasSubstr("top_k must be at least 1"));
  EXPECT_THAT(testing_util::error_of([&] { tune(op_, ProblemShape{{{"m", 4}}}, runner, db_); }),
              HasSubstr("synthetic: shape 'm=4' lacks dimension n"));
  EXPECT_THAT(testing_util::error_of([&] { tune(op_, ProblemShape{{{"n", 4}, {"k", 2}}}, runner, db_); }),
              HasSubstr("has dimensions the op does not"));
  for (int64_t n : {int64_t{0}, int64_t{1} << 48, int64_t{5000000000000000000}})  // the last once never ended
    EXPECT_THAT(testing_util::error_of([&] { tune(op_, ProblemShape{{{"n", n}}}, runner, db_); }),
                HasSubstr("n must be in [1, 2^48)"));
}

}  // namespace
}  // namespace tilejit::autotune
