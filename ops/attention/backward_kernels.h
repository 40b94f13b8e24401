// The attention backward kernels, in launch order (flash-attention style):
//
// 1. rows (backward_rows_kernel.cpp): per query row, delta = rowsum(dout * out) and the
//    row statistics (row_base, row_offset) with which p = exp(logits - row_base) * 2^-row_offset;
//    per head, whether it has rows near masked_logit (close_rows, zeroed before).
// 2. dkdv (dkdv_kernel.cpp): per block of keys of one kv head, dk and dv summed over the
//    head's query heads and every block of queries.
// 3. dq (dq_kernel.cpp): per block of queries, dq over the blocks of keys.
//
// With the fused config (KernelConfig::fuse_dq), dkdv also sums dq into an f32 workspace
// (zeroed before) by atomic adds, and dq_from_sum (dq_from_sum_kernel.cpp) takes the place of
// dq: it scales the sums and casts them to dq's dtype.
//
// Each kernel reads the arguments of its *_arguments function.
#pragma once

#include <vector>

#include "dsl/kernel.h"
#include "ops/attention/kernel_arguments.h"
#include "ops/attention/launch.h"

namespace tilejit::ops::attention_detail {

// Grid: (batch, query head, BLOCK_M query block), blocks fastest.
dsl::Kernel backward_rows_kernel(DType dtype, std::vector<ir::Param> params);
// Grid: (batch, kv head, BLOCK_N key block), blocks fastest. It sums dq too where `params`
// have dq_sum, under the name dkdv_kernel_name(true).
dsl::Kernel dkdv_kernel(DType dtype, std::vector<ir::Param> params);
const char* dkdv_kernel_name(bool sums_dq);
// Grid: (batch, query head, BLOCK_M query block), blocks fastest.
dsl::Kernel dq_kernel(DType dtype, std::vector<ir::Param> params);
// Grid: one program per BLOCK elements of dq.
dsl::Kernel dq_from_sum_kernel(DType dtype, std::vector<ir::Param> params);

// The common arguments, q, k, v, out, dout, lse, the f32 row_stats workspace (row_base,
// row_offset and delta; launch.h), the i32 (B, N) flags close_rows, and the kernel's outputs
// (dk and dv, and with config.fuse_dq the f32 dq_sum; or dq).
// The operands dk / dv reads in blocks along its loop (q, and dout where there are no query
// lengths) and those dq does (k and v) are descriptors where `device` and the layout allow
// (sequence_descriptor), with `config`'s blocks.
NamedArguments rows_arguments(const AttentionProblem& p, const BackwardBuffers& buffers);
NamedArguments dkdv_arguments(const AttentionProblem& p, const KernelConfig& config, const DeviceInfo& device,
                              const BackwardBuffers& buffers);
NamedArguments dq_arguments(const AttentionProblem& p, const KernelConfig& config, const DeviceInfo& device,
                            const BackwardBuffers& buffers);
// dq_sum, dq, their element count and the scale.
NamedArguments dq_from_sum_arguments(const AttentionProblem& p, const BackwardBuffers& buffers);

}  // namespace tilejit::ops::attention_detail
