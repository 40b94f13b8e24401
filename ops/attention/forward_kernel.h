// The fused attention forward kernel (forward_kernel.cpp) and its arguments.
#pragma once

#include <vector>

#include "dsl/kernel.h"
#include "ops/attention/config.h"
#include "ops/attention/kernel_arguments.h"

namespace tilejit::ops::attention_detail {

// Grid: one program per BLOCK_M query rows of each (batch, head), flattened, query blocks
// fastest. Writes out, and lse when the arguments have it. Its arguments for `config` on
// `device`: k and v through descriptors where the device copies their blocks by TMA.
dsl::Kernel forward_kernel(DType dtype, std::vector<ir::Param> params);
NamedArguments forward_arguments(const AttentionProblem& p, const KernelConfig& config, const DeviceInfo& device,
                                 const Tensor& out, const Tensor* lse);

}  // namespace tilejit::ops::attention_detail
