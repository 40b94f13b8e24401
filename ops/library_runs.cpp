#include "ops/library_runs.h"

#include <fmt/format.h>

#include "dsl/error.h"
#include "ops/attention/runs.h"
#include "ops/fp8/fp8_runs.h"
#include "ops/gemm/gemm_runs.h"
#include "ops/norms/norm_runs.h"
#include "ops/scaled_dot/runs.h"

namespace tilejit::ops {

const std::vector<LibraryRun>& library_runs() {
  static const std::vector<LibraryRun> runs = {
      {"attention", "fused attention forward (flash), bf16, optional causal mask; B, T, S, N, K, H, CAUSAL",
       run_attention},
      {"attention_backward", "attention backward: dq, dk, dv (deterministic), bf16; B, T, S, N, K, H, CAUSAL",
       run_attention_backward},
      {"bf16_gemm", "gemm, bf16 x bf16 -> bf16 on tensor cores; M, N, K", run_bf16_gemm},
      {"f16_gemm", "gemm, f16 x f16 -> f16 on tensor cores; M, N, K", run_f16_gemm},
      {"tf32_gemm", "gemm, f32 x f32 -> f32 through tf32 tensor cores; M, N, K", run_tf32_gemm},
      {"fp8_gemm", "gemm, e4m3 x e4m3 with per-tensor scale_inv -> bf16; M, N, K", run_fp8_gemm},
      {"int8_gemm", "gemm, i8 x i8 -> i32 (matmul_true_int8); M, N, K", run_int8_gemm},
      {"q_matmul_int8", "FJFormer's q_matmul_int8 end to end (quantize rows, columns, i8 gemm), bf16; M, N, K",
       run_q_matmul_int8},
      {"scaled_dot",
       "MX-scaled matrix product (jax.lax.scaled_dot): e4m3 x e4m3, e8m0 scales; B, M, N, K, BLOCK, RHS_NK",
       run_scaled_dot},
      {"mx_quantize", "MX quantization to f8e4m3 with e8m0 scales per 32 elements; ROWS, COLS", run_mx_quantize},
      {"layer_norm", "LayerNorm forward, bf16 x, gamma and beta, with mean and rsigma; ROWS, HIDDEN", run_layer_norm},
      {"rms_norm", "RMSNorm forward, bf16 x and gamma, with rsigma; ROWS, HIDDEN", run_rms_norm},
      {"layer_norm_backward", "LayerNorm backward: dx, dgamma, dbeta (deterministic), bf16; ROWS, HIDDEN",
       run_layer_norm_backward},
      {"rms_norm_backward", "RMSNorm backward: dx, dgamma (deterministic), bf16; ROWS, HIDDEN", run_rms_norm_backward},
      {"fp8_quantize", "FP8 delayed scaling: bf16 -> e4m3 with the current scale, amax to the history; N",
       run_fp8_quantize},
  };
  return runs;
}

const LibraryRun* find_library_run(const std::string& op) {
  for (const LibraryRun& run : library_runs())
    if (run.op == op) return &run;
  return nullptr;
}

std::vector<std::pair<std::string, int64_t>> run_dimensions(const std::string& op,
                                                            std::vector<std::pair<std::string, int64_t>> defaults,
                                                            const ExampleOptions& options) {
  for (const auto& [name, value] : options.overrides) {
    bool found = false;
    for (auto& [dim, dim_value] : defaults)
      if (dim == name) dim_value = value, found = true;
    if (!found) {
      std::string names;
      for (const auto& d : defaults) names += (names.empty() ? "" : ", ") + d.first;
      fail("run {}: no problem dimension named {} (it has {})", op, name, names);
    }
    if (value <= 0) fail("run {}: dimension {} must be positive, not {}", op, name, value);
  }
  return defaults;
}

int64_t dimension(const std::vector<std::pair<std::string, int64_t>>& dims, const std::string& name) {
  for (const auto& [dim, value] : dims)
    if (dim == name) return value;
  internal_error("dimension " + name + " of a library run", __FILE__, __LINE__);
}

}  // namespace tilejit::ops
