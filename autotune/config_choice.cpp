#include "autotune/config_choice.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

#include "autotune/device_runner.h"
#include "dsl/log.h"

namespace tilejit::autotune {

bool fits(const TunableKernel& op, const Config& config, const ProblemShape& shape) {
  return config.names() == op.space.constants() && !op.space.violated(config, shape);
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

std::optional<BestConfig> result_serving(const TunableKernel& op, const ProblemShape& shape,
                                         const std::vector<BestConfig>& results) {
  auto distance = [&](const ProblemShape& tuned) {
    double sum = 0;
    for (auto& [name, extent] : shape.values)
      sum += std::abs(std::log2(double(std::max<int64_t>(extent, 1))) -
                      std::log2(double(std::max<int64_t>(tuned[name], 1))));
    return sum;
  };
  std::optional<BestConfig> nearest;
  double nearest_distance = 0;
  for (const BestConfig& result : results) {  // oldest first: a tie goes to the newer
    if (result.tuned_shape.names() != shape.names() || !fits(op, result.config, shape)) continue;
    double d = distance(result.tuned_shape);
    if (!nearest || d <= nearest_distance) {
      nearest = result;
      nearest_distance = d;
    }
  }
  return nearest;
}

ConfigChoice choose_config(const TunableKernel& op, const ProblemShape& requested_shape, Device& device,
                           TuningDatabase& db, const TuneOptions& options, bool may_tune) {
  ProblemShape shape = op.checked_shape(requested_shape);
  TuningKey key = TuningKey::of(op, shape, device.info());
  if (auto stored = result_serving(op, shape, db.results(key))) return {stored->config, ConfigSource::database};
  if (may_tune) {
    auto runner = make_candidate_runner(op, shape, device, TimingOptions::for_device(device.info()), std::random_device{}());
    TuneResult result = tune(op, shape, *runner, db, options);
    if (result.best && fits(op, result.best->config, shape)) return {result.best->config, ConfigSource::tuned_now};
    log::warn("autotune {} [{}]: tuning found no config that runs; using the heuristic", op.name, shape.str());
  }
  return {op.heuristic_config(shape, device.info()), ConfigSource::heuristic};
}

}  // namespace tilejit::autotune
