// Internal to ops/collectives: the element-wise reduction the emulated ranks compute on the
// host. Floating-point formats accumulate in f32 over the inputs in the order given and round
// once; max and min take the operand that is not NaN (fmax / fmin, as NCCL's f32 ones do). i32
// sums wrap, and an i32 average is the wrapped sum divided by the count, truncated toward zero,
// as NCCL computes it.
#pragma once

#include <cstddef>
#include <vector>

#include "dsl/dtype.h"
#include "ops/collectives.h"

namespace tilejit::ops {

// out[i] = op over j of inputs[j][offset + i], for i < count (offsets and counts in elements).
// `out` may be inputs[j] + offset for one j (every element is read before it is written).
void reduce_elements(DType dtype, ReduceOp op, const std::vector<const void*>& inputs, size_t offset, size_t count,
                     void* out);

// Throws unless reductions support `dtype` (f32, f16, bf16, i32), naming the op.
void check_reduction_dtype(DType dtype, const char* op);

}  // namespace tilejit::ops
