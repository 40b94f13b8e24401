// scaled_dot's arguments checked and sorted (SEMANTICS.md, "scaled_dot"): dtypes, devices and
// ranks, the dimension numbers (jax's default filled in, negative dims normalized), the paired
// sizes, each scale's shape against its operand, and every operand dim placed in one of three
// groups (batch, free, contracting) in the order the product pairs them.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/common/op_arguments.h"
#include "ops/scaled_dot.h"

namespace tilejit::ops::scaled_dot_detail {

// One operand's dims by role: batch and contracting dims in the order they pair with the
// other operand's, free dims in increasing order (the output's order).
struct OperandGroups {
  std::vector<int> batch, free, contracting;
};

struct ScaledDotDims {
  OperandGroups lhs, rhs;
  std::vector<int64_t> out_shape;  // batch dims, lhs's free dims, rhs's free dims
};

// Throws through `args` (every message names the offending dims and tensors).
ScaledDotDims check_scaled_dot(const OpArguments& args, const Tensor& lhs, const Tensor& rhs, const Tensor* lhs_scale,
                               const Tensor* rhs_scale, const ScaledDotOptions& options);

}  // namespace tilejit::ops::scaled_dot_detail
