// What fp8 tensor-core instructions keep of their sum, probed on the emulator of a target or
// on a GPU: a 64 x 64 x 64 product with BLOCK_K 32, so two k32 instructions chain into one
// accumulator, on operands whose exact sums need more than 13 fraction bits.
//
// Row i of A holds s = +1 or -1 (by the row's parity) at k = 0 and s * 2^-7 at k = 1, 2 and
// 32, zeros elsewhere. B holds 1 at k = 0 and, by group of 16 columns, at k = 1, 2 and 32:
//   group 0:  2^-7,  0,    2^-7   products s * 2^-14 in each instruction
//   group 1:  2^-6,  0,    2^-7   s * 2^-13 in the first, kept; s * 2^-14 in the second
//   group 2:  2^-7,  2^-7, 2^-7   two products of s * 2^-14 in one instruction
//   group 3: -2^-7,  0,    0      one product of -s * 2^-14
// runtime/emu/tensor_core_numerics.h's model (each addend cut to 13 fraction bits of the
// largest, toward zero) gives s, s * (1 + 2^-13), s, s; an exact sum would give
// s * (1 + 2^-13), s * (1 + 3 * 2^-14), s * (1 + 3 * 2^-14), s * (1 - 2^-14). Group 2 tells the
// model from one that sums an instruction exactly before cutting it (s * (1 + 2^-13)); groups
// 0 and 2 on odd rows and group 3 on even rows from one that cuts negative addends toward
// minus infinity (-(1 + 2^-13) and 1 - 2^-13).
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "tensor_core_check.h"

namespace tjops {

// The value the model gives for element (i, j) of the probe.
inline LD fp8_probe_model_value(int64_t i, int64_t j) {
  LD s = i % 2 ? -1.0L : 1.0L;
  return j / 16 == 1 ? s * (1 + std::ldexp(1.0L, -13)) : s;
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
    for (int64_t k : {1, 2, 32}) a.set(size_t(i * c.k + k), s * tiny);
  }
  for (int64_t j = 0; j < c.n; ++j) {
    const int64_t group = j / 16;
    b.set(size_t(j), 1);
    b.set(size_t(c.n + j), group == 1 ? 2 * tiny : group == 3 ? -tiny : tiny);
    if (group == 2) b.set(size_t(2 * c.n + j), tiny);
    if (group != 3) b.set(size_t(32 * c.n + j), tiny);
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
    return "row " + std::to_string(e / 64) + " col " + std::to_string(e % 64) + " (group " +
           std::to_string(e % 64 / 16) + ")";
  });
}

}  // namespace tjops
