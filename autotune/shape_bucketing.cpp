#include "autotune/shape_bucketing.h"

#include "dsl/error.h"

namespace tilejit::autotune {

int64_t next_power_of_two(int64_t value) {
  int64_t p = 1;
  while (p < value) p <<= 1;
  return p;
}

ShapeBucketing& ShapeBucketing::power_of_two(std::string dim) {
  rules_.push_back({std::move(dim), 0});
  return *this;
}

ShapeBucketing& ShapeBucketing::multiple_of(std::string dim, int64_t step) {
  if (step < 1) fail("shape bucketing: {} must round to a positive multiple, got {}", dim, step);
  rules_.push_back({std::move(dim), step});
  return *this;
}

ShapeBucketing& ShapeBucketing::exact(std::string dim) {
  rules_.push_back({std::move(dim), 1});
  return *this;
}

ProblemShape ShapeBucketing::bucket(const ProblemShape& shape) const {
  ProblemShape out = shape;
  for (auto& [dim, extent] : out.values)
    for (const Rule& rule : rules_) {
      if (rule.dim != dim) continue;
      if (rule.step == 0) extent = next_power_of_two(extent);
      else extent = (extent + rule.step - 1) / rule.step * rule.step;
    }
  return out;
}

}  // namespace tilejit::autotune
