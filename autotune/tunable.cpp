#include "autotune/tunable.h"

#include <fmt/ranges.h>

#include <map>
#include <memory>
#include <mutex>

#include "dsl/error.h"

namespace tilejit::autotune {

ProblemShape TunableKernel::checked_shape(const ProblemShape& shape) const {
  ProblemShape out;
  for (const std::string& dim : dims) {
    if (!shape.has(dim)) fail("{}: shape '{}' lacks dimension {} (the op's dimensions: {})", name, shape.str(), dim,
                              fmt::join(dims, " "));
    // Below 2^48: a bucket rounds a dim up (to a power of two, a multiple) without overflow.
    if (shape[dim] < 1 || shape[dim] >= (int64_t{1} << 48))
      fail("{}: shape '{}': {} must be in [1, 2^48)", name, shape.str(), dim);
    out.values.emplace_back(dim, shape[dim]);
  }
  if (shape.values.size() != dims.size())
    fail("{}: shape '{}' has dimensions the op does not (the op's dimensions: {})", name, shape.str(),
         fmt::join(dims, " "));
  return out;
}

Config TunableKernel::heuristic_config(const ProblemShape& shape, const DeviceInfo& device) const {
  if (heuristic) return heuristic(shape, device);
  dsl::Constants declared = kernel().constants();
  Config out;
  for (const std::string& constant : space.constants()) out.values.emplace_back(constant, declared[constant]);
  return out;
}

const TunableKernel& tunable_for(const std::string& key, const std::function<TunableKernel()>& make) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<TunableKernel>> tunables;
  std::lock_guard lock(mutex);
  std::unique_ptr<TunableKernel>& op = tunables[key];
  if (!op) op = std::make_unique<TunableKernel>(make());
  return *op;
}

}  // namespace tilejit::autotune
