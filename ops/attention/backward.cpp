// attention_backward(): checks, allocates the gradients and the f32 row workspaces, and
// launches the three backward kernels (backward_kernels.h) in order on one stream, dk / dv and
// dq with their tuned or heuristic configs (tuning.h).
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "ops/attention.h"
#include "ops/attention/backward_kernels.h"
#include "ops/attention/tuning.h"
#include "ops/common/op_kernels.h"

namespace tilejit::ops {
namespace attention_detail {

int64_t workspace_rows(int64_t q_len) {
  return (q_len + kWorkspaceRowsMultiple - 1) / kWorkspaceRowsMultiple * kWorkspaceRowsMultiple;
}

std::vector<int64_t> row_stats_shape(const AttentionProblem& p) {
  return {p.batch * p.heads, 3, workspace_rows(p.q_len)};
}

namespace {

// The operands a kernel reads in blocks of `rows` rows along its loop, with `config` on
// `device`: through descriptors where sequence_descriptor gives one.
struct LoopBlocks {
  std::vector<std::string> names;
  int64_t rows = 0;
  const KernelConfig* config = nullptr;
  const DeviceInfo* device = nullptr;
};

// The arguments every backward kernel reads.
NamedArguments backward_arguments(const AttentionProblem& p, const BackwardBuffers& buffers, const LoopBlocks& blocks) {
  struct Operand {
    const char* name;
    const Tensor& t;
    const SequenceStrides& strides;
    int64_t length, heads;
  };
  NamedArguments args = common_arguments(p);
  for (const Operand& o : {Operand{"q", *p.q_in, p.q, p.q_len, p.heads},
                           Operand{"k", *p.k_in, p.k, p.kv_len, p.kv_heads},
                           Operand{"v", *p.v_in, p.v, p.kv_len, p.kv_heads},
                           Operand{"out", buffers.out, buffers.out_strides, p.q_len, p.heads},
                           Operand{"dout", buffers.dout, buffers.dout_strides, p.q_len, p.heads}}) {
    std::optional<TensorDescriptor> descriptor;
    if (std::find(blocks.names.begin(), blocks.names.end(), o.name) != blocks.names.end())
      descriptor = sequence_descriptor(p, o.t, o.strides, o.length, o.heads, blocks.rows,
                                       blocks.config->head_chunk_for(p.head_dim), *blocks.device);
    add_sequence_blocks(args, o.name, o.t, o.strides, std::move(descriptor));
  }
  args.add("lse", buffers.lse);
  args.add("row_stats", buffers.row_stats);
  args.add("close_rows", buffers.close_rows);
  return args;
}

void add_outputs(NamedArguments& args, const std::vector<std::pair<const char*, const Tensor*>>& outputs) {
  for (auto [output, tensor] : outputs)
    add_sequence_operand(args, output, *tensor, contiguous_sequence_strides(tensor->shape()));
}

}  // namespace

NamedArguments rows_arguments(const AttentionProblem& p, const BackwardBuffers& buffers) {
  return backward_arguments(p, buffers, LoopBlocks{});
}

NamedArguments dkdv_arguments(const AttentionProblem& p, const KernelConfig& config, const DeviceInfo& device,
                              const BackwardBuffers& buffers) {
  // dout's rows past the query lengths must read zero, which its descriptor cannot say.
  std::vector<std::string> blocked = {"q"};
  if (!p.q_seqlens) blocked.push_back("dout");
  NamedArguments args = backward_arguments(p, buffers, LoopBlocks{blocked, config.block_m, &config, &device});
  add_outputs(args, {{"dk", &buffers.dk}, {"dv", &buffers.dv}});
  if (config.fuse_dq) {
    if (!buffers.dq_sum) fail("attention_backward: the fused dk / dv config has no dq_sum workspace");
    add_outputs(args, {{"dq_sum", &*buffers.dq_sum}});
  }
  return args;
}

NamedArguments dq_arguments(const AttentionProblem& p, const KernelConfig& config, const DeviceInfo& device,
                            const BackwardBuffers& buffers) {
  NamedArguments args = backward_arguments(p, buffers, LoopBlocks{{"k", "v"}, config.block_n, &config, &device});
  add_outputs(args, {{"dq", &buffers.dq}});
  return args;
}

NamedArguments dq_from_sum_arguments(const AttentionProblem& p, const BackwardBuffers& buffers) {
  NamedArguments args;
  args.add("dq_sum", *buffers.dq_sum);
  args.add("dq", buffers.dq);
  args.add("elements", buffers.dq.numel());
  args.add("scale", p.scale);
  return args;
}

namespace {

// One backward kernel of `p` with its arguments, bound to `config`, and its grid: `rows` rows
// in blocks of `block`, for each of `heads` heads.
struct BackwardLaunch {
  NamedArguments args;
  BoundKernel kernel;
  uint32_t programs;

  void run(Stream& stream) const { kernel.launch_args(stream, LaunchDims{{programs, 1, 1}, {}}, args.values()); }
  KernelReport prepare(Device& device) const { return kernel.prepare(device, args.values())->report(); }
};

// Each backward kernel reads the row statistics in blocks of BLOCK_M rows, which the
// statistics' padding must hold whole.
void check_statistics_blocks(const char* name, const KernelConfig& config) {
  if (config.block_m <= 0 || kWorkspaceRowsMultiple % config.block_m != 0)
    fail("attention_backward: {} takes a BLOCK_M that divides {}, not {}", name, kWorkspaceRowsMultiple,
         config.block_m);
}

BackwardLaunch backward_launch(const AttentionProblem& p, NamedArguments args, const char* name,
                               dsl::Kernel (*make)(DType, std::vector<ir::Param>), const KernelConfig& config,
                               int64_t rows, int64_t block, int64_t heads) {
  check_statistics_blocks(name, config);
  const JitKernel& kernel = op_kernel(fmt::format("{}/{}", name, features_key(p)), args,
                                      [&](std::vector<ir::Param> params) { return make(p.dtype, std::move(params)); });
  BoundKernel bound = kernel.with(config.constants(p.head_dim));
  return {std::move(args), std::move(bound), program_count("attention_backward", (rows + block - 1) / block, heads)};
}

BackwardLaunch dkdv_launch(const AttentionProblem& p, const KernelConfig& config, const BackwardBuffers& buffers,
                           const DeviceInfo& device) {
  // The kernel that sums dq takes a parameter more: a kernel of its own, under its own name.
  return backward_launch(p, dkdv_arguments(p, config, device, buffers), dkdv_kernel_name(config.fuse_dq), dkdv_kernel,
                         config, p.kv_len, config.block_n, p.batch * p.kv_heads);
}

BackwardLaunch dq_launch(const AttentionProblem& p, const KernelConfig& config, const BackwardBuffers& buffers,
                         const DeviceInfo& device) {
  return backward_launch(p, dq_arguments(p, config, device, buffers), "attention_backward_dq", dq_kernel, config,
                         p.q_len, config.block_m, p.batch * p.heads);
}

// dq from its sums, when dk / dv sums it (fuse_dq): one program per kElementsPerProgram elements.
constexpr int64_t kElementsPerProgram = 1024;
BackwardLaunch dq_from_sum_launch(const AttentionProblem& p, const BackwardBuffers& buffers) {
  NamedArguments args = dq_from_sum_arguments(p, buffers);
  const JitKernel& kernel =
      op_kernel(fmt::format("attention_backward_dq_from_sum/{}", dtype_name(p.dtype)), args,
                [&](std::vector<ir::Param> params) { return dq_from_sum_kernel(p.dtype, std::move(params)); });
  return {std::move(args), kernel.with({{"BLOCK", kElementsPerProgram}}),
          program_count("attention_backward", (buffers.dq.numel() + kElementsPerProgram - 1) / kElementsPerProgram, 1)};
}

BackwardLaunch rows_launch(const AttentionProblem& p, const KernelConfig& config, const BackwardBuffers& buffers) {
  // Its programs cover the row statistics' padding too.
  return backward_launch(p, rows_arguments(p, buffers), "attention_backward_rows", backward_rows_kernel,
                         config, workspace_rows(p.q_len), config.block_m, p.batch * p.heads);
}

}  // namespace

void launch_backward_rows(const AttentionProblem& p, const KernelConfig& config, const BackwardBuffers& buffers,
                          Stream& stream) {
  if (p.batch * p.heads == 0) return;
  stream.device().memset_async(buffers.close_rows.data(), 0, static_cast<size_t>(buffers.close_rows.bytes()), stream);
  if (p.q_len > 0) rows_launch(p, config, buffers).run(stream);
}

KernelReport prepare_backward_rows(const AttentionProblem& p, const KernelConfig& config,
                                   const BackwardBuffers& buffers, Device& device) {
  return rows_launch(p, config, buffers).prepare(device);
}

void launch_dkdv(const AttentionProblem& p, const KernelConfig& config, const BackwardBuffers& buffers,
                 Stream& stream) {
  if (p.batch * p.heads > 0) {
    BackwardLaunch dkdv = dkdv_launch(p, config, buffers, stream.device().info());  // checks dq_sum's presence
    if (config.fuse_dq)
      stream.device().memset_async(buffers.dq_sum->data(), 0, static_cast<size_t>(buffers.dq_sum->bytes()), stream);
    dkdv.run(stream);
    if (config.fuse_dq && p.q_len > 0) dq_from_sum_launch(p, buffers).run(stream);
    return;
  }
  // No query head reads k and v (N = 0 beside K >= 1 kv heads): their gradients are zero.
  for (const Tensor* grad : {&buffers.dk, &buffers.dv})
    stream.device().memset_async(grad->data(), 0, static_cast<size_t>(grad->bytes()), stream);
}

void launch_dq(const AttentionProblem& p, const KernelConfig& config, const BackwardBuffers& buffers, Stream& stream) {
  if (p.batch * p.heads * p.q_len > 0) dq_launch(p, config, buffers, stream.device().info()).run(stream);
}

KernelReport prepare_dkdv(const AttentionProblem& p, const KernelConfig& config, const BackwardBuffers& buffers,
                          Device& device) {
  KernelReport report = dkdv_launch(p, config, buffers, device.info()).prepare(device);
  if (config.fuse_dq) {
    KernelReport sums = dq_from_sum_launch(p, buffers).prepare(device);
    report.cache_entries.insert(report.cache_entries.end(), sums.cache_entries.begin(), sums.cache_entries.end());
  }
  return report;
}

KernelReport prepare_dq(const AttentionProblem& p, const KernelConfig& config, const BackwardBuffers& buffers,
                        Device& device) {
  return dq_launch(p, config, buffers, device.info()).prepare(device);
}

BackwardBuffers backward_buffers(const AttentionProblem& p, const Tensor& out, const SequenceStrides& out_strides,
                                 const Tensor& dout, const SequenceStrides& dout_strides, const Tensor& lse,
                                 Stream& stream, bool sums_dq) {
  Device& device = stream.device();
  return {out,
          dout,
          lse,
          out_strides,
          dout_strides,
          Tensor::scratch(stream, DType::f32, row_stats_shape(p)),
          Tensor::scratch(stream, DType::i32, {p.batch, p.heads}),
          Tensor::empty(device, p.dtype, p.q_shape()),
          Tensor::empty(device, p.dtype, p.kv_shape()),
          Tensor::empty(device, p.dtype, p.kv_shape()),
          sums_dq ? std::optional<Tensor>(Tensor::scratch(stream, DType::f32, p.q_shape())) : std::nullopt};
}

void launch_backward(const AttentionProblem& p, const AttentionConfigs& configs, const BackwardBuffers& buffers,
                     Stream& stream) {
  // Every kernel's config is checked before the first runs.
  check_statistics_blocks("attention_backward_rows", configs.preprocess);
  check_statistics_blocks(dkdv_kernel_name(configs.dkdv.fuse_dq), configs.dkdv);
  if (!configs.dkdv.fuse_dq) check_statistics_blocks("attention_backward_dq", configs.dq);
  launch_backward_rows(p, configs.preprocess, buffers, stream);
  launch_dkdv(p, configs.dkdv, buffers, stream);
  if (!configs.dkdv.fuse_dq) launch_dq(p, configs.dq, buffers, stream);
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

  Stream& s = args.stream_for("q", q, stream);
  AttentionConfigs configs = backward_call_configs(p, s.device());
  if (options.deterministic) configs.dkdv.fuse_dq = false;
  BackwardBuffers buffers = backward_buffers(p, out, out_strides, dout, dout_strides, logsumexp, s, configs.dkdv.fuse_dq);
  launch_backward(p, configs, buffers, s);
  return {buffers.dq, buffers.dk, buffers.dv};
}

}  // namespace tilejit::ops
