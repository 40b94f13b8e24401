// Which problem shapes share one tuning result. Tuning every distinct shape is wasteful and
// a cache keyed by exact shapes rarely hits, so each dimension is rounded to its bucket: the
// next power of two (the usual rule: batch sizes, sequence lengths), up to a multiple, or
// kept exact (a head dimension, which changes the kernel). Dimensions without a rule are exact.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autotune/named_values.h"

namespace tilejit::autotune {

class ShapeBucketing {
 public:
  ShapeBucketing& power_of_two(std::string dim);
  ShapeBucketing& multiple_of(std::string dim, int64_t step);
  ShapeBucketing& exact(std::string dim);

  // The bucket `shape` falls in, as a shape: each dimension rounded up by its rule.
  ProblemShape bucket(const ProblemShape& shape) const;

 private:
  struct Rule {
    std::string dim;
    int64_t step;  // 0: next power of two; 1: exact; otherwise round up to a multiple
  };
  std::vector<Rule> rules_;
};

// The smallest power of two >= value (1 for value <= 1).
int64_t next_power_of_two(int64_t value);

}  // namespace tilejit::autotune
