// Launches of the attention kernels into given outputs, with given configs: the public ops
// (forward.cpp, backward.cpp) allocate and call these; the library runs time them alone.
#pragma once

#include <optional>
#include <vector>

#include "ops/attention/config.h"
#include "ops/attention/problem.h"

namespace tilejit::ops::attention_detail {

// out: contiguous, q's dtype and shape; lse: contiguous f32 (B, N, T), or null.
void launch_forward(const AttentionProblem& p, const KernelConfig& config, const Tensor& out, const Tensor* lse,
                    Stream& stream);
// Builds (or finds built) the forward kernel that launch_forward runs; its compile report.
KernelReport prepare_forward(const AttentionProblem& p, const KernelConfig& config, const Tensor& out,
                             const Tensor* lse, Device& device);

// The backward's row statistics, one f32 workspace of (B * N, 3, workspace_rows(T)): for each
// head, row_base, row_offset and delta (backward_kernels.h) of its query rows, padded to a
// multiple of kWorkspaceRowsMultiple, which every config's BLOCK_M divides. The rows kernel
// writes the padding as rows of weight 0, so the loops over query blocks read whole blocks of
// statistics without bounds, all three from one base per head.
constexpr int64_t kWorkspaceRowsMultiple = 128;
int64_t workspace_rows(int64_t q_len);  // q_len rounded up to kWorkspaceRowsMultiple
std::vector<int64_t> row_stats_shape(const AttentionProblem& p);

struct BackwardBuffers {
  Tensor out, dout, lse;  // the caller's (checked) forward output, its gradient, logsumexp
  SequenceStrides out_strides, dout_strides;
  Tensor row_stats;   // f32, row_stats_shape(p)
  Tensor close_rows;  // i32 (B, N): whether a head has rows near masked_logit
  Tensor dq, dk, dv;  // contiguous outputs
  // f32, dq's shape: the sums of dq for a dk / dv config that fuses them (fuse_dq).
  std::optional<Tensor> dq_sum;
};
// The buffers of a backward pass of `p` beside the forward's results: the workspaces from
// `stream`'s scratch space (dq_sum where `sums_dq`), the gradients allocated.
BackwardBuffers backward_buffers(const AttentionProblem& p, const Tensor& out, const SequenceStrides& out_strides,
                                 const Tensor& dout, const SequenceStrides& dout_strides, const Tensor& lse,
                                 Stream& stream, bool sums_dq);
// The kernels in order: the row statistics (zeroing close_rows first), dk and dv, dq (or, with
// configs.dkdv.fuse_dq, dk, dv and dq's sums, then dq from them).
void launch_backward(const AttentionProblem& p, const AttentionConfigs& configs, const BackwardBuffers& buffers,
                     Stream& stream);
// Each of them alone (dk / dv and dq read what the rows kernel wrote), and the builds their
// launches run, with their compile reports. With config.fuse_dq, launch_dkdv gives dq too
// (zeroing dq_sum first, then casting its sums into dq), and prepare_dkdv's report has the
// cache entries of both its kernels.
void launch_backward_rows(const AttentionProblem& p, const KernelConfig& config, const BackwardBuffers& buffers,
                          Stream& stream);
void launch_dkdv(const AttentionProblem& p, const KernelConfig& config, const BackwardBuffers& buffers, Stream& stream);
void launch_dq(const AttentionProblem& p, const KernelConfig& config, const BackwardBuffers& buffers, Stream& stream);
KernelReport prepare_backward_rows(const AttentionProblem& p, const KernelConfig& config,
                                   const BackwardBuffers& buffers, Device& device);
KernelReport prepare_dkdv(const AttentionProblem& p, const KernelConfig& config, const BackwardBuffers& buffers,
                          Device& device);
KernelReport prepare_dq(const AttentionProblem& p, const KernelConfig& config, const BackwardBuffers& buffers,
                        Device& device);

// The number of programs of a grid over `blocks` blocks of every (batch, head); an error
// naming `op` when it does not fit one launch.
uint32_t program_count(const char* op, int64_t blocks, int64_t heads);

}  // namespace tilejit::ops::attention_detail
