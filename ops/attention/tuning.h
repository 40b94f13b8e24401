// The attention kernels as tunable ops (autotune/tunable.h), as gemm is (ops/gemm/gemm_tuning.h):
// the forward, and the backward's dk / dv and dq kernels. Results are kept per kernel, input
// dtype, head dim and whether the call is causal, for shapes BN (batch x query heads), G (query
// heads per kv head, exactly), T (queries) and S (keys), the others bucketed by powers of two.
// They serve calls without bias, mask or sequence lengths whose band keeps every key to the
// left and, to the right, none (causal top-left, or bottom-right with T == S) or all (no mask),
// with or without logsumexp; other calls, and shapes nobody tuned, take the heuristic
// (config.h) unless TILEJIT_AUTOTUNE=1 tunes the shape on first use. A call runs the result of
// its own shape, else of the nearest tuned shape of its bucket; the answer is remembered per
// shape and process.
//
// Candidates run through the op's own launch path on random inputs of the shape (one batch,
// BN query heads over BN / G kv heads, contiguous), each checked once against a
// double-precision reference of sampled rows (host_reference.h) before it is timed; a backward
// kernel's inputs (the forward's output and logsumexp, the row statistics) are computed once,
// with the heuristic configs. A candidate's build includes the kernels a call runs beside it
// (the forward without logsumexp; the backward's row statistics), so a pack of tuned kernels
// (autotune/tuned_pack.h) holds them too.
#pragma once

#include <optional>
#include <string>

#include "autotune/tunable.h"
#include "ops/attention/config.h"
#include "ops/attention/problem.h"

namespace tilejit::ops::attention_detail {

struct AttentionTuningSpec {
  DType dtype = DType::bf16;
  int64_t head_dim = 128;
  bool causal = false;

  // The spec whose results serve `p`; nothing for a call whose masks or bias tuning does not
  // cover.
  static std::optional<AttentionTuningSpec> of(const AttentionProblem& p);
  std::string layout() const;  // "h128", "h128/causal"
};

// The tuned kernels: the forward, and the backward pass's dk / dv and dq kernels (each tuned
// alone, the others at their heuristic configs; the backward's row statistics keep theirs).
// dk / dv's candidates are timed with what gives dq beside them: their own sums of it
// (FUSE_DQ), or the dq kernel.
enum class TunedKernel { forward, dkdv, dq };

// The tunable kernel for `spec`, made once per spec and kernel for the process; its dims are
// BN, G, T and S; its constants BLOCK_M, BLOCK_N, num_warps, HEAD_CHUNK, num_stages, OVERLAP,
// for the forward and dq with 16-bit inputs warp_specialize (the forward's also pingpong), and
// for dk / dv FUSE_DQ.
const autotune::TunableKernel& attention_tunable(const AttentionTuningSpec& spec,
                                                 TunedKernel kernel = TunedKernel::forward);

// The config a call of `p` runs on `device`: tuned or heuristic, as above; for the forward,
// and for the kernels of the backward pass (its `forward` member is the heuristic's: the
// backward does not run it).
KernelConfig forward_call_config(const AttentionProblem& p, Device& device);
AttentionConfigs backward_call_configs(const AttentionProblem& p, Device& device);

// A tuned config as the kernels' config.
KernelConfig kernel_config_of(const autotune::Config& config);

}  // namespace tilejit::ops::attention_detail
