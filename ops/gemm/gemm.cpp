// gemm's entry points: check, choose the config, launch the main kernel (and, with split-K,
// the reduction of the slices).
#include <algorithm>

#include "ops/common/op_arguments.h"
#include "ops/common/op_kernels.h"
#include "ops/gemm.h"
#include "ops/gemm/gemm_config.h"
#include "ops/gemm/gemm_kernels.h"

namespace tilejit::ops {
namespace {

using namespace gemm_detail;

uint32_t grid_dim(int64_t n) { return static_cast<uint32_t>(n); }

void launch_gemm(GemmProblem& p, Stream* stream) {
  if (p.m == 0 || p.n == 0 || p.batch == 0) return;
  if (p.batch > 65535) OpArguments("gemm").fail("at most 65535 batches, not {}", p.batch);
  Stream& s = op_stream(*p.a, stream);
  GemmConfig config = heuristic_gemm_config(p, s.device().info());
  if (p.options->split_k > 0) config.split_k = p.options->split_k;
  config.split_k = std::clamp<int64_t>(config.split_k, 1, std::max<int64_t>(1, (p.k + config.block_k - 1) / config.block_k));
  const GemmFeatures& f = p.features;
  GemmOperands operands = gemm_operands(p, config, s.device().info());
  std::string key = f.key() + "/" + operands.key();
  Dim3 tiles{grid_dim(config.output_tiles(p)), grid_dim(p.batch), grid_dim(config.split_k)};

  if (config.split_k == 1) {
    NamedArguments args = main_arguments(p, operands, nullptr);
    const JitKernel& k = op_kernel(key, [&] { return main_kernel(f, false, args.params()); });
    k.with(config.constants()).launch_args(s, LaunchDims{tiles, {}}, args.values());
    return;
  }
  Tensor workspace = Tensor::scratch(s, f.accumulator(), {config.split_k, p.batch, p.m, p.n});
  NamedArguments partial = main_arguments(p, operands, &workspace);
  const JitKernel& main = op_kernel(key + "/partial", [&] { return main_kernel(f, true, partial.params()); });
  main.with(config.constants()).launch_args(s, LaunchDims{tiles, {}}, partial.values());

  NamedArguments sum = reduction_arguments(p, workspace);
  const JitKernel& reduce = op_kernel(f.key() + "/sum", [&] { return reduction_kernel(f, sum.params()); });
  const int64_t bm = 32, bn = 64;
  Dim3 sum_grid{grid_dim(((p.m + bm - 1) / bm) * ((p.n + bn - 1) / bn)), grid_dim(p.batch), 1};
  reduce.with({{"BLOCK_M", bm}, {"BLOCK_N", bn}, {"SPLIT_K", config.split_k}})
      .launch_args(s, LaunchDims{sum_grid, {}}, sum.values());
}

}  // namespace

const char* activation_name(Activation activation) {
  switch (activation) {
    case Activation::none: return "none";
    case Activation::relu: return "relu";
    case Activation::gelu_tanh: return "gelu_tanh";
    case Activation::gelu_erf: return "gelu_erf";
    case Activation::silu: return "silu";
  }
  return "?";
}

Tensor gemm(const Tensor& a, const Tensor& b, const GemmOptions& options, Stream* stream) {
  GemmProblem p = check_gemm(a, b, options, nullptr);
  set_output(p, Tensor::empty(a.device(), p.features.out, p.out_shape));
  launch_gemm(p, stream);
  return *p.out;
}

void gemm(const Tensor& a, const Tensor& b, const Tensor& out, const GemmOptions& options, Stream* stream) {
  GemmProblem p = check_gemm(a, b, options, &out);
  launch_gemm(p, stream);
}

}  // namespace tilejit::ops
