// The tuner's view of a tunable op's space on a GPU nobody has here: the configs that meet the
// space's constraints, ranked by the cost model as the tuner ranks them.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "autotune/cost_model.h"
#include "autotune/tunable.h"
#include "runtime/device.h"

namespace tjops {

// A GPU of `arch` with `sms` multiprocessors, as the cost model sees it.
inline tilejit::DeviceInfo model_gpu(const char* arch, int sms) {
  tilejit::DeviceInfo d = tilejit::Device::by_name(std::string("emu:") + arch).info();
  d.kind = tilejit::DeviceKind::cuda, d.sm_count = sms;
  return d;
}

// `op`'s configs for `shape` that meet the space's constraints, cheapest estimate on `device`
// first (ties keep the space's order).
inline std::vector<std::pair<double, tilejit::autotune::Config>> model_ranking(
    const tilejit::autotune::TunableKernel& op, const tilejit::autotune::ProblemShape& shape,
    const tilejit::DeviceInfo& device) {
  std::vector<std::pair<double, tilejit::autotune::Config>> ranked;
  for (const tilejit::autotune::Config& c : op.space.configs())
    if (!op.space.violated(c, shape))
      ranked.emplace_back(tilejit::autotune::estimate_ms(op.work(c, shape, device), device), c);
  std::stable_sort(ranked.begin(), ranked.end(), [](auto& a, auto& b) { return a.first < b.first; });
  return ranked;
}

}  // namespace tjops
