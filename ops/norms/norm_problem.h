// Internal to ops/norms: which norm, the (rows, hidden) view of x that every kernel works on,
// the argument checks shared by the forward and backward ops, and how kernels tile the rows.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "ops/common/op_arguments.h"
#include "ops/norms.h"

namespace tilejit::ops {

enum class NormKind { layer, rms };

// x as (rows, hidden); `leading` is x's shape without its last dimension (mean / rsigma's).
struct RowShape {
  int64_t rows = 0;
  int32_t hidden = 0;
  std::vector<int64_t> leading;
};

// Checks x, gamma and beta (null for RMSNorm) and the options; returns x's row shape.
RowShape check_norm_forward(const OpArguments& args, NormKind kind, const Tensor& x, const Tensor& gamma,
                            const Tensor* beta, const NormOptions& options);
// Checks the backward's tensors (mean null for RMSNorm) and options; returns x's row shape.
RowShape check_norm_backward(const OpArguments& args, NormKind kind, const Tensor& dy, const Tensor& x,
                             const Tensor* mean, const Tensor& rsigma, const Tensor& gamma,
                             const NormBackwardOptions& options);

// Rows up to this long are held in registers; longer ones are walked in kLoopBlock columns.
inline constexpr int64_t kMaxWholeRow = 8192;
inline constexpr int64_t kLoopBlock = 4096;
// The longest row: the kernels index a row in 32-bit integers, and a loop over it steps a
// block past its end.
inline constexpr int64_t kMaxHidden = std::numeric_limits<int32_t>::max() - kLoopBlock;

// A kernel's tiles: (block_rows, block_hidden). With whole_row, block_hidden covers the row
// and short rows share a tile; otherwise block_rows is 1 and the kernel loops over the row.
struct RowTiling {
  int64_t block_rows = 1, block_hidden = 1;
  bool whole_row = true;
  int num_warps = 4;
  std::vector<std::pair<std::string, int64_t>> constants() const;  // BLOCK_ROWS, BLOCK_H, WHOLE_ROW, num_warps
};
RowTiling row_tiling(int32_t hidden);

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace tilejit::ops
