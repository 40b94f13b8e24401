// The tuning database: what the tuner measured and chose, kept as entries of the kernel cache.
//
// Why the kernel cache and not a separate SQLite file: one store means one pack file carries
// compiled kernels and tuning results together (`tilejit cache pack`), packs layered under
// the local cache serve tuning results exactly as they serve kernels, and every guarantee the
// cache already has and tests holds for tuning results too: atomic writes by rename, a
// checksum on every entry (a damaged result is dropped, never used), many processes on one
// directory, network file systems. What SQLite would add, an atomic read-compare-write, is
// KernelCache::update (a lock file under flock(2)); listing by op is by label.
//
// Two kinds of entries:
//   best   one per tuning key: for each shape of the bucket that was tuned, the chosen config
//          and its time (a bucket holds shapes a constraint may tell apart, so one config
//          cannot serve them all). A shape's result is replaced only by a faster one for that
//          shape, under the update lock, so two tuners at once keep the better result.
//   trial  one per (tuning key, exact shape, config): a measurement or why the config did not
//          run. An interrupted tuning run resumes from these, and two tuners on one shape
//          share them.
//
// A tuning key names the op, the shape's bucket, dtypes, layout, the device (name, arch, SM
// count) and the tilejit version.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "autotune/named_values.h"
#include "autotune/tunable.h"
#include "runtime/device.h"
#include "runtime/kernel_cache.h"

namespace tilejit::autotune {

struct DeviceFingerprint {
  std::string name, arch;
  int sm_count = 0;
  static DeviceFingerprint of(const DeviceInfo& device);
  std::string str() const;  // "NVIDIA H100 80GB HBM3, sm_90a, 132 SMs"
};

struct TuningKey {
  std::string op;
  ProblemShape bucket;
  std::string dtypes, layout;
  DeviceFingerprint device;
  std::string tilejit_version;

  // The key of `shape` (bucketed by the op's rules) for `op` on `device`, this tilejit.
  static TuningKey of(const TunableKernel& op, const ProblemShape& shape, const DeviceInfo& device);
  std::string str() const;
};

enum class TrialStatus {
  ok,              // checked and timed
  wrong,           // ran, but its output differs from the reference
  launch_failed,   // built, but a launch failed
  compile_failed,  // did not build
  over_limits,     // built, but needs more than the device has (shared memory, registers, threads)
  running,         // being measured by the process the record names (autotune/trial_mark.h)
};
const char* trial_status_name(TrialStatus status);

struct TrialRecord {
  TrialStatus status = TrialStatus::ok;
  double ms = 0;       // when ok
  std::string detail;  // why not ok
  // When ok: the kernel cache entries its kernels were built into (KernelReport::cache_entries).
  std::vector<std::string> kernel_entries;
  // When running: the id of the process measuring it, and how many processes measuring it
  // ended before (autotune/trial_mark.h).
  std::string owner = {};
  int ended_before = 0;
};

struct BestConfig {
  Config config;
  double ms = 0;
  ProblemShape tuned_shape;  // the exact shape it was measured on
  int64_t tuned_unix = 0;
  // The kernel cache entries the config's kernels were built into, on the device it was tuned
  // on: what a pack of tuned kernels only must hold (tuned_pack_entries). Empty where kernels
  // are not cached (the emulator).
  std::vector<std::string> kernel_entries;
  // The architecture of the device it was tuned on (the key's, set when stored).
  std::string arch = {};
  // The deepest search behind it: the most configs a tuning of this shape was asked to time
  // (TuneOptions::top_k). A later run asking for more searches again.
  int top_k = 0;
};

class TuningDatabase {
 public:
  explicit TuningDatabase(KernelCache& cache);
  // The database in the process-wide kernel cache (TILEJIT_CACHE_DIR, TILEJIT_PREBUILT).
  static TuningDatabase& global();

  // Every shape's result stored for the key's bucket, oldest first.
  std::vector<BestConfig> results(const TuningKey& key) const;
  // The result tuned on exactly `shape`.
  std::optional<BestConfig> best(const TuningKey& key, const ProblemShape& shape) const;
  // Stores `candidate` as the best for its tuned shape unless a faster result for that shape
  // is stored already; returns what is stored for the shape afterwards. A bucket keeps the
  // results of kShapesPerBucket shapes at most: the one tuned longest ago makes way (a
  // warning names it).
  BestConfig offer_best(const TuningKey& key, const BestConfig& candidate);
  static constexpr size_t kShapesPerBucket = 64;

  std::optional<TrialRecord> trial(const TuningKey& key, const ProblemShape& shape, const Config& config) const;
  void record_trial(const TuningKey& key, const ProblemShape& shape, const Config& config, const TrialRecord& record);
  // Replaces the trial of `config` with `change(current)` unless that returns nullopt, with the
  // current trial read from the directory under the update lock, not from this process's
  // memory (which may hold another process's mark long replaced); returns the trial stored
  // afterwards.
  using TrialChange = std::function<std::optional<TrialRecord>(const std::optional<TrialRecord>& current)>;
  std::optional<TrialRecord> update_trial(const TuningKey& key, const ProblemShape& shape, const Config& config,
                                          const TrialChange& change);

  KernelCache& cache() const { return cache_; }
  // Results and trials this object could not write into the cache's directory (a warning
  // said why each time): they live only in this process's memory.
  int64_t unstored_writes() const { return unstored_writes_; }

  // Every shape's best config in this cache's own entries (not its packs'), with its entry key.
  void for_each_best(const std::function<void(const std::string& key, const BestConfig& best)>& visit) const;

 private:
  void count_unless_stored(bool stored);

  KernelCache& cache_;
  std::atomic<int64_t> unstored_writes_ = 0;
};

}  // namespace tilejit::autotune
