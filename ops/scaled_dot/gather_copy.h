// A strided gather into a contiguous tensor, as a DSL kernel: the fallback that brings an
// operand of scaled_dot into the dim order its kernel reads when the operand's strides cannot be
// merged, and that repeats scale elements along contracting dims that cannot stay blocked
// (ops/scaled_dot/grouped_view.h). Any dtype, any bits (NaN payloads included).
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/tensor.h"

namespace tilejit::ops::scaled_dot_detail {

// dst[i_0, ..., i_{r-1}] = src.data()[sum_d (i_d / repeat[d]) * src_strides[d]] for every index
// of the contiguous `dst` (rank r; src_strides and repeat have r entries, repeat >= 1).
void gather_copy(const Tensor& src, const std::vector<int64_t>& src_strides, const std::vector<int64_t>& repeat,
                 const Tensor& dst, Stream& stream);

}  // namespace tilejit::ops::scaled_dot_detail
