// A gemm output checked against a double-precision reference on sampled rows: every column of
// kSampledRows rows spread over M (all of them when M is smaller), the last row always among
// them, so a wrong tile along N or at the edges shows while the reference stays cheap at any size.
// The reference is computed once and serves any number of checks (a tuner checks every
// candidate against it). The error allowed for an element is `accumulation_error` times the
// sum of |products| plus `output_rounding` times |reference|. The operands are read as the
// device holds them (no double copies of them: a tuning problem's are hundreds of millions of
// elements), and the sums run on every core.
#pragma once

#include <cstdint>
#include <vector>

#include "dsl/dtype.h"
#include "ops/gemm/gemm_problem.h"
#include "runtime/tensor.h"

namespace tilejit::ops::gemm_detail {

struct RowCheck {
  bool ok = true;
  double max_abs_error = 0;  // over the checked elements; infinite for a NaN
  double atol = 0;           // the largest absolute part of the allowed errors
};

// A matrix of `rows` x `cols` elements of `dtype`, as its bytes on the device hold it: row-major,
// or stored transposed ((cols, rows) row-major).
struct StoredMatrix {
  DType dtype;
  const uint8_t* bytes;
  int64_t rows, cols;
  bool transposed = false;

  // Where element (row, col) lies, in elements from `bytes`.
  int64_t index(int64_t row, int64_t col) const { return transposed ? col * rows + row : row * cols + col; }
};

class SampledRows {
 public:
  static constexpr int64_t kSampledRows = 64;
  // The host memory the reference of a (M, K) x (K, N) product holds, at most, while made.
  static long double host_bytes(int64_t k, int64_t n);

  // `a` (M, K) and `b` (K, N); both must outlive the constructor only.
  SampledRows(const StoredMatrix& a, const StoredMatrix& b);
  // `out`: the contiguous (M, N) output on its device, of which only the sampled rows are
  // copied to the host (a large output is a GiB; its rows checked, a few hundred KiB).
  RowCheck check(const Tensor& out, double accumulation_error, double output_rounding) const;

 private:
  int64_t m_, n_;
  std::vector<int64_t> rows_;
  std::vector<double> sums_, magnitudes_;  // (rows, N)
};

// The relative rounding of one output element of `dtype` (0 for integers: exact).
double output_rounding(DType dtype);

// The error a gemm's accumulator of `f` may carry over K, relative to the sum of |products|:
// none for i8; 1e-5 for a sum in f32; with fp8 on the tensor cores, less than 33 * 2^-13 of
// the sum for each k32 instruction chained in their own sum (each cuts its 33 addends to 13
// fraction bits of the largest; at most four per K block, or all K / 32 with fast
// accumulation).
double accumulation_error(const GemmFeatures& f, int64_t k);

// Whether the tensor cores sum fp8 operands holding integers in [-4, 4] exactly, so that
// accumulation_error's f32 part alone applies: their accumulator holds every integer below
// 2^14 (13 fraction bits of the largest addend), which the sum of a K block of at most 128
// products of |p| <= 16 stays under, and a chain with fast accumulation does below K = 1024.
bool small_integer_sums_exact(const GemmFeatures& f, int64_t k);

}  // namespace tilejit::ops::gemm_detail
