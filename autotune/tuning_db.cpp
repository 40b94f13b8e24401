#include "autotune/tuning_db.h"

#include <chrono>

#include <nlohmann/json.hpp>

#include "dsl/log.h"
#include "runtime/version.h"

namespace tilejit::autotune {
namespace {

using nlohmann::json;

constexpr TrialStatus kStatuses[] = {TrialStatus::ok, TrialStatus::wrong, TrialStatus::launch_failed,
                                     TrialStatus::compile_failed, TrialStatus::over_limits};

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

std::string best_entry_key(const TuningKey& key) { return cache_key({"autotune best", key.str()}); }

std::string trial_entry_key(const TuningKey& key, const ProblemShape& shape, const Config& config) {
  return cache_key({"autotune trial", key.str(), shape.str(), config.str()});
}

// Entries a record's kernels were built into; records written before there were any have none.
std::vector<std::string> kernel_entries_from_json(const json& j) {
  return j.contains("kernel_entries") ? j.at("kernel_entries").get<std::vector<std::string>>()
                                      : std::vector<std::string>{};
}

std::string best_label(const TuningKey& key) {
  return fmt::format("autotune {} {} [{}] best", key.op, key.device.arch, key.bucket.str());
}
bool is_best_label(std::string_view label) { return label.starts_with("autotune ") && label.ends_with("] best"); }

std::string encode_best(const BestConfig& best) {
  return json{{"config", named_to_json(best.config)},
              {"ms", best.ms},
              {"tuned_shape", named_to_json(best.tuned_shape)},
              {"tuned_unix", best.tuned_unix},
              {"kernel_entries", best.kernel_entries},
              {"arch", best.arch}}
      .dump();
}

// A stored value this version cannot read is reported and treated as absent.
std::optional<BestConfig> decode_best(std::string_view text) {
  try {
    json j = json::parse(text);
    return BestConfig{named_from_json(j.at("config")), j.at("ms").get<double>(), named_from_json(j.at("tuned_shape")),
                      j.at("tuned_unix").get<int64_t>(), kernel_entries_from_json(j), j.value("arch", "")};
  } catch (const json::exception& e) {
    log::warn("tuning database: a best-config entry cannot be read ({}); ignored", e.what());
    return std::nullopt;
  }
}

std::optional<TrialRecord> decode_trial(std::string_view text) {
  try {
    json j = json::parse(text);
    std::string status = j.at("status").get<std::string>();
    for (TrialStatus s : kStatuses)
      if (status == trial_status_name(s))
        return TrialRecord{s, j.at("ms").get<double>(), j.at("detail").get<std::string>(),
                           kernel_entries_from_json(j)};
    log::warn("tuning database: a trial entry has the unknown status '{}'; ignored", status);
  } catch (const json::exception& e) {
    log::warn("tuning database: a trial entry cannot be read ({}); ignored", e.what());
  }
  return std::nullopt;
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

std::optional<BestConfig> TuningDatabase::best(const TuningKey& key) const {
  auto value = cache_.get(best_entry_key(key));
  if (!value) return std::nullopt;
  return decode_best(**value);
}

BestConfig TuningDatabase::offer_best(const TuningKey& key, const BestConfig& candidate) {
  BestConfig stored = candidate;
  if (stored.tuned_unix == 0) stored.tuned_unix = now_unix();
  stored.arch = key.device.arch;
  cache_.update(best_entry_key(key), best_label(key), [&](std::optional<std::string_view> current) -> std::optional<std::string> {
    // Times of two shapes of a bucket do not compare (a smaller shape runs faster whatever
    // its config): a result for another shape replaces the stored one. A shape of a bucket is
    // tuned only where the stored config does not serve it (choose_config, `tilejit tune`).
    if (current)
      if (auto existing = decode_best(*current);
          existing && existing->tuned_shape == stored.tuned_shape && existing->ms <= stored.ms) {
        // The same config built again names the kernel entries a record from before they were
        // kept lacks.
        const bool adds_entries = existing->config == stored.config && existing->kernel_entries.empty() &&
                                  !stored.kernel_entries.empty();
        if (adds_entries) existing->kernel_entries = stored.kernel_entries;
        stored = *existing;
        return adds_entries ? std::optional<std::string>(encode_best(stored)) : std::nullopt;
      }
    return encode_best(stored);
  });
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
  std::string label = fmt::format("autotune {} {} [{}] trial {}", key.op, key.device.arch, shape.str(), config.str());
  std::string value = json{{"status", trial_status_name(record.status)},
                            {"ms", record.ms},
                            {"detail", record.detail},
                            {"kernel_entries", record.kernel_entries}}
                          .dump();
  cache_.put(trial_entry_key(key, shape, config), label, std::move(value));
}

void TuningDatabase::for_each_best(
    const std::function<void(const std::string& key, const BestConfig& best)>& visit) const {
  cache_.for_each_entry([&](const CacheEntryInfo& info, const std::string& value) {
    if (!is_best_label(info.label)) return;
    if (auto best = decode_best(value)) visit(info.key, *best);
  });
}

}  // namespace tilejit::autotune
