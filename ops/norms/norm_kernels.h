// Internal to ops/norms: the DSL kernels of the norm ops. Each kernel's parameters depend on
// the norm (LayerNorm has beta and mean) and on the outputs asked for, so they are defined at
// run time (define_op_kernel), named after everything that shapes them. Their constants are
// RowTiling's (BLOCK_ROWS, BLOCK_H, WHOLE_ROW, num_warps) and ZERO_CENTERED.
#pragma once

#include <optional>
#include <string>

#include "dsl/kernel.h"
#include "ops/norms/norm_problem.h"

namespace tilejit::ops {

struct NormForwardConfig {
  NormKind kind = NormKind::layer;
  DType x = DType::f32, gamma = DType::f32;
  bool statistics = false;   // stores mean (LayerNorm) and rsigma
  std::optional<DType> fp8;  // quantizes y to this dtype
  std::string name() const;  // names every field: the kernel's name and its memo key
};
// Parameters: x, gamma, [beta], y, [mean], [rsigma], [the kFp8OutputParams of fp8_tiles.h],
// rows (i64), hidden (i32), eps (f32). Grid: cdiv(rows, BLOCK_ROWS) programs.
dsl::Kernel norm_forward_kernel(const NormForwardConfig& config);

struct NormBackwardConfig {
  NormKind kind = NormKind::layer;
  DType x = DType::f32, gamma = DType::f32;
  std::string name(const char* kernel) const;
};
// The rows' mean(dy*g) (LayerNorm) and mean(dy*g*xhat), for rows too long for registers.
// Parameters: dy, x, [mean], rsigma, gamma, row_terms (f32 [rows, 2]), rows (i64), hidden
// (i32). Grid: rows programs; looping over BLOCK_H columns (BLOCK_ROWS is 1).
dsl::Kernel norm_backward_row_terms_kernel(const NormBackwardConfig& config);
// dx, and each program's partial sums of dy*xhat and (LayerNorm) dy over its rows.
// Parameters: dy, x, [mean], rsigma, gamma, dx, partial_dgamma, [partial_dbeta],
// [row_terms, without WHOLE_ROW], rows (i64), hidden (i32), rows_per_program (i64).
// Grid: (cdiv(hidden, BLOCK_H), programs); partial rows are f32 [programs, hidden].
dsl::Kernel norm_backward_dx_kernel(const NormBackwardConfig& config);
// dgamma (and dbeta) = the sums of the partial rows, in a fixed order. Parameters:
// partial_dgamma, [partial_dbeta], dgamma, [dbeta], programs (i64), hidden (i32). Constants
// BLOCK (columns per program) and BLOCK_P (partial rows per step); grid cdiv(hidden, BLOCK).
dsl::Kernel norm_partial_sums_kernel(const NormBackwardConfig& config);

}  // namespace tilejit::ops
