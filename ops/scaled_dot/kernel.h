// scaled_dot's tiled kernel on (batch, M, K) x (batch, K, N) views (grouped_view.h). One program
// computes a (BLOCK_M, BLOCK_N) tile of one batch's output with a K loop through `dot`, so the
// product runs on the tensor cores, accumulates in f32 (fp8 block by block, f32_dot.h) and is
// rounded once to the output type.
// The scales are applied inside the kernel, never to a dequantized copy of an operand, in one of
// two ways:
//
// - partial_products: when BLOCK_K divides every scale block and both operands are fp8 or f16
//   (whose raw products stay inside f32's range), the K loop runs in steps of `group` (the
//   blocks' gcd), each step a chain of dots over its K tiles into an f32 partial product,
//   which is multiplied by lhs_scale[m, step] * rhs_scale[step, n] and added to the
//   accumulator. Each program first bounds its scales: only where a factor may leave f32's
//   normal range does its loop check each factor (kernel.cpp says how it then scales). In the
//   other loop the factors of a (BLOCK_M, BLOCK_N) tile are, on sm_90a, one more tensor-core
//   product (the rows' scales times the columns', kernel.cpp); elsewhere a multiply each, of
//   column scales decoded once (once_per_element) and moved to the accumulator's threads.
//   The operands reach the tensor cores as stored: fp8 x fp8 as fp8 on sm_89+ (an fp8 rhs stored
//   (K, N) is transposed for them in each step, or, for a product of many row blocks on sm_90a,
//   copied along K once ahead: k_major_copy.h); pairings that dot does not take directly are
//   widened exactly (fp8 to bf16 or f16, f16 and bf16 together to f32 as tf32, which holds both
//   exactly).
// - operand_tiles: blocks that no power-of-two K tile divides with at least the tensor cores'
//   K (blocks of 2, 3, 16 for fp8, ...), and the scales beside a bf16 or f32 operand, are applied
//   to the operand tiles in registers: each
//   element times its scale in f32, then the product in bf16 when both operands are fp8 or bf16
//   (exact with e8m0 scales; with bf16 scales rounded to bf16, as JAX rounds it), otherwise in
//   f32 (tf32x3). A three-stage loop pipeline copies the operand tiles ahead, each step
//   reading its own back from shared memory to scale them.
//
// f32 operands are computed in f32 through Precision::tf32x3 (about 2^-22 relative per
// product). Without scales the kernel is a plain batched GEMM (mode none).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "dsl/builder.h"
#include "ops/scaled_dot/grouped_view.h"
#include "runtime/device.h"

namespace tilejit::ops::scaled_dot_detail {

// One operand as the kernel reads it. lhs: data (B, M, K), scale (B, M, K / block); rhs: data
// (B, K, N), scale (B, K / block, N). Scale element j covers K indices [j * block, (j+1) * block).
struct ScaledOperandView {
  GroupedView data;
  std::optional<GroupedView> scale;
  int64_t block = 0;  // with a scale
};

enum class ScaleMode { none, partial_products, operand_tiles };
std::string scale_mode_name(ScaleMode mode);

struct ScaledDotPlan {
  ScaleMode mode = ScaleMode::none;
  std::optional<DType> compute;  // what the operand tiles are cast to for dot; unset: as stored
  dsl::Precision precision = dsl::Precision::tf32;  // of f32 compute
  int64_t block_m = 0, block_n = 0, block_k = 0;
  int64_t group = 0;  // partial_products: K per scale step
  // partial_products: the factors lhs_scale x rhs_scale by a wgmma (sm_90a), not a multiply
  // each; mma.sync's operand fragments cost more than the multiplies they save.
  bool factors_on_tensor_cores = false;
  int num_warps = 4;
  int num_stages = 1;
};

// The plan for operands of these dtypes with scale blocks `lhs_block` / `rhs_block` (0: no
// scale) on a device of compute capability `cc` (major * 10 + minor).
ScaledDotPlan plan_scaled_dot(DType lhs, DType rhs, int64_t lhs_block, int64_t rhs_block, int64_t m, int64_t n,
                              int64_t k, int cc);

// out (B, M, N), contiguous, of the output dtype: the product of the two views.
void run_scaled_dot_kernel(const ScaledOperandView& lhs, const ScaledOperandView& rhs, const Tensor& out,
                           Stream& stream);

}  // namespace tilejit::ops::scaled_dot_detail
