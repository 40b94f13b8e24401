#include "ops/common/sampled_indices.h"

#include <algorithm>

namespace tilejit::ops {

std::vector<int64_t> sampled_indices(int64_t n, int64_t count) {
  const int64_t c = std::max<int64_t>(0, std::min(n, count));
  std::vector<int64_t> out;
  for (int64_t i = 0; i < c; ++i) {
    const int64_t start = i * n / c, length = (i + 1) * n / c - start;
    // Primes that no tile size (a power of two) shares: stretches of a power-of-two length
    // meet every residue.
    const int64_t step = length % 41 != 0 ? 41 : 43;
    out.push_back(start + i * step % length);
  }
  if (c > 0) out.back() = n - 1;
  return out;
}

}  // namespace tilejit::ops
