// Which rows (or keys) a tuning candidate's output is checked at: a few spread over the
// problem, so the host reference stays cheap, at varying offsets within their stretch, so
// they fall at every position of a kernel's tile (every warp's rows) rather than at its start.
#pragma once

#include <cstdint>
#include <vector>

namespace tilejit::ops {

// Up to `count` distinct increasing indices of [0, n): the last is n - 1, the first (of two or
// more) 0, and index i lies in its stretch [i * n / count, (i + 1) * n / count), at offsets that step by
// an odd amount, so for stretches a power of two long they pass through every residue.
std::vector<int64_t> sampled_indices(int64_t n, int64_t count);

}  // namespace tilejit::ops
