// The int8 ops (FJFormer's quant_int8, matmul_true_int8, q_matmul_int8) and numpy-style
// matmul against long-double references of SEMANTICS.md, on the emulator.
#include <dlpack/dlpack.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/gemm.h"
#include "ops/int8.h"
#include "tests/emu/ops_test_util.h"
#include "tests/error_message.h"

namespace {

using namespace tjops;

// quant_int8 of one value, as the reference: clip(round_half_to_even(x), -127, 127), and NaN
// converted to int8 as XLA converts it, to 0.
LD quant(LD x) { return std::isnan(x) ? 0 : std::clamp<LD>(std::nearbyint(x), -127, 127); }

using tilejit::testing_util::expect_error_naming;

TEST(Int8, QuantInt8RoundsHalfToEvenClipsAndZeroesNaN) {
  TJ_SEEDED_RNG(rng);
  const LD inf = std::numeric_limits<LD>::infinity();
  const std::vector<LD> edges = {0.5, 1.5,  2.5,  -0.5, -1.5, -2.5, 126.5, 127.5, 128, -127.5,
                                 -128, -300, 1e6, 0.49, -0,   NAN,  inf,   -inf};
  for (DType d : {DType::f32, DType::f16, DType::bf16}) {
    SCOPED_TRACE(name_of(d));
    Host x = random_host(d, 3000, rng, -160, 160);
    for (size_t i = 0; i < edges.size(); ++i) x.set(i, edges[i]);
    Host q = download(tilejit::ops::quant_int8(upload(x, {30, 100})));
    std::vector<LD> want(x.size());
    for (size_t i = 0; i < want.size(); ++i) want[i] = quant(x.get(i));
    expect_values("quant_int8", q, want, exact(), [&](size_t i) { return "x = " + fmt_ld(x.get(i)); });
  }
}

// The reference's per-row quantization in x's dtype: s = 127 / max|x|, q = quant(x * s). A NaN
// counts as an infinity (the reference's NaN scale and this one's 0 both make the row NaN).
struct RowReference {
  std::vector<LD> q, inv_scale;
};
RowReference quantize_rows(const Host& x, int64_t r, int64_t c) {
  const LD inf = std::numeric_limits<LD>::infinity();
  RowReference out{std::vector<LD>(size_t(r * c)), std::vector<LD>(size_t(r))};
  for (int64_t i = 0; i < r; ++i) {
    LD amax = 0;
    for (int64_t j = 0; j < c; ++j) {
      LD v = x.get(size_t(i * c + j));
      amax = std::max(amax, std::isnan(v) ? inf : std::fabs(v));
    }
    LD s = amax > 0 ? round_to(x.dtype, 127 / amax) : 0;
    out.inv_scale[size_t(i)] = amax > 0 ? (s > 0 ? round_to(DType::f32, 1 / s) : inf) : 0;
    for (int64_t j = 0; j < c; ++j) out.q[size_t(i * c + j)] = quant(round_to(x.dtype, x.get(size_t(i * c + j)) * s));
  }
  return out;
}

TEST(Int8, QuantizeRowsIsTheReferencesArithmetic) {
  TJ_SEEDED_RNG(rng);
  for (DType d : {DType::f32, DType::bf16, DType::f16}) {
    SCOPED_TRACE(name_of(d));
    const int64_t r = 37, c = 300;
    Host x = random_host(d, size_t(r * c), rng, -3, 3);
    for (int64_t j = 0; j < c; ++j) x.set(size_t(5 * c + j), 0);  // an all-zero row quantizes to 0
    x.set(size_t(7 * c + 200), NAN);  // rows holding NaN or inf: scale 0, inv_scale inf
    x.set(size_t(8 * c + 3), -std::numeric_limits<LD>::infinity());
    RowReference want = quantize_rows(x, r, c);
    for (int64_t row : {7, 8}) EXPECT_TRUE(std::isinf(want.inv_scale[size_t(row)]));  // the reference's own check
    // Rows stored as columns (x^T's transposed view) take the per-column kernel.
    Host stored_transposed(d, size_t(r * c));
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) stored_transposed.set_raw(size_t(j * r + i), x.raw(size_t(i * c + j)));
    for (const Tensor& view : {upload(x, {r, c}), upload(stored_transposed, {c, r}).permute({1, 0})}) {
      SCOPED_TRACE(view.describe());
      tilejit::ops::RowQuantized got = tilejit::ops::quantize_rows_int8(view);
      expect_values("q", download(got.q), want.q, exact());
      expect_values("inv_scale", download(got.inv_scale), want.inv_scale, exact());
    }
  }
}

// q_matmul_int8's reference for a (m, k) and w (k, n): acc / (a_s * w_s) in the inputs' dtype;
// 0 for an all-zero row or column (SEMANTICS.md's NaN case) and NaN for one that holds a NaN or
// an infinity. `rounded_once`: acc times the reciprocals rounded once to the dtype, as the kernel
// computes it (ops/int8.h: for f16 finite where the reference's own roundings overflow).
std::vector<LD> q_matmul_reference(const Host& a, const Host& w, int64_t m, int64_t k, int64_t n,
                                   bool rounded_once = false) {
  DType d = a.dtype;
  RowReference qa = quantize_rows(a, m, k);
  Host wt(d, size_t(k * n));
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < n; ++j) wt.set_raw(size_t(j * k + i), w.raw(size_t(i * n + j)));
  RowReference qw = quantize_rows(wt, n, k);
  std::vector<LD> want(size_t(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      LD ia = qa.inv_scale[size_t(i)], iw = qw.inv_scale[size_t(j)];
      LD& out = want[size_t(i * n + j)];
      if (std::isinf(ia) || std::isinf(iw)) {
        out = NAN;
      } else if (ia == 0 || iw == 0) {
        out = 0;
      } else {
        LD acc = 0;
        for (int64_t t = 0; t < k; ++t) acc += qa.q[size_t(i * k + t)] * qw.q[size_t(j * k + t)];
        out = rounded_once ? round_to(d, acc * ia * iw) : round_to(d, round_to(d, acc) / round_to(d, (1 / ia) * (1 / iw)));
      }
    }
  return want;
}

TEST(Int8, QMatmulInt8) {
  TJ_SEEDED_RNG(rng);
  for (DType d : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(name_of(d));
    const int64_t m = 33, k = 150, n = 41;
    Host a = random_host(d, size_t(m * k), rng, -2, 2), w = random_host(d, size_t(k * n), rng, -1, 1);
    for (int64_t j = 0; j < k; ++j) a.set(size_t(3 * k + j), 0);  // row 3 of a: all zero
    for (int64_t i = 0; i < k; ++i) w.set(size_t(i * n + 7), 0);  // column 7 of w: all zero
    Host got = download(tilejit::ops::q_matmul_int8(upload(a, {m, k}), upload(w, {k, n})));
    // The kernel multiplies by f32 reciprocals and rounds once: a few ulps of the dtype apart.
    expect_values("q_matmul_int8", got, q_matmul_reference(a, w, m, k, n),
                  d == DType::f32 ? Tol{2e-6, 1e-30} : Tol{1.6e-2, 1e-30});
    // Into a transposed view of a poisoned (n, m) buffer.
    Tensor out_nm = poisoned(d, {n, m});
    tilejit::ops::q_matmul_int8(upload(a, {m, k}), upload(w, {k, n}), out_nm.permute({1, 0}));
    std::vector<LD> want = q_matmul_reference(a, w, m, k, n), want_nm(want.size());
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) want_nm[size_t(j * m + i)] = want[size_t(i * n + j)];
    expect_values("q_matmul_int8 into a transposed view", download(out_nm), want_nm,
                  d == DType::f32 ? Tol{2e-6, 1e-30} : Tol{1.6e-2, 1e-30});
  }
}

// No rows of a or no columns of w: an empty result, nothing launched that could fail.
TEST(Int8, QMatmulInt8WithNoRowsOrColumns) {
  Tensor a = Tensor::empty(emu(), DType::f32, {0, 5}), w = Tensor::empty(emu(), DType::f32, {5, 3});
  EXPECT_EQ(tilejit::ops::q_matmul_int8(a, w).shape(), (std::vector<int64_t>{0, 3}));
  Tensor a4 = Tensor::empty(emu(), DType::bf16, {4, 5}), w0 = Tensor::empty(emu(), DType::bf16, {5, 0});
  EXPECT_EQ(tilejit::ops::q_matmul_int8(a4, w0).shape(), (std::vector<int64_t>{4, 0}));
}

// f16: the reference's i32 sums (here up to 127 * 127 * 150) pass 65504 once rounded to f16, and
// so does a_s * w_s when max|a| * max|w| < 127^2 / 65504 (here 0.03): its result is inf or 0
// there. The kernel rounds acc / (a_s * w_s) once and stays finite (ops/int8.h).
TEST(Int8, QMatmulInt8InF16RoundsOnce) {
  TJ_SEEDED_RNG(rng);
  const int64_t m = 33, k = 150, n = 41;
  for (double range : {2.0, 0.1}) {
    SCOPED_TRACE(range);
    Host a = random_host(DType::f16, size_t(m * k), rng, -range, range);
    Host w = random_host(DType::f16, size_t(k * n), rng, -0.3, 0.3);
    std::vector<LD> literal = q_matmul_reference(a, w, m, k, n);
    const auto overflowed = std::count_if(literal.begin(), literal.end(), [](LD x) { return !std::isfinite(x) || x == 0; });
    EXPECT_GT(size_t(overflowed), literal.size() / 4);  // the reference's own overflow (inf, NaN or 0)
    Host got = download(tilejit::ops::q_matmul_int8(upload(a, {m, k}), upload(w, {k, n})));
    expect_values("q_matmul_int8 f16", got, q_matmul_reference(a, w, m, k, n, /*rounded_once=*/true),
                  Tol{1e-3, 1e-30});
  }
}

// A NaN or an infinity anywhere in a row of a or a column of w makes that row / column NaN
// (FJFormer's scale is NaN, or 0 with 0 / 0 to follow); the rest stays exact.
TEST(Int8, QMatmulInt8NaNAndInfinityGiveNaNRowsAndColumns) {
  TJ_SEEDED_RNG(rng);
  const LD inf = std::numeric_limits<LD>::infinity();
  for (DType d : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(name_of(d));
    const int64_t m = 20, k = 200, n = 24;
    Host a = random_host(d, size_t(m * k), rng, -2, 2), w = random_host(d, size_t(k * n), rng, -1, 1);
    a.set(size_t(2 * k + 170), NAN);   // past the first column block
    a.set(size_t(5 * k + 3), inf);
    a.set(size_t(9 * k + 0), -inf);
    for (int64_t j = 0; j < k; ++j) a.set(size_t(11 * k + j), 0);
    w.set(size_t(130 * n + 4), NAN);
    w.set(size_t(7 * n + 19), -inf);
    Host got = download(tilejit::ops::q_matmul_int8(upload(a, {m, k}), upload(w, {k, n})));
    std::vector<LD> want = q_matmul_reference(a, w, m, k, n);
    for (int64_t j : {0, 4, 19}) EXPECT_TRUE(std::isnan(want[size_t(2 * n + j)]));  // the reference's own check
    EXPECT_TRUE(std::isnan(want[size_t(11 * n + 4)]));  // a zero row meets a NaN column
    expect_values("q_matmul_int8", got, want, d == DType::f32 ? Tol{2e-6, 1e-30} : Tol{1.6e-2, 1e-30});
  }
}

TEST(Int8, MatmulBroadcastsLikeNumpy) {
  TJ_SEEDED_RNG(rng);
  const int64_t m = 9, k = 20, n = 7;
  Host a = random_host(DType::i8, size_t(2 * 1 * m * k), rng, -128, 127);
  Host b = random_host(DType::i8, size_t(3 * k * n), rng, -128, 127);
  Tensor out = tilejit::ops::matmul_true_int8(upload(a, {2, 1, m, k}), upload(b, {3, k, n}));
  ASSERT_EQ(out.shape(), (std::vector<int64_t>{2, 3, m, n}));
  std::vector<LD> want(size_t(2 * 3 * m * n));
  for (int64_t x = 0; x < 2; ++x)
    for (int64_t y = 0; y < 3; ++y)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          LD s = 0;
          for (int64_t t = 0; t < k; ++t) s += a.get(size_t(x * m * k + i * k + t)) * b.get(size_t(y * k * n + t * n + j));
          want[size_t(((x * 3 + y) * m + i) * n + j)] = s;
        }
  expect_values("matmul_true_int8 (2,1,M,K) x (3,K,N)", download(out), want, exact());

  // 1-D operands: a vector times a matrix, a matrix times a vector.
  Host v = random_host(DType::bf16, size_t(k), rng, -1, 1), mat = random_host(DType::bf16, size_t(k * n), rng, -1, 1);
  Tensor vm = tilejit::ops::matmul(upload(v, {k}), upload(mat, {k, n}));
  ASSERT_EQ(vm.shape(), (std::vector<int64_t>{n}));
  Tensor mv = tilejit::ops::matmul(upload(mat, {n, k}), upload(v, {k}));
  ASSERT_EQ(mv.shape(), (std::vector<int64_t>{n}));
  std::vector<LD> want_vm(static_cast<size_t>(n)), want_mv(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t t = 0; t < k; ++t) {
      want_vm[size_t(j)] += v.get(size_t(t)) * mat.get(size_t(t * n + j));
      want_mv[size_t(j)] += mat.get(size_t(j * k + t)) * v.get(size_t(t));
    }
  for (LD& x : want_vm) x = round_to(DType::bf16, x);
  for (LD& x : want_mv) x = round_to(DType::bf16, x);
  expect_values("vector @ matrix", download(vm), want_vm, {8e-3, 1e-4});
  expect_values("matrix @ vector", download(mv), want_mv, {8e-3, 1e-4});

  // A vector is its own transpose; the matrix stored transposed gives the same products.
  auto transposed = [](const Host& h, int64_t rows, int64_t cols) {  // (rows, cols) -> (cols, rows)
    Host t(h.dtype, h.size());
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) t.set_raw(size_t(j * rows + i), h.raw(size_t(i * cols + j)));
    return t;
  };
  tilejit::ops::GemmOptions both;
  both.transpose_a = both.transpose_b = true;
  Tensor vm_t = tilejit::ops::matmul(upload(v, {k}), upload(transposed(mat, k, n), {n, k}), both);
  ASSERT_EQ(vm_t.shape(), (std::vector<int64_t>{n}));
  expect_values("vector^T @ matrix^T", download(vm_t), want_vm, {8e-3, 1e-4});
  Tensor mv_t = tilejit::ops::matmul(upload(transposed(mat, n, k), {k, n}), upload(v, {k}), both);
  ASSERT_EQ(mv_t.shape(), (std::vector<int64_t>{n}));
  expect_values("matrix^T @ vector^T", download(mv_t), want_mv, {8e-3, 1e-4});

  // A strided vector: column 1 of a (K, 3) matrix.
  Host columns(DType::bf16, size_t(k * 3));
  for (int64_t t = 0; t < k; ++t)
    for (int64_t c = 0; c < 3; ++c) columns.set_raw(size_t(t * 3 + c), c == 1 ? v.raw(size_t(t)) : 0x7fc0);
  Tensor strided = upload(columns, {k, 3}).select(1, 1);
  ASSERT_EQ(strided.strides(), (std::vector<int64_t>{3}));
  expect_values("strided vector @ matrix", download(tilejit::ops::matmul(strided, upload(mat, {k, n}))), want_vm,
                {8e-3, 1e-4});
  expect_values("matrix @ strided vector", download(tilejit::ops::matmul(upload(mat, {n, k}), strided)), want_mv,
                {8e-3, 1e-4});
}

TEST(Int8, Errors) {
  auto t = [](DType d, std::vector<int64_t> shape) { return Tensor::empty(emu(), d, shape); };
  expect_error_naming([&] { tilejit::ops::quant_int8(t(DType::i32, {4})); }, {"quant_int8", "x must be", "i32[4]"});
  expect_error_naming([&] { tilejit::ops::quant_int8(t(DType::f32, {4, 6}).slice(1, 0, 3)); }, {"quant_int8", "contiguous"});
  expect_error_naming([&] { tilejit::ops::matmul_true_int8(t(DType::bf16, {4, 4}), t(DType::i8, {4, 4})); },
               {"matmul_true_int8", "a must be i8", "bf16[4, 4]"});
  expect_error_naming([&] { tilejit::ops::matmul_true_int8(t(DType::i8, {2, 4, 4}), t(DType::i8, {3, 4, 4})); },
               {"batch", "2", "3"});
  expect_error_naming([&] { tilejit::ops::matmul(t(DType::i8, {5, 2, 4, 4}), t(DType::i8, {3, 1, 4, 4})); },
               {"matmul", "batch dims do not broadcast", "5 vs 3"});
  expect_error_naming([&] { tilejit::ops::q_matmul_int8(t(DType::f32, {4, 8}), t(DType::f32, {6, 3})); },
               {"q_matmul_int8", "a's columns (8)", "w's rows (6)"});
  expect_error_naming([&] { tilejit::ops::q_matmul_int8(t(DType::f32, {4, 8}), t(DType::bf16, {8, 3})); },
               {"q_matmul_int8", "one dtype"});
  expect_error_naming([&] { tilejit::ops::q_matmul_int8(t(DType::f32, {2, 4, 8}), t(DType::f32, {8, 3})); },
               {"q_matmul_int8", "a must have rank 2"});
  expect_error_naming([&] { tilejit::ops::q_matmul_int8(t(DType::f32, {4, 0}), t(DType::f32, {0, 3})); },
               {"q_matmul_int8", "f32[4, 0]", "no columns and rows (K = 0)"});
  Tensor wrong_out = t(DType::f32, {4, 4});
  expect_error_naming([&] { tilejit::ops::q_matmul_int8(t(DType::f32, {4, 8}), t(DType::f32, {8, 3}), wrong_out); },
               {"q_matmul_int8", "out must have shape [4, 3]", "f32[4, 4]"});

  // A broadcast x (DLPack allows a stride of 0) of 2^31 elements over one row: its quantized
  // copy is indexed in 32 bits, and quant_int8's blocks of 1024 would pass 2^31 from 2^31 - 1023.
  DLManagedTensor* row = t(DType::f32, {4096}).to_dlpack();
  static int64_t shape[2] = {int64_t{1} << 19, 4096}, strides[2] = {0, 1};
  row->dl_tensor.ndim = 2, row->dl_tensor.shape = shape, row->dl_tensor.strides = strides;
  Tensor broadcast = Tensor::from_dlpack(row);
  expect_error_naming([&] { tilejit::ops::quantize_rows_int8(broadcast); },
               {"quantize_rows_int8", "has or spans over 2147482624 elements", "f32[524288, 4096]"});
  // q_matmul_int8 checks such a w, and an output the gemm could not index, with the rest of its
  // arguments, before it launches anything.
  {
    Tensor a = t(DType::f32, {2, 4096});
    DLManagedTensor* column = t(DType::f32, {1 << 19}).to_dlpack();
    static int64_t w_shape[2] = {4096, int64_t{1} << 19}, w_strides[2] = {0, 1};
    column->dl_tensor.ndim = 2, column->dl_tensor.shape = w_shape, column->dl_tensor.strides = w_strides;
    expect_error_naming([&] { tilejit::ops::q_matmul_int8(a, Tensor::from_dlpack(column)); },
                 {"q_matmul_int8", "w (its columns as rows)", "has or spans over 2147482624 elements"});
    DLManagedTensor* wide = t(DType::f32, {4}).to_dlpack();
    static int64_t out_shape[2] = {2, 2}, out_strides[2] = {int64_t{1} << 31, 1};
    wide->dl_tensor.shape = out_shape, wide->dl_tensor.strides = out_strides, wide->dl_tensor.ndim = 2;
    expect_error_naming([&] { tilejit::ops::q_matmul_int8(a, t(DType::f32, {4096, 2}), Tensor::from_dlpack(wide)); },
                 {"gemm", "out", "32-bit indexing"});
  }
  DLManagedTensor* flat = t(DType::f32, {1}).to_dlpack();
  static int64_t flat_shape[1] = {(int64_t{1} << 31) - 1023}, flat_strides[1] = {0};
  flat->dl_tensor.shape = flat_shape, flat->dl_tensor.strides = flat_strides;
  expect_error_naming([&] { tilejit::ops::quant_int8(Tensor::from_dlpack(flat)); },
               {"quant_int8", "has over 2147482624 elements, beyond the kernel's 32-bit indexing"});
}

}  // namespace
