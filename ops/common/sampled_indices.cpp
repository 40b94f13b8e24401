#include "ops/common/sampled_indices.h"

#include <algorithm>

namespace tilejit::ops {

std::vector<int64_t> sampled_indices(int64_t n, int64_t count) {
  const int64_t c = std::min(n, count);
  std::vector<int64_t> out;
  for (int64_t i = 0; i < c; ++i) {
    const int64_t start = i * n / c, length = (i + 1) * n / c - start;
    out.push_back(start + i * 41 % length);  // 41: odd, and no small divisor of a tile size
  }
  if (c > 0) out.back() = n - 1;
  return out;
}

}  // namespace tilejit::ops
