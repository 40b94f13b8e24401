// CUDA GPUs as tilejit devices, through the Driver API (runtime/cuda/driver_api.h) on each
// GPU's primary context, the one the CUDA runtime uses too, so buffers and streams pass
// between tilejit and other CUDA code. Kernels come from the kernel cache, else are compiled
// (runtime/cuda/cuda_compile.h).
#pragma once

#include "runtime/device.h"

namespace tilejit {

// CUDA device `ordinal`, created on first use and kept for the process. Throws tilejit::Error
// without a driver, for an ordinal with no GPU, or for a GPU tilejit has no target for.
Device& cuda_device(int ordinal);

// The number of CUDA devices: 0 without a driver or GPU. Never throws.
int cuda_device_count();

}  // namespace tilejit
