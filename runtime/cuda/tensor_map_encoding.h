// Internal to runtime/cuda: the CUtensorMap of a TensorDescriptor, encoded by the driver
// (cuTensorMapEncodeTiled) with the box the code generator copies blocks in (codegen/tma_box.h).
#pragma once

#include "runtime/tensor_descriptor.h"

namespace tilejit::cuda {

TensorMap encode_tiled_tensor_map(const TensorDescriptor& descriptor, int row_slices);

}  // namespace tilejit::cuda
