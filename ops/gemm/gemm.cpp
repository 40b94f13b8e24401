// gemm's entry points: check, choose the config (tuned or heuristic), launch.
#include "ops/common/op_arguments.h"
#include "ops/common/op_kernels.h"
#include "ops/gemm.h"
#include "ops/gemm/gemm_launch.h"
#include "ops/gemm/gemm_tuning.h"

namespace tilejit::ops {
namespace {

using namespace gemm_detail;

void launch_gemm(GemmProblem& p, Stream* stream) {
  OpArguments args("gemm");
  Stream& s = args.stream_for("a", *p.a, stream);
  if (p.m == 0 || p.n == 0 || p.batch == 0) return;
  if (p.batch > 65535) args.fail("at most 65535 batches, not {}", p.batch);
  GemmConfig config = call_config(p, s.device());
  if (p.options->split_k > 0) config.split_k = p.options->split_k;
  launch_gemm_with(p, config, s);
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
