// A tensor of scaled_dot (an operand or a scale) as its kernel reads it: three strided dims,
// each the merge of one group of the tensor's dims (batch, then free / contracting in the order
// the kernel wants), so any dimension numbers become one (batch, rows, cols) problem.
//
// A group merges when its dims are nested in memory in the group's order (each dim's stride is
// the next one's stride times its size; dims of size 1 do not count): then the view is the
// tensor itself with the merged strides, and nothing is copied. Otherwise (free dims that
// interleave with contracting dims, batch dims in another order than memory's, ...) the tensor
// is copied once into a contiguous tensor ordered group by group (gather_copy.h), which merges.
// Only quantized data and scales are copied, never dequantized values.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "runtime/tensor.h"

namespace tilejit::ops::scaled_dot_detail {

struct GroupedView {
  Tensor storage;  // the tensor itself, or its grouped copy; the kernel reads storage.data()
  std::array<int64_t, 3> size{}, stride{};
  bool copied = false;
};

// `groups` lists every dim of `t` once. `repeat` (empty, or one entry per dim of t, >= 1)
// widens dim d to t.dim(d) * repeat[d] by repeating each element repeat[d] times, which takes a
// copy when any entry exceeds 1.
GroupedView grouped_view(const Tensor& t, const std::array<std::vector<int>, 3>& groups,
                         const std::vector<int64_t>& repeat, Stream& stream);

}  // namespace tilejit::ops::scaled_dot_detail
