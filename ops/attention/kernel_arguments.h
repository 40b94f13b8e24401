// The arguments of the attention kernels, built on the host from a checked problem. Every
// kernel takes the common ones (sizes, scale, and whichever of the band, sequence lengths,
// bias and mask the call has) plus its own operands, by name (ops/common/named_arguments.h);
// the features the common ones carry are part of each kernel's memo key.
#pragma once

#include <string>

#include "ops/attention/problem.h"
#include "ops/common/named_arguments.h"

namespace tilejit::ops::attention_detail {

// Sizes T, S, N, G (heads per kv head), the scale, and the optional masks and bias (the head
// dim is the kernels' constant HEAD_DIM).
NamedArguments common_arguments(const AttentionProblem& p);

// A (batch, sequence, head, H) operand: its pointer `name` and its strides name_batch,
// name_seq and name_head.
void add_sequence_operand(NamedArguments& args, const std::string& name, const Tensor& t,
                          const SequenceStrides& strides);
// The strides of a contiguous tensor of shape `shape` ((B, T, N, H) or (T, N, H)).
SequenceStrides contiguous_sequence_strides(const std::vector<int64_t>& shape);

// Names what common_arguments' parameters depend on: dtypes and which options are present.
std::string features_key(const AttentionProblem& p);

}  // namespace tilejit::ops::attention_detail
