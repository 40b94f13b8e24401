#include "autotune/config_choice.h"

#include <cstdlib>
#include <cstring>
#include <random>

#include "autotune/device_runner.h"
#include "dsl/log.h"

namespace tilejit::autotune {

bool fits(const TunableKernel& op, const Config& config, const ProblemShape& shape) {
  std::vector<std::string> names;
  for (auto& [name, value] : config.values) names.push_back(name);
  return names == op.space.constants() && !op.space.violated(config, shape);
}

const char* config_source_name(ConfigSource source) {
  switch (source) {
    case ConfigSource::database: return "tuning database";
    case ConfigSource::tuned_now: return "tuned now";
    case ConfigSource::heuristic: return "heuristic";
  }
  return "?";
}

bool autotune_on_first_use() {
  const char* value = std::getenv("TILEJIT_AUTOTUNE");
  return value && *value && std::strcmp(value, "0") != 0;
}

ConfigChoice choose_config(const TunableKernel& op, const ProblemShape& requested_shape, Device& device,
                           TuningDatabase& db, const TuneOptions& options) {
  ProblemShape shape = op.checked_shape(requested_shape);
  TuningKey key = TuningKey::of(op, shape, device.info());
  if (auto best = db.best(key)) {
    if (fits(op, best->config, shape)) return {best->config, ConfigSource::database};
    log::debug("autotune {}: the stored config {} does not fit [{}]", op.name, best->config.str(), shape.str());
  }
  if (autotune_on_first_use()) {
    auto runner = make_candidate_runner(op, shape, device, TimingOptions::for_device(device.info()), std::random_device{}());
    TuneResult result = tune(op, shape, *runner, db, options);
    if (result.best && fits(op, result.best->config, shape)) return {result.best->config, ConfigSource::tuned_now};
    log::warn("autotune {} [{}]: tuning found no config that runs; using the heuristic", op.name, shape.str());
  }
  return {op.heuristic_config(shape, device.info()), ConfigSource::heuristic};
}

}  // namespace tilejit::autotune
