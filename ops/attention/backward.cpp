// attention_backward(): checks, allocates the gradients and the f32 row workspaces, and
// launches the three backward kernels (backward_kernels.h) in order on one stream.
#include <fmt/format.h>

#include "ops/attention.h"
#include "ops/attention/backward_kernels.h"
#include "ops/common/op_kernels.h"

namespace tilejit::ops {
namespace attention_detail {

NamedArguments backward_arguments(const AttentionProblem& p, const BackwardBuffers& buffers) {
  NamedArguments args = common_arguments(p);
  add_sequence_operand(args, "q", *p.q_in, p.q);
  add_sequence_operand(args, "k", *p.k_in, p.k);
  add_sequence_operand(args, "v", *p.v_in, p.v);
  add_sequence_operand(args, "out", buffers.out, buffers.out_strides);
  add_sequence_operand(args, "dout", buffers.dout, buffers.dout_strides);
  args.add("lse", buffers.lse);
  args.add("delta", buffers.delta);
  args.add("row_base", buffers.row_base);
  args.add("row_offset", buffers.row_offset);
  args.add("close_rows", buffers.close_rows);
  return args;
}

void launch_backward(const AttentionProblem& p, const AttentionConfigs& configs, const BackwardBuffers& buffers,
                     Stream& stream) {
  if (p.batch * p.heads == 0) return;
  const std::string features = features_key(p);
  auto launch = [&](const char* name, dsl::Kernel (*make)(DType, std::vector<ir::Param>), const NamedArguments& args,
                    const KernelConfig& config, int64_t blocks, int64_t heads) {
    const JitKernel& kernel =
        op_kernel(fmt::format("{}/{}", name, features), [&] { return make(p.dtype, args.params()); });
    uint32_t programs = program_count("attention_backward", blocks, heads);
    kernel.with(config.constants(p.head_dim)).launch_args(stream, LaunchDims{{programs, 1, 1}, {}}, args.values());
  };
  auto blocks = [](int64_t rows, int64_t block) { return (rows + block - 1) / block; };
  const NamedArguments inputs = backward_arguments(p, buffers);
  stream.device().memset_async(buffers.close_rows.data(), 0, static_cast<size_t>(buffers.close_rows.bytes()), stream);
  if (p.q_len > 0)
    launch("attention_backward_rows", backward_rows_kernel, inputs, configs.preprocess,
           blocks(p.q_len, configs.preprocess.block_m), p.batch * p.heads);
  const SequenceStrides kv_strides = contiguous_sequence_strides(p.kv_shape());
  NamedArguments dkdv = inputs;
  add_sequence_operand(dkdv, "dk", buffers.dk, kv_strides);
  add_sequence_operand(dkdv, "dv", buffers.dv, kv_strides);
  launch("attention_backward_dkdv", dkdv_kernel, dkdv, configs.dkdv, blocks(p.kv_len, configs.dkdv.block_n),
         p.batch * p.kv_heads);
  if (p.q_len > 0) {
    NamedArguments dq = inputs;
    add_sequence_operand(dq, "dq", buffers.dq, contiguous_sequence_strides(p.q_shape()));
    launch("attention_backward_dq", dq_kernel, dq, configs.dq, blocks(p.q_len, configs.dq.block_m),
           p.batch * p.heads);
  }
}

}  // namespace attention_detail

AttentionGradients attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                      const Tensor& dout, const Tensor& logsumexp, const AttentionOptions& options,
                                      Stream* stream) {
  using namespace attention_detail;
  OpArguments args("attention_backward");
  AttentionProblem p = check_attention(args, q, k, v, options);
  SequenceStrides out_strides = check_like_q(args, p, "out", out, p.dtype);
  SequenceStrides dout_strides = check_like_q(args, p, "dout", dout, p.dtype);
  args.same_device("logsumexp", logsumexp, "q", q);
  args.dtype("logsumexp", logsumexp, {DType::f32});
  args.shape("logsumexp", logsumexp, p.logsumexp_shape());
  args.contiguous("logsumexp", logsumexp);

  Device& device = q.device();
  Stream& s = op_stream(q, stream);
  auto rows = [&] { return Tensor::scratch(s, DType::f32, p.logsumexp_shape()); };
  BackwardBuffers buffers{out,
                          dout,
                          logsumexp,
                          out_strides,
                          dout_strides,
                          rows(),
                          rows(),
                          rows(),
                          Tensor::scratch(s, DType::i32, {p.batch, p.heads}),
                          Tensor::empty(device, p.dtype, p.q_shape()),
                          Tensor::empty(device, p.dtype, p.kv_shape()),
                          Tensor::empty(device, p.dtype, p.kv_shape())};
  launch_backward(p, choose_configs(p.dtype, p.head_dim), buffers, s);
  return {buffers.dq, buffers.dk, buffers.dv};
}

}  // namespace tilejit::ops
