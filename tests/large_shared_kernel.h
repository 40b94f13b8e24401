// A kernel whose layout conversion goes through more than 48 KiB of shared memory (a
// 128 x 128 f32 transpose), for the tests of dynamic shared memory above the default limit.
#pragma once

#include <gtest/gtest.h>

#include "dsl/kernel.h"
#include "runtime/jit.h"
#include "runtime/tensor.h"

namespace tilejit::testing_kernels {

// out (N, N) = transpose(x (N, N)), N = the constant N (128), one program.
inline dsl::Kernel transpose_kernel() {
  using namespace tilejit::dsl;
  return define_kernel("transpose", {"x", "out"}, {{"N", 128}}, [](const Constants& c, Ptr<f32> x, Ptr<f32> out) {
    int64_t n = c["N"];
    Tile rows = expand_dims(arange(0, n), 1), cols = expand_dims(arange(0, n), 0);  // (N, 1), (1, N)
    Tile tile = load(x + rows * n + cols);                                           // (N, N)
    store(out + rows * n + cols, trans(tile));
  });
}

// Transposes a 128 x 128 matrix on `device`; the kernel must need more than 48 KiB.
inline void check_transpose_through_large_shared_memory(Device& device) {
  JitKernel k(transpose_kernel());
  Tensor x = Tensor::empty(device, DType::f32, {128, 128}), out = Tensor::empty(device, DType::f32, {128, 128});
  std::vector<float> v(128 * 128);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i);
  x.copy_from_host(std::span<const float>(v));
  out.fill_bytes(0xff);
  const KernelArg args[] = {x, out};
  EXPECT_GT(k.with().prepare(device, args)->report().shared_bytes, 48 * 1024);
  k.launch(device.default_stream(), {1}, x, out);
  std::vector<float> got = out.to_host<float>();
  for (int i = 0; i < 128; ++i)
    for (int j = 0; j < 128; ++j) ASSERT_EQ(got[size_t(i) * 128 + j], v[size_t(j) * 128 + i]) << i << "," << j;
}

}  // namespace tilejit::testing_kernels
