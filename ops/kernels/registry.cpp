#include "ops/kernels/registry.h"

#include "ops/kernels/examples.h"

namespace tilejit::ops {

const std::vector<RegisteredKernel>& registered_kernels() {
  static const std::vector<RegisteredKernel> kernels = {
      {vector_add_kernel(), "out[i] = x[i] + y[i] over f32 vectors"},
      {softmax_kernel(), "row softmax of an f32 matrix, one row per program"},
      {layernorm_kernel(), "layernorm forward with mean and rsigma outputs, one row per program"},
      {gemm_kernel(), "tiled f32 GEMM C = A @ B with a K loop"},
      {argmax_kernel(), "per-row argmax of an f32 matrix"},
  };
  return kernels;
}

std::vector<std::string> registered_kernel_names() {
  std::vector<std::string> names;
  for (auto& k : registered_kernels()) names.push_back(k.kernel.name());
  return names;
}

const RegisteredKernel& find_kernel(const std::string& name) {
  for (auto& k : registered_kernels())
    if (k.kernel.name() == name) return k;
  fail("no registered kernel '{}' (registered: {})", name, fmt::join(registered_kernel_names(), ", "));
}

}  // namespace tilejit::ops
