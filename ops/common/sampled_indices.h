// Which rows (or keys) a tuning candidate's output is checked at: a few spread over the
// problem, so the host reference stays cheap, at varying offsets within their stretch, so that
// over a large problem they fall at many positions of a kernel's tile (the rows of its later
// warps too), not always at its start.
#pragma once

#include <cstdint>
#include <vector>

namespace tilejit::ops {

// min(n, count) distinct increasing indices of [0, n) (none for n <= 0): index i lies in its
// stretch [i * n / c, (i + 1) * n / c) with c = min(n, count), at an offset that steps by an
// amount prime to the stretch's length; the last index is n - 1.
std::vector<int64_t> sampled_indices(int64_t n, int64_t count);

}  // namespace tilejit::ops
