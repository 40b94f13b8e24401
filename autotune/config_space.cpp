#include "autotune/config_space.h"

#include "dsl/error.h"

namespace tilejit::autotune {

ConfigSpace& ConfigSpace::add(std::string constant, std::vector<int64_t> candidates) {
  if (candidates.empty()) fail("config space: constant {} has no candidate values", constant);
  for (auto& [name, values] : parameters_)
    if (name == constant) fail("config space: constant {} is declared twice", constant);
  parameters_.emplace_back(std::move(constant), std::move(candidates));
  return *this;
}

ConfigSpace& ConfigSpace::require(std::string description, Predicate holds) {
  constraints_.push_back({std::move(description), std::move(holds)});
  return *this;
}

ConfigSpace& ConfigSpace::require_divides(const std::string& constant, const std::string& dim) {
  return require(fmt::format("{} divides {}", constant, dim), [constant, dim](const Config& c, const ProblemShape& s) {
    return c[constant] > 0 && s[dim] % c[constant] == 0;
  });
}

std::vector<Config> ConfigSpace::configs() const {
  std::vector<Config> out(1);
  for (auto& [name, candidates] : parameters_) {
    std::vector<Config> next;
    next.reserve(out.size() * candidates.size());
    for (const Config& prefix : out)
      for (int64_t value : candidates) {
        Config config = prefix;
        config.values.emplace_back(name, value);
        next.push_back(std::move(config));
      }
    out = std::move(next);
  }
  return out;
}

size_t ConfigSpace::size() const {
  size_t n = 1;
  for (auto& [name, candidates] : parameters_) n *= candidates.size();
  return n;
}

std::optional<std::string> ConfigSpace::violated(const Config& config, const ProblemShape& shape) const {
  for (const Constraint& c : constraints_)
    if (!c.holds(config, shape)) return c.description;
  return std::nullopt;
}

std::vector<std::string> ConfigSpace::constants() const {
  std::vector<std::string> out;
  for (auto& [name, candidates] : parameters_) out.push_back(name);
  return out;
}

}  // namespace tilejit::autotune
