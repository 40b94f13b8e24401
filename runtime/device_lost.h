// The error of a device that can no longer be used in this process: a CUDA context after a
// kernel fault (an illegal address, a trap, ...), where every later call fails the same way
// until the process ends. Work that runs many kernels in turn (the tuner) stops at it rather
// than blaming the kernels after the one that faulted.
#pragma once

#include "dsl/error.h"

namespace tilejit {

class DeviceLost : public Error {
 public:
  using Error::Error;
};

}  // namespace tilejit
