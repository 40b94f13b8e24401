#include "autotune/bucket_config.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "autotune/config_choice.h"
#include "dsl/log.h"

namespace tilejit::autotune {
namespace {

struct Bucket {
  std::mutex mutex;  // held while a shape of the bucket is looked up or tuned
  std::optional<std::vector<BestConfig>> results;  // the database's, read on first use
  bool tuning_failed = false;  // tuning on first use could not run; not tried again
};

Bucket& bucket_of(const TunableKernel& op, const ProblemShape& shape, Device& device) {
  using Key = std::tuple<const Device*, const TunableKernel*, std::string>;
  static std::mutex mutex;
  static std::map<Key, std::unique_ptr<Bucket>> buckets;
  std::lock_guard lock(mutex);
  std::unique_ptr<Bucket>& bucket = buckets[Key{&device, &op, op.bucketing.bucket(shape).str()}];
  if (!bucket) bucket = std::make_unique<Bucket>();
  return *bucket;
}

}  // namespace

std::optional<Config> tuned_bucket_config(const TunableKernel& op, const ProblemShape& shape, Device& device) {
  Bucket& bucket = bucket_of(op, shape, device);
  std::lock_guard lock(bucket.mutex);
  TuningDatabase& db = TuningDatabase::global();
  const TuningKey key = TuningKey::of(op, shape, device.info());
  if (!bucket.results) bucket.results = db.results(key);
  if (auto stored = result_serving(op, shape, *bucket.results)) return stored->config;
  if (!autotune_on_first_use() || bucket.tuning_failed) return std::nullopt;
  try {
    ConfigChoice choice = choose_config(op, shape, device, db, {}, true);
    bucket.results = db.results(key);  // with this shape's result
    if (choice.source == ConfigSource::heuristic) return std::nullopt;
    return choice.config;
  } catch (const Error& e) {
    // Tuning on first use that cannot run (no memory for its problem, say) must not fail the
    // call: the shape takes the heuristic, and the bucket is not tuned again in this process.
    log::warn("{} {} [{}]: no tuned config ({}); using the heuristic", op.name, op.dtypes, shape.str(), e.what());
    bucket.tuning_failed = true;
    return std::nullopt;
  }
}

}  // namespace tilejit::autotune
