#include "ops/gemm/gemm_row_check.h"

#include <algorithm>
#include <cmath>

#include "autotune/parallel.h"
#include "ops/common/host_values.h"
#include "ops/common/sampled_indices.h"

namespace tilejit::ops::gemm_detail {

SampledRows::SampledRows(const std::vector<double>& a, const std::vector<double>& b, int64_t m, int64_t n, int64_t k)
    : n_(n) {
  rows_ = sampled_indices(m, 64);
  sums_.assign(rows_.size() * static_cast<size_t>(n), 0);
  magnitudes_.assign(sums_.size(), 0);
  // One row per host thread at a time: the reference of a large problem is billions of terms.
  autotune::run_in_parallel(rows_.size(), 0, [&](size_t r) {
    double* sum = &sums_[r * static_cast<size_t>(n)];
    double* magnitude = &magnitudes_[r * static_cast<size_t>(n)];
    for (int64_t t = 0; t < k; ++t) {  // along B's rows, so the inner loop reads memory in order
      double x = a[static_cast<size_t>(rows_[r] * k + t)];
      const double* b_row = &b[static_cast<size_t>(t * n)];
      for (int64_t j = 0; j < n; ++j) sum[j] += x * b_row[j], magnitude[j] += std::fabs(x * b_row[j]);
    }
  });
}

RowCheck SampledRows::check(DType out_dtype, const std::vector<uint8_t>& out, double accumulation_error,
                            double output_rounding) const {
  RowCheck r;
  const auto out_size = static_cast<size_t>(dtype_storage_bytes(out_dtype));
  for (size_t s = 0; s < rows_.size(); ++s)
    for (int64_t j = 0; j < n_; ++j) {
      size_t at = s * static_cast<size_t>(n_) + static_cast<size_t>(j);
      double want = sums_[at];
      double v = host_value(out_dtype, out.data() + static_cast<size_t>(rows_[s] * n_ + j) * out_size);
      double error = std::isnan(v) ? INFINITY : std::fabs(v - want);
      double atol = accumulation_error * magnitudes_[at];
      r.atol = std::max(r.atol, atol);
      r.max_abs_error = std::max(r.max_abs_error, error);
      r.ok = r.ok && error <= atol + output_rounding * std::fabs(want);
    }
  return r;
}

double accumulation_error(const GemmFeatures& f, int64_t k) {
  if (f.a == DType::i8) return 0;
  if (!is_fp8(f.a)) return 1e-5;
  const int64_t chained = f.fast_accumulation ? (k + 31) / 32 : 4;
  return 1e-5 + static_cast<double>(chained) * 33 * std::ldexp(1.0, -13);
}

bool small_integer_sums_exact(const GemmFeatures& f, int64_t k) { return !f.fast_accumulation || k < 1024; }

double output_rounding(DType dtype) {
  switch (dtype) {
    case DType::f32: return 1e-6;
    case DType::f16: return 1.0 / 2048;
    case DType::bf16: return 1.0 / 256;
    case DType::f8e4m3: return 1.0 / 16;
    case DType::f8e5m2: return 1.0 / 8;
    default: return 0;
  }
}

}  // namespace tilejit::ops::gemm_detail
