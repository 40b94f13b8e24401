// What a chain of fp8 tensor-core instructions keeps of its sum, probed on the emulator of a
// target or on a GPU: a 64 x 64 x 64 product with BLOCK_K 32, so two k32 instructions chain
// into one accumulator, on operands whose exact sums need 14 fraction bits.
//
// Row i of A holds s = +1 or -1 (by the row's parity) at k = 0, and s * 2^-7 at k = 1 and 32;
// column j of B holds 1 at k = 0, 2^-7 at k = 32, and at k = 1 2^-7 (j < 32) or 2^-6 (j >= 32).
// The exact sums are s + 2^-13 (j < 32) and s + 3 * 2^-14 (j >= 32). An accumulator that keeps
// 13 fraction bits, cut toward zero (runtime/emu/tensor_core_numerics.h), gives s and
// s * (1 + 2^-13) (the second instruction's 2^-14 is lost in both); an f32 sum would give the
// exact values.
#pragma once

#include <cmath>
#include <vector>

#include "tensor_core_check.h"

namespace tjops {

// The value the model gives for element (i, j) of the probe.
inline LD fp8_probe_model_value(int64_t i, int64_t j) {
  LD s = i % 2 ? -1.0L : 1.0L;
  return j < 32 ? s : s * (1 + std::ldexp(1.0L, -13));
}

// The probe's outputs, row-major, computed by the tensor cores of `device` (`arch` names the
// emulator's target: it picks the kernel's configuration, not the device).
inline std::vector<LD> fp8_accumulator_probe(const char* arch, Device& device) {
  const TensorCoreCase c{DType::f8e4m3, DType::f8e4m3, arch, 0, 64, 64, 32, 4, 64, 64, 64};
  Host a(DType::f8e4m3, size_t(c.m * c.k)), b(DType::f8e4m3, size_t(c.k * c.n));
  for (size_t i = 0; i < a.size(); ++i) a.set(i, 0);
  for (size_t i = 0; i < b.size(); ++i) b.set(i, 0);
  const LD tiny = std::ldexp(1.0L, -7);
  for (int64_t i = 0; i < c.m; ++i) {
    const LD s = i % 2 ? -1 : 1;
    a.set(size_t(i * c.k), s);
    a.set(size_t(i * c.k + 1), s * tiny);
    a.set(size_t(i * c.k + 32), s * tiny);
  }
  for (int64_t j = 0; j < c.n; ++j) {
    b.set(size_t(j), 1);
    b.set(size_t(c.n + j), j < 32 ? tiny : 2 * tiny);
    b.set(size_t(32 * c.n + j), tiny);
  }
  Tensor out = poisoned(DType::f32, {c.m * c.n}, device);
  run_tensor_core_case<DType::f8e4m3, DType::f8e4m3>(c, a, b, out, device);
  return download(out).values();
}

// Checks the probe's outputs against the model, element by element.
inline void expect_fp8_accumulator_model(const std::vector<LD>& got) {
  ASSERT_EQ(got.size(), size_t(64 * 64));
  std::vector<LD> want(got.size());
  for (size_t e = 0; e < got.size(); ++e) want[e] = fp8_probe_model_value(int64_t(e / 64), int64_t(e % 64));
  expect_values("fp8 accumulator probe", got, want, exact(), [](size_t e) {
    return "row " + std::to_string(e / 64) + " col " + std::to_string(e % 64);
  });
}

}  // namespace tjops
