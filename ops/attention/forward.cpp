// attention(): checks, allocates the outputs and launches the fused forward kernel with the
// tuned or heuristic config (tuning.h).
#include <fmt/format.h>

#include <limits>

#include "ops/attention.h"
#include "ops/attention/forward_kernel.h"
#include "ops/attention/launch.h"
#include "ops/attention/tuning.h"
#include "ops/common/op_kernels.h"

namespace tilejit::ops {
namespace attention_detail {

uint32_t program_count(const char* op, int64_t blocks, int64_t heads) {
  if (blocks * heads > std::numeric_limits<int32_t>::max())
    fail("{}: {} blocks of {} (batch, head) pairs exceed one launch's 2^31 programs", op, blocks, heads);
  return static_cast<uint32_t>(blocks * heads);
}

namespace {

BoundKernel forward_kernel_of(const AttentionProblem& p, const KernelConfig& config, const NamedArguments& args,
                              bool lse) {
  const JitKernel& kernel =
      op_kernel(fmt::format("attention_forward/{}/lse{}", features_key(p), lse), args,
                [&](std::vector<ir::Param> params) { return forward_kernel(p.dtype, std::move(params)); });
  return kernel.with(config.constants(p.head_dim));
}

}  // namespace

void launch_forward(const AttentionProblem& p, const KernelConfig& config, const Tensor& out, const Tensor* lse,
                    Stream& stream) {
  if (p.batch * p.heads * p.q_len == 0) return;
  NamedArguments args = forward_arguments(p, config, stream.device().info(), out, lse);
  uint32_t programs = program_count("attention", (p.q_len + config.block_m - 1) / config.block_m, p.batch * p.heads);
  forward_kernel_of(p, config, args, lse != nullptr)
      .launch_args(stream, LaunchDims{{programs, 1, 1}, {}}, args.values());
}

KernelReport prepare_forward(const AttentionProblem& p, const KernelConfig& config, const Tensor& out,
                             const Tensor* lse, Device& device) {
  NamedArguments args = forward_arguments(p, config, device.info(), out, lse);
  return forward_kernel_of(p, config, args, lse != nullptr).prepare(device, args.values())->report();
}

}  // namespace attention_detail

AttentionResult attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& options,
                          Stream* stream) {
  using namespace attention_detail;
  OpArguments args("attention");
  AttentionProblem p = check_attention(args, q, k, v, options);
  Stream& s = args.stream_for("q", q, stream);
  AttentionResult r{Tensor::empty(q.device(), q.dtype(), p.q_shape()), std::nullopt};
  if (options.return_logsumexp) r.logsumexp = Tensor::empty(q.device(), DType::f32, p.logsumexp_shape());
  launch_forward(p, forward_call_config(p, s.device()), r.out, r.logsumexp ? &*r.logsumexp : nullptr, s);
  return r;
}

}  // namespace tilejit::ops
