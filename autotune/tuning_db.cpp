#include "autotune/tuning_db.h"

#include <algorithm>
#include <chrono>

#include <nlohmann/json.hpp>

#include "dsl/log.h"
#include "runtime/version.h"

namespace tilejit::autotune {
namespace {

using nlohmann::json;

constexpr TrialStatus kStatuses[] = {TrialStatus::ok,          TrialStatus::wrong,
                                     TrialStatus::launch_failed, TrialStatus::compile_failed,
                                     TrialStatus::over_limits,   TrialStatus::running};

json named_to_json(const NamedValues& named) {
  json out = json::array();
  for (auto& [name, value] : named.values) out.push_back({name, value});
  return out;
}

NamedValues named_from_json(const json& j) {
  NamedValues out;
  for (const json& pair : j) out.values.emplace_back(pair.at(0).get<std::string>(), pair.at(1).get<int64_t>());
  return out;
}

std::string best_entry_key(const TuningKey& key) { return cache_key({"autotune results", key.str()}); }

std::string trial_entry_key(const TuningKey& key, const ProblemShape& shape, const Config& config) {
  return cache_key({"autotune trial", key.str(), shape.str(), config.str()});
}

// Entries a record's kernels were built into; trial records written before there were any
// have none.
std::vector<std::string> kernel_entries_from_json(const json& j) {
  return j.contains("kernel_entries") ? j.at("kernel_entries").get<std::vector<std::string>>()
                                      : std::vector<std::string>{};
}

// Entries of the format before per-shape results, labelled "... best", are neither read nor packed
// as tuning results.
std::string best_label(const TuningKey& key) {
  return fmt::format("autotune {} {} [{}] results", key.op, key.device.arch, key.bucket.str());
}
bool is_best_label(std::string_view label) { return label.starts_with("autotune ") && label.ends_with("] results"); }

json best_to_json(const BestConfig& best) {
  return json{{"config", named_to_json(best.config)},
              {"ms", best.ms},
              {"tuned_shape", named_to_json(best.tuned_shape)},
              {"tuned_unix", best.tuned_unix},
              {"kernel_entries", best.kernel_entries},
              {"arch", best.arch},
              {"top_k", best.top_k}};
}

std::string encode_results(const std::vector<BestConfig>& results) {
  json list = json::array();
  for (const BestConfig& best : results) list.push_back(best_to_json(best));
  return json{{"results", list}}.dump();
}

// A stored value this version cannot read is reported and treated as holding no result.
std::vector<BestConfig> decode_results(std::string_view text) {
  try {
    const json stored = json::parse(text);
    std::vector<BestConfig> out;
    for (const json& j : stored.at("results"))
      out.push_back({named_from_json(j.at("config")), j.at("ms").get<double>(), named_from_json(j.at("tuned_shape")),
                     j.at("tuned_unix").get<int64_t>(), kernel_entries_from_json(j), j.at("arch").get<std::string>(),
                     j.at("top_k").get<int>()});
    return out;
  } catch (const json::exception& e) {
    log::warn("tuning database: a best-config entry cannot be read ({}); ignored", e.what());
    return {};
  }
}

// Where `candidate` goes among a bucket's results: in place of the same shape's result unless
// that one is faster (the same config built again fills in kernel entries an older record
// lacks), else added, the result tuned longest ago making way when the bucket is full. Returns
// whether `results` changed, and leaves what is stored for the shape in `candidate`.
bool merge_result(const TuningKey& key, std::vector<BestConfig>& results, BestConfig& candidate) {
  auto same_shape = std::find_if(results.begin(), results.end(),
                                 [&](const BestConfig& r) { return r.tuned_shape == candidate.tuned_shape; });
  if (same_shape == results.end()) {
    if (results.size() >= TuningDatabase::kShapesPerBucket) {
      auto oldest = std::min_element(results.begin(), results.end(), [](const BestConfig& a, const BestConfig& b) {
        return a.tuned_unix < b.tuned_unix;
      });
      log::warn("tuning database: {} holds results for {} shapes; the one for [{}] makes way for [{}]", key.str(),
                results.size(), oldest->tuned_shape.str(), candidate.tuned_shape.str());
      results.erase(oldest);
    }
    results.push_back(candidate);
    return true;
  }
  BestConfig& existing = *same_shape;
  const int top_k = std::max(existing.top_k, candidate.top_k);
  if (candidate.ms < existing.ms) {
    existing = candidate;
    existing.top_k = top_k;
    candidate = existing;
    return true;
  }
  const bool adds_entries = existing.config == candidate.config && existing.kernel_entries.empty() &&
                            !candidate.kernel_entries.empty();
  if (adds_entries) existing.kernel_entries = candidate.kernel_entries;
  const bool changed = adds_entries || existing.top_k != top_k;
  existing.top_k = top_k;
  candidate = existing;
  return changed;
}

std::optional<TrialRecord> decode_trial(std::string_view text) {
  try {
    json j = json::parse(text);
    std::string status = j.at("status").get<std::string>();
    for (TrialStatus s : kStatuses)
      if (status == trial_status_name(s))
        return TrialRecord{s,
                           j.at("ms").get<double>(),
                           j.at("detail").get<std::string>(),
                           kernel_entries_from_json(j),
                           j.value("owner", std::string()),
                           j.value("ended_before", 0)};
    log::warn("tuning database: a trial entry has the unknown status '{}'; ignored", status);
  } catch (const json::exception& e) {
    log::warn("tuning database: a trial entry cannot be read ({}); ignored", e.what());
  }
  return std::nullopt;
}

std::string encode_trial(const TrialRecord& record) {
  json j{{"status", trial_status_name(record.status)},
         {"ms", record.ms},
         {"detail", record.detail},
         {"kernel_entries", record.kernel_entries}};
  if (record.status == TrialStatus::running) j["owner"] = record.owner, j["ended_before"] = record.ended_before;
  return j.dump();
}

std::string trial_label(const TuningKey& key, const ProblemShape& shape, const Config& config) {
  return fmt::format("autotune {} {} [{}] trial {}", key.op, key.device.arch, shape.str(), config.str());
}

int64_t now_unix() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

const char* trial_status_name(TrialStatus status) {
  switch (status) {
    case TrialStatus::ok: return "ok";
    case TrialStatus::wrong: return "wrong";
    case TrialStatus::launch_failed: return "launch failed";
    case TrialStatus::compile_failed: return "compile failed";
    case TrialStatus::over_limits: return "over limits";
    case TrialStatus::running: return "running";
  }
  return "?";
}

DeviceFingerprint DeviceFingerprint::of(const DeviceInfo& device) { return {device.name, device.arch, device.sm_count}; }

std::string DeviceFingerprint::str() const { return fmt::format("{}, {}, {} SMs", name, arch, sm_count); }

TuningKey TuningKey::of(const TunableKernel& op, const ProblemShape& shape, const DeviceInfo& device) {
  return {op.name, op.bucketing.bucket(op.checked_shape(shape)), op.dtypes, op.layout, DeviceFingerprint::of(device),
          tilejit::tilejit_version()};
}

std::string TuningKey::str() const {
  return fmt::format("{} [{}] {} {} on {}, tilejit {}", op, bucket.str(), dtypes, layout, device.str(), tilejit_version);
}

TuningDatabase::TuningDatabase(KernelCache& cache) : cache_(cache) {}

TuningDatabase& TuningDatabase::global() {
  static TuningDatabase db(KernelCache::global());
  return db;
}

std::vector<BestConfig> TuningDatabase::results(const TuningKey& key) const {
  auto value = cache_.get(best_entry_key(key));
  if (!value) return {};
  return decode_results(**value);
}

std::optional<BestConfig> TuningDatabase::best(const TuningKey& key, const ProblemShape& shape) const {
  for (BestConfig& result : results(key))
    if (result.tuned_shape == shape) return std::move(result);
  return std::nullopt;
}

BestConfig TuningDatabase::offer_best(const TuningKey& key, const BestConfig& candidate) {
  BestConfig stored = candidate;
  if (stored.tuned_unix == 0) stored.tuned_unix = now_unix();
  stored.arch = key.device.arch;
  bool changed = false;
  bool written = cache_.update(best_entry_key(key), best_label(key),
                               [&](std::optional<std::string_view> current) -> std::optional<std::string> {
                                 std::vector<BestConfig> results =
                                     current ? decode_results(*current) : std::vector<BestConfig>{};
                                 if (!merge_result(key, results, stored)) return std::nullopt;
                                 changed = true;
                                 return encode_results(results);
                               });
  if (changed) count_unless_stored(written);
  return stored;
}

std::optional<TrialRecord> TuningDatabase::trial(const TuningKey& key, const ProblemShape& shape,
                                                 const Config& config) const {
  auto value = cache_.get(trial_entry_key(key, shape, config));
  if (!value) return std::nullopt;
  return decode_trial(**value);
}

void TuningDatabase::record_trial(const TuningKey& key, const ProblemShape& shape, const Config& config,
                                  const TrialRecord& record) {
  count_unless_stored(cache_.put(trial_entry_key(key, shape, config), trial_label(key, shape, config), encode_trial(record)));
}

std::optional<TrialRecord> TuningDatabase::update_trial(const TuningKey& key, const ProblemShape& shape,
                                                        const Config& config, const TrialChange& change) {
  std::optional<TrialRecord> after;
  bool changed = false;
  const bool written = cache_.update(trial_entry_key(key, shape, config), trial_label(key, shape, config),
                                     [&](std::optional<std::string_view> current) -> std::optional<std::string> {
                                       after.reset();
                                       if (current) after = decode_trial(*current);
                                       std::optional<TrialRecord> replacement = change(after);
                                       if (!replacement) return std::nullopt;
                                       after = replacement;
                                       changed = true;
                                       return encode_trial(*replacement);
                                     });
  if (changed) count_unless_stored(written);
  return after;
}

// A disabled cache stores nothing by request; only a failed write counts.
void TuningDatabase::count_unless_stored(bool stored) {
  if (!stored && cache_.enabled()) ++unstored_writes_;
}

void TuningDatabase::for_each_best(
    const std::function<void(const std::string& key, const BestConfig& best)>& visit) const {
  cache_.for_each_entry([&](const CacheEntryInfo& info, const std::string& value) {
    if (!is_best_label(info.label)) return;
    for (const BestConfig& best : decode_results(value)) visit(info.key, best);
  });
}

}  // namespace tilejit::autotune
