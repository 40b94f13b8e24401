// gemm's entry points: check, choose the config (tuned or heuristic), launch.
#include <algorithm>

#include "ops/common/op_arguments.h"
#include "ops/common/op_kernels.h"
#include "ops/gemm.h"
#include "ops/gemm/gemm_launch.h"
#include "ops/gemm/gemm_tuning.h"

namespace tilejit::ops {

namespace gemm_detail {

void launch_gemm(const GemmProblem& p, Stream& s, int64_t most_batches_per_launch) {
  if (p.m == 0 || p.n == 0 || p.batch == 0) return;
  if (p.batch > most_batches_per_launch) {
    // The batched operands' slices, shared ones whole, each checked again as the problem it is.
    for (int64_t first = 0; first < p.batch; first += most_batches_per_launch) {
      const int64_t count = std::min(most_batches_per_launch, p.batch - first);
      auto part = [&](const Tensor& t) { return t.rank() == 3 && t.dim(0) > 1 ? t.slice(0, first, count) : t; };
      const Tensor a = part(*p.a), b = part(*p.b), out = p.out->slice(0, first, count);
      GemmOptions options = *p.options;
      if (options.c) options.c = part(*options.c);
      if (options.residual) options.residual = part(*options.residual);
      launch_gemm(check_gemm(a, b, options, &out), s, most_batches_per_launch);
    }
    return;
  }
  GemmConfig config = call_config(p, s.device());
  if (p.options->split_k > 0) config.split_k = p.options->split_k;
  launch_gemm_with(p, config, s);
}

}  // namespace gemm_detail

namespace {

using namespace gemm_detail;

// A launch's batches are its grid's y dim, which holds at most this many.
constexpr int64_t kMostBatchesPerLaunch = 65535;

void launch_gemm(const GemmProblem& p, Stream* stream) {
  launch_gemm(p, OpArguments("gemm").stream_for("a", *p.a, stream), kMostBatchesPerLaunch);
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
