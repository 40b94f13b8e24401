// Whether tensors' memory may overlap, for ops that must not write what they read. Exact for
// the layouts ops meet (dense tensors, and views that keep to rows of a common stride, such
// as column blocks of one matrix); for others, a "may" errs toward overlap. A tensor spans
// less than 2^62 bytes (Tensor::from_dlpack refuses more), so the byte arithmetic cannot
// overflow.
#pragma once

#include "runtime/tensor.h"

namespace tilejit::ops {

// Whether some element of `a` and some element of `b` may share a byte.
bool may_overlap(const Tensor& a, const Tensor& b);

// Whether two elements of `t` may share an address: unless, from the smallest stride up, each
// stride steps past what the dims inside it span.
bool may_overlap_itself(const Tensor& t);

}  // namespace tilejit::ops
