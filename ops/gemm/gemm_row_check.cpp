#include "ops/gemm/gemm_row_check.h"

#include <algorithm>
#include <cmath>

#include "autotune/parallel.h"
#include "dsl/error.h"
#include "ops/common/host_values.h"
#include "ops/common/sampled_indices.h"

namespace tilejit::ops::gemm_detail {

namespace {

// Sampled rows summed together against each column of B: independent sums the compiler keeps
// in one vector register, rather than one chain of dependent adds per row.
constexpr size_t kRowGroup = 8;
// Columns of B gathered into doubles at a time.
constexpr int64_t kColumnBlock = 8;

}  // namespace

long double SampledRows::host_bytes(int64_t k, int64_t n) {
  static_assert(kSampledRows % kRowGroup == 0, "the sampled rows fill whole groups");
  const long double columns = static_cast<long double>(autotune::host_cores() * kColumnBlock);  // the buffers
  return (static_cast<long double>(kSampledRows) * (k + 2 * n) + columns * k) * sizeof(double);
}

SampledRows::SampledRows(const StoredMatrix& a, const StoredMatrix& b) : m_(a.rows), n_(b.cols) {
  if (a.cols != b.rows) fail("gemm check: A is {} x {} but B is {} x {}", a.rows, a.cols, b.rows, b.cols);
  const int64_t k = a.cols, n = b.cols;
  const auto k_size = static_cast<size_t>(k);
  const ElementDecoder a_value(a.dtype), b_value(b.dtype);
  const auto a_size = static_cast<size_t>(dtype_storage_bytes(a.dtype)),
             b_size = static_cast<size_t>(dtype_storage_bytes(b.dtype));
  rows_ = sampled_indices(a.rows, kSampledRows);
  const size_t groups = (rows_.size() + kRowGroup - 1) / kRowGroup;
  // The sampled rows of A, each group's interleaved ((K, kRowGroup): the values one column of B
  // meets at step t lie together), padded with rows of zeros.
  std::vector<double> a_rows(groups * kRowGroup * k_size, 0.0);
  for (size_t r = 0; r < rows_.size(); ++r)
    for (int64_t t = 0; t < k; ++t)
      a_rows[(r / kRowGroup * k_size + static_cast<size_t>(t)) * kRowGroup + r % kRowGroup] =
          a_value(a.bytes + static_cast<size_t>(a.index(rows_[r], t)) * a_size);
  sums_.assign(rows_.size() * static_cast<size_t>(n), 0);
  magnitudes_.assign(sums_.size(), 0);
  // Each worker takes every workers-th block of columns into its own buffer, allocated here:
  // a job must not throw.
  const auto blocks = static_cast<size_t>((n + kColumnBlock - 1) / kColumnBlock);
  const size_t jobs = std::min(blocks, static_cast<size_t>(autotune::host_cores()));
  std::vector<double> buffers(jobs * kColumnBlock * k_size);
  autotune::run_in_parallel(jobs, static_cast<int>(jobs), [&](size_t job) {
    double* columns = buffers.data() + job * kColumnBlock * k_size;
    for (size_t block = job; block < blocks; block += jobs) {
      const int64_t first = static_cast<int64_t>(block) * kColumnBlock, last = std::min(n, first + kColumnBlock);
      for (int64_t t = 0; t < k; ++t)  // along B's rows for B stored (K, N)
        for (int64_t j = first; j < last; ++j)
          columns[static_cast<size_t>(j - first) * k_size + static_cast<size_t>(t)] =
              b_value(b.bytes + static_cast<size_t>(b.index(t, j)) * b_size);
      for (int64_t j = first; j < last; ++j) {
        const double* column = columns + static_cast<size_t>(j - first) * k_size;
        for (size_t g = 0; g < groups; ++g) {
          const double* rows = a_rows.data() + g * kRowGroup * k_size;
          double sum[kRowGroup] = {}, magnitude[kRowGroup] = {};
          for (int64_t t = 0; t < k; ++t)
#pragma GCC unroll 8  // whole, so that the sums stay in registers
            for (size_t q = 0; q < kRowGroup; ++q) {
              const double product = rows[static_cast<size_t>(t) * kRowGroup + q] * column[t];
              sum[q] += product, magnitude[q] += std::fabs(product);
            }
          for (size_t q = 0; q < kRowGroup && g * kRowGroup + q < rows_.size(); ++q) {
            const size_t at = (g * kRowGroup + q) * static_cast<size_t>(n) + static_cast<size_t>(j);
            sums_[at] = sum[q], magnitudes_[at] = magnitude[q];
          }
        }
      }
    }
  });
}

RowCheck SampledRows::check(const Tensor& out, double accumulation_error, double output_rounding) const {
  if (out.rank() != 2 || out.shape()[0] != m_ || out.shape()[1] != n_)
    fail("gemm check: {} is not the output checked, of {} x {}", out.describe(), m_, n_);
  const auto out_size = static_cast<size_t>(dtype_storage_bytes(out.dtype()));
  std::vector<uint8_t> row(static_cast<size_t>(n_) * out_size);
  RowCheck r;
  for (size_t s = 0; s < rows_.size(); ++s) {
    out.view({n_}, rows_[s] * n_).copy_to_host(row.data(), row.size());
    for (int64_t j = 0; j < n_; ++j) {
      size_t at = s * static_cast<size_t>(n_) + static_cast<size_t>(j);
      double want = sums_[at];
      double v = host_value(out.dtype(), &row[static_cast<size_t>(j) * out_size]);
      double error = std::isnan(v) ? INFINITY : std::fabs(v - want);
      double atol = accumulation_error * magnitudes_[at];
      r.atol = std::max(r.atol, atol);
      r.max_abs_error = std::max(r.max_abs_error, error);
      r.ok = r.ok && error <= atol + output_rounding * std::fabs(want);
    }
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
