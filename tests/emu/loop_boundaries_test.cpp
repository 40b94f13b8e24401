// The numerics of loops that cross layout and shared-memory boundaries (tests/loop_kernels.h)
// on the emulated sm_80 and sm_90a: an online softmax, whose row statistics the loop carries
// in the rows of the dot's accumulator, and a dot operand computed before its loop, which
// sm_90a stores to shared memory once for every iteration's wgmma.
#include <cmath>

#include "ops_test_util.h"
#include "../loop_kernels.h"

namespace tjops {
namespace {

const char* const kArchs[] = {"sm_80", "sm_90a"};

TEST(LoopBoundaries, OnlineSoftmaxRowStatistics) {
  static JitKernel kernel(testing_kernels::online_softmax_kernel());
  const int64_t rows = 64, keys = 48, head = 32;
  for (const char* arch : kArchs) {
    SCOPED_TRACE(arch);
    TJ_SEEDED_RNG(rng);
    Device& device = Device::by_name(std::string("emu:") + arch);
    Host q = random_host(DType::bf16, size_t(rows * head), rng, -2, 2);
    Host k = random_host(DType::bf16, size_t(keys * head), rng, -2, 2);
    Tensor m_out = poisoned(DType::f32, {rows}, device), l_out = poisoned(DType::f32, {rows}, device);
    bind(kernel).launch(device.default_stream(), Dim3{1, 1, 1}, upload(q, {}, device), upload(k, {}, device), m_out,
                        l_out, int32_t(keys));
    // The logits are f32 sums of exact products, each off by about 1e-7 of its sum of
    // |products|; m is one of them, and each term of l is off by the error of its exponent.
    std::vector<LD> m(static_cast<size_t>(rows)), l(m), m_scale(m), l_scale(m);
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<LD> logits(static_cast<size_t>(keys));
      LD magnitude = 0;
      for (int64_t j = 0; j < keys; ++j) {
        LD sum = 0, terms = 0;
        for (int64_t t = 0; t < head; ++t) {
          LD p = q.get(size_t(r * head + t)) * k.get(size_t(j * head + t));
          sum += p, terms += std::fabs(p);
        }
        logits[size_t(j)] = sum;
        magnitude = std::max(magnitude, terms);
      }
      LD max = *std::max_element(logits.begin(), logits.end()), total = 0;
      for (LD x : logits) total += std::exp(x - max);
      m[size_t(r)] = max, l[size_t(r)] = total;
      m_scale[size_t(r)] = magnitude;
      l_scale[size_t(r)] = total * (2 * magnitude + 1);
    }
    expect_scaled("running max", download(m_out).values(), m, m_scale, 1e-5);
    expect_scaled("running sum", download(l_out).values(), l, l_scale, 1e-5);
  }
}

TEST(LoopBoundaries, DotOperandComputedBeforeTheLoop) {
  static JitKernel kernel(testing_kernels::invariant_weight_kernel());
  const int64_t rows = 64, n = 16, block_k = 32, k = 96;
  for (const char* arch : kArchs) {
    SCOPED_TRACE(arch);
    TJ_SEEDED_RNG(rng);
    Device& device = Device::by_name(std::string("emu:") + arch);
    Host x = random_host(DType::bf16, size_t(rows * k), rng, -2, 2);
    Host w = random_host(DType::bf16, size_t(n * block_k), rng, -2, 2);
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

}  // namespace
}  // namespace tjops
