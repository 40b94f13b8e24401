// The arguments of the attention kernels, built on the host from a checked problem. Every
// kernel takes the common ones (sizes, scale, and whichever of the band, sequence lengths,
// bias and mask the call has) plus its own operands, by name (ops/common/named_arguments.h);
// the features the common ones carry are part of each kernel's memo key.
#pragma once

#include <optional>
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
// A descriptor of (batch, sequence, head, H) operand `t` of `p` (`length` rows per sequence,
// `heads` heads) viewed as (batch, head, sequence, H), for kernels that read blocks of
// `block_rows` rows by HEAD_CHUNK (`head_chunk`) columns of one (batch, head): rows past the
// sequence and columns past H read zeros. There is one where the device copies blocks by TMA
// (sm_90+), the operands are 16-bit (the tensor cores read them from shared memory) and the
// layout allows one (16-byte aligned data and strides).
std::optional<TensorDescriptor> sequence_descriptor(const AttentionProblem& p, const Tensor& t,
                                                    const SequenceStrides& strides, int64_t length, int64_t heads,
                                                    int64_t block_rows, int64_t head_chunk, const DeviceInfo& device);
// The operand through `descriptor` where there is one, else as add_sequence_operand.
void add_sequence_blocks(NamedArguments& args, const std::string& name, const Tensor& t,
                         const SequenceStrides& strides, std::optional<TensorDescriptor> descriptor);

// The strides of a contiguous tensor of shape `shape` ((B, T, N, H) or (T, N, H)).
SequenceStrides contiguous_sequence_strides(const std::vector<int64_t>& shape);

// Names what common_arguments' parameters depend on: dtypes and which options are present.
std::string features_key(const AttentionProblem& p);

}  // namespace tilejit::ops::attention_detail
