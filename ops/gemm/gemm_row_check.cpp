#include "ops/gemm/gemm_row_check.h"

#include <algorithm>
#include <cmath>

#include "ops/common/host_values.h"

namespace tilejit::ops::gemm_detail {

RowCheck check_gemm_rows(const std::vector<double>& a, const std::vector<double>& b, DType out_dtype,
                         const std::vector<uint8_t>& out, int64_t m, int64_t n, int64_t k, double accumulation_error,
                         double output_rounding) {
  RowCheck r;
  const int64_t rows = std::min<int64_t>(m, 64);
  const auto out_size = static_cast<size_t>(dtype_storage_bytes(out_dtype));
  for (int64_t sample = 0; sample < rows; ++sample) {
    int64_t i = sample * m / rows;
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0, magnitude = 0;
      for (int64_t t = 0; t < k; ++t) {
        double p = a[static_cast<size_t>(i * k + t)] * b[static_cast<size_t>(t * n + j)];
        sum += p, magnitude += std::fabs(p);
      }
      double v = host_value(out_dtype, out.data() + static_cast<size_t>(i * n + j) * out_size);
      double error = std::isnan(v) ? INFINITY : std::fabs(v - sum);
      double atol = accumulation_error * magnitude;
      r.atol = std::max(r.atol, atol);
      r.max_abs_error = std::max(r.max_abs_error, error);
      r.ok = r.ok && error <= atol + output_rounding * std::fabs(sum);
    }
  }
  return r;
}

}  // namespace tilejit::ops::gemm_detail
