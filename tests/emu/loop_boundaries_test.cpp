// The numerics of loops that cross layout and shared-memory boundaries (tests/loop_kernels.h)
// on the emulated sm_80 and sm_90a: an online softmax, whose row statistics the loop carries
// in the rows of the dot's accumulator, also over a bias, a mask and a row offset loaded in
// the logits' layout; a dot operand computed before its loop, which sm_90a stores to shared
// memory once for every iteration's wgmma; an accumulator carried by two nested loops; a
// computed row statistic broadcast over a product, and two loaded tiles added to one; a 16-bit
// tile carried in words.
#include <cmath>
#include <functional>

#include "ops_test_util.h"
#include "../loop_kernels.h"

namespace tjops {
namespace {

const char* const kArchs[] = {"sm_80", "sm_90a"};

// A logit and the sum of the magnitudes of the terms it adds up (its error scale).
struct Logit {
  LD value, magnitude;
};

// Checks each row's max m and sum l of exp(logit - m) over `keys` logits, with tolerances from
// the logits' magnitudes: a logit is off by about 1e-7 of its magnitude (f32 sums), m is one
// of them, and each term of l is off by the error of its exponent.
void expect_row_statistics(const Tensor& m_out, const Tensor& l_out, int64_t rows, int64_t keys,
                           const std::function<Logit(int64_t, int64_t)>& logit) {
  std::vector<LD> m(static_cast<size_t>(rows)), l(m), m_scale(m), l_scale(m);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<Logit> logits;
    for (int64_t j = 0; j < keys; ++j) logits.push_back(logit(r, j));
    LD max = -INFINITY, magnitude = 0, total = 0;
    for (const Logit& x : logits) max = std::max(max, x.value), magnitude = std::max(magnitude, x.magnitude);
    for (const Logit& x : logits) total += std::exp(x.value - max);
    m[size_t(r)] = max, l[size_t(r)] = total;
    m_scale[size_t(r)] = magnitude;
    l_scale[size_t(r)] = total * (2 * magnitude + 1);
  }
  expect_scaled("running max", download(m_out).values(), m, m_scale, 1e-5);
  expect_scaled("running sum", download(l_out).values(), l, l_scale, 1e-5);
}

// Row r of q (rows, head) times row j of k (keys, head).
Logit q_dot_k(const Host& q, const Host& k, int64_t head, int64_t r, int64_t j) {
  LD sum = 0, terms = 0;
  for (int64_t t = 0; t < head; ++t) {
    LD p = q.get(size_t(r * head + t)) * k.get(size_t(j * head + t));
    sum += p, terms += std::fabs(p);
  }
  return {sum, terms};
}

// The online softmax's row statistics, plain and over a bias, a mask and a row offset.
TEST(LoopBoundaries, OnlineSoftmaxRowStatistics) {
  static JitKernel plain(testing_kernels::online_softmax_kernel()), biased(testing_kernels::biased_softmax_kernel());
  const int64_t rows = 64, keys = 48, head = 32;
  for (bool with_bias : {false, true})
    for (const char* arch : kArchs) {
      SCOPED_TRACE(std::string(arch) + (with_bias ? " biased" : ""));
      TJ_SEEDED_RNG(rng);
      Device& device = Device::by_name(std::string("emu:") + arch);
      Host q = random_host(DType::bf16, size_t(rows * head), rng, -2, 2);
      Host k = random_host(DType::bf16, size_t(keys * head), rng, -2, 2);
      Host bias = random_host(DType::f32, size_t(rows * keys), rng, -8, 8);
      Host mask = random_full_range(DType::i1, size_t(rows * keys), rng);
      Host offset = random_host(DType::f32, size_t(rows), rng, -8, 8);
      Tensor m_out = poisoned(DType::f32, {rows}, device), l_out = poisoned(DType::f32, {rows}, device);
      Stream& stream = device.default_stream();
      if (with_bias)
        bind(biased).launch(stream, Dim3{1, 1, 1}, upload(q, {}, device), upload(k, {}, device),
                            upload(bias, {}, device), upload(mask, {}, device), upload(offset, {}, device), m_out,
                            l_out, int32_t(keys));
      else
        bind(plain).launch(stream, Dim3{1, 1, 1}, upload(q, {}, device), upload(k, {}, device), m_out, l_out,
                           int32_t(keys));
      expect_row_statistics(m_out, l_out, rows, keys, [&](int64_t r, int64_t j) {
        if (!with_bias) return q_dot_k(q, k, head, r, j);
        size_t at = size_t(r * keys + j);
        Logit x{-10, 10};
        if (mask.get(at) != 0) {
          x = q_dot_k(q, k, head, r, j);
          x.value += bias.get(at), x.magnitude += std::fabs(bias.get(at));
        }
        LD row_offset = offset.get(size_t(r));
        return Logit{x.value - row_offset, x.magnitude + std::fabs(row_offset)};
      });
    }
}

// Random bf16 operands of a product: x (rows, K) and w with `w_elements` elements.
std::pair<Host, Host> product_operands(Rng& rng, int64_t rows, int64_t k, int64_t w_elements) {
  return {random_host(DType::bf16, size_t(rows * k), rng, -2, 2), random_host(DType::bf16, size_t(w_elements), rng, -2, 2)};
}

// out = x @ w^T per column block, by `kernel` (invariant_weight_kernel's parameters).
void expect_products_per_block(JitKernel& kernel) {
  const int64_t rows = 64, n = 16, block_k = 32, k = 128;
  for (const char* arch : kArchs) {
    SCOPED_TRACE(arch);
    TJ_SEEDED_RNG(rng);
    Device& device = Device::by_name(std::string("emu:") + arch);
    auto [x, w] = product_operands(rng, rows, k, n * block_k);
    Tensor out = poisoned(DType::f32, {rows * n}, device);
    bind(kernel).launch(device.default_stream(), Dim3{1, 1, 1}, upload(x, {}, device), upload(w, {}, device), out,
                        int32_t(k));
    // out = x @ b with b (K, N) = w^T repeated down K.
    Host b(DType::bf16, size_t(k * n));
    for (int64_t t = 0; t < k; ++t)
      for (int64_t j = 0; j < n; ++j) b.set_raw(size_t(t * n + j), w.raw(size_t(j * block_k + t % block_k)));
    MatmulReference ref = matmul_reference(x, b, rows, n, k);
    expect_scaled("x @ w^T per block", download(out).values(), ref.sum, ref.magnitude, 1e-5);
  }
}

TEST(LoopBoundaries, DotOperandComputedBeforeTheLoop) {
  static JitKernel kernel(testing_kernels::invariant_weight_kernel());
  expect_products_per_block(kernel);
}

TEST(LoopBoundaries, AccumulatorCarriedByNestedLoops) {
  static JitKernel kernel(testing_kernels::invariant_weight_kernel(/*two_passes=*/true));
  expect_products_per_block(kernel);
}

// A row statistic broadcast over a product, and two loaded tiles added to it.
TEST(LoopBoundaries, TilesAddedToAProduct) {
  static JitKernel row_sum(testing_kernels::tiles_plus_product_kernel(false)),
      two_tiles(testing_kernels::tiles_plus_product_kernel(true));
  const int64_t rows = 64, n = 128, k = 16;
  for (bool both : {false, true})
    for (const char* arch : kArchs) {
      SCOPED_TRACE(std::string(arch) + (both ? " y + z" : " row sums of y"));
      TJ_SEEDED_RNG(rng);
      Device& device = Device::by_name(std::string("emu:") + arch);
      Host x = random_host(DType::bf16, size_t(rows * k), rng, -2, 2);
      Host w = random_host(DType::bf16, size_t(n * k), rng, -2, 2);
      Host y = random_host(DType::f32, size_t(rows * n), rng, -2, 2);
      Host z = random_host(DType::f32, size_t(rows * n), rng, -2, 2);
      Tensor out = poisoned(DType::f32, {rows}, device);
      bind(both ? two_tiles : row_sum)
          .launch(device.default_stream(), Dim3{1, 1, 1}, upload(x, {}, device), upload(w, {}, device),
                  upload(y, {}, device), upload(z, {}, device), out);
      std::vector<LD> expected(static_cast<size_t>(rows)), scale(expected);
      for (int64_t r = 0; r < rows; ++r) {
        LD y_sum = 0, y_magnitude = 0;
        for (int64_t j = 0; j < n; ++j) {
          LD v = y.get(size_t(r * n + j));
          y_sum += v, y_magnitude += std::fabs(v);
        }
        LD best = -INFINITY, magnitude = 0;
        for (int64_t j = 0; j < n; ++j) {
          Logit p = q_dot_k(x, w, k, r, j);
          LD yj = y.get(size_t(r * n + j)), zj = z.get(size_t(r * n + j));
          LD addend = both ? yj + zj : y_sum;
          best = std::max(best, p.value + addend);
          magnitude = std::max(magnitude, p.magnitude + (both ? std::fabs(yj) + std::fabs(zj) : y_magnitude));
        }
        expected[size_t(r)] = best, scale[size_t(r)] = magnitude;
      }
      expect_scaled("row max of x . w^T + the addend", download(out).values(), expected, scale, 1e-5);
    }
}

// A product scaled per column by powers of two decoded from bytes, decoded where the product
// lives and once per element (moved there through shared memory): exact scalings of the same
// sums.
TEST(LoopBoundaries, ColumnScalesDecodedOncePerElement) {
  static JitKernel in_place(testing_kernels::column_scaled_product_kernel(false)),
      once(testing_kernels::column_scaled_product_kernel(true));
  const int64_t rows = 64, n = 128, k = 16;
  for (const char* arch : kArchs) {
    SCOPED_TRACE(arch);
    TJ_SEEDED_RNG(rng);
    Device& device = Device::by_name(std::string("emu:") + arch);
    auto [x, w] = product_operands(rng, rows, k, n * k);
    Host bytes(DType::i8, size_t(n));
    for (size_t j = 0; j < bytes.size(); ++j) bytes.set_raw(j, uint64_t(rng.integer(100, 154)));
    for (JitKernel* kernel : {&in_place, &once}) {
      Tensor out = poisoned(DType::f32, {rows, n}, device);
      bind(*kernel).launch(device.default_stream(), Dim3{1, 1, 1}, upload(x, {}, device), upload(w, {}, device),
                           upload(bytes, {}, device), out);
      std::vector<LD> expected, scale;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < n; ++j) {
          Logit p = q_dot_k(x, w, k, r, j);
          LD factor = std::ldexp(LD{1}, int(bytes.raw(size_t(j))) - 127);
          expected.push_back(p.value * factor), scale.push_back(p.magnitude * factor);
        }
      expect_scaled(kernel == &once ? "decoded once" : "decoded in place", download(out).values(), expected, scale,
                    1e-5);
    }
  }
}

// A bf16 tile carried by a loop in 32-bit words (two elements each), doubled at each step:
// exact in bf16 for these magnitudes.
TEST(LoopBoundaries, SixteenBitTileCarriedInWords) {
  static JitKernel kernel(testing_kernels::doubled_in_a_loop_kernel());
  const int64_t n = 64, steps = 4;
  for (const char* arch : kArchs) {
    SCOPED_TRACE(arch);
    TJ_SEEDED_RNG(rng);
    Device& device = Device::by_name(std::string("emu:") + arch);
    Host x = random_host(DType::bf16, size_t(n * n), rng, -2, 2);
    Tensor out = poisoned(DType::bf16, {n, n}, device);
    bind(kernel).launch(device.default_stream(), Dim3{1, 1, 1}, upload(x, {}, device), out);
    std::vector<LD> expected;
    for (size_t i = 0; i < size_t(n * n); ++i) expected.push_back(x.get(i) * (1 << steps));
    expect_values("x doubled 4 times", download(out), expected, exact());
  }
}

}  // namespace
}  // namespace tjops
