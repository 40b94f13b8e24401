// A gemm output checked against a double-precision reference on sampled rows: every column
// of 64 rows spread over M (all of them when M is smaller), so a wrong tile anywhere along N
// shows while the reference stays cheap at any size. The error allowed for an element is
// `accumulation_error` times the sum of |products| plus `output_rounding` times |reference|.
#pragma once

#include <cstdint>
#include <vector>

#include "dsl/dtype.h"

namespace tilejit::ops::gemm_detail {

struct RowCheck {
  bool ok = true;
  double max_abs_error = 0;  // over the checked elements; infinite for a NaN
  double atol = 0;           // the largest absolute part of the allowed errors
};

// `a` (M, K) and `b` (K, N) as row-major values; `out` the output's row-major bytes.
RowCheck check_gemm_rows(const std::vector<double>& a, const std::vector<double>& b, DType out_dtype,
                         const std::vector<uint8_t>& out, int64_t m, int64_t n, int64_t k, double accumulation_error,
                         double output_rounding);

}  // namespace tilejit::ops::gemm_detail
