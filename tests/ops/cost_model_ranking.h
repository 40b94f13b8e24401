// The tuner's view of a tunable op's space on a GPU nobody has here.
#pragma once

#include <string>

#include "runtime/device.h"

namespace tjops {

// A GPU of `arch` with `sms` multiprocessors, as the cost model sees it.
inline tilejit::DeviceInfo model_gpu(const char* arch, int sms) {
  tilejit::DeviceInfo d = tilejit::Device::by_name(std::string("emu:") + arch).info();
  d.kind = tilejit::DeviceKind::cuda, d.sm_count = sms;
  return d;
}

}  // namespace tjops
