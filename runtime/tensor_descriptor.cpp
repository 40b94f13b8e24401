#include "runtime/tensor_descriptor.h"

#include "dsl/error.h"
#include "dsl/ir.h"
#include "runtime/tensor.h"

namespace tilejit {

TensorDescriptor TensorDescriptor::of(const Tensor& t, std::array<int64_t, 2> block) {
  if (t.rank() != 2) fail("TensorDescriptor::of: {} must have rank 2", t.describe());
  if (t.strides()[1] != 1 && t.shape()[1] > 1)
    fail("TensorDescriptor::of: {} has column stride {}; a descriptor's columns must be contiguous", t.describe(),
         t.strides()[1]);
  TensorDescriptor d{t.data(), t.dtype(), {t.shape()[0], t.shape()[1]}, t.strides()[0], block};
  d.check();
  return d;
}

std::string TensorDescriptor::problem() const {
  constexpr int64_t kMaxDim = (int64_t{1} << 31) - 1;
  int64_t element_bytes = dtype_storage_bytes(dtype);
  if (std::string p = ir::descriptor_block_problem(dtype, {block[0], block[1]}); !p.empty()) return p;
  if (!data) return "its data pointer is null";
  if (reinterpret_cast<uintptr_t>(data) % 16) return fmt::format("its data {} is not 16-byte aligned", data);
  for (int64_t d : shape)
    if (d < 1 || d > kMaxDim) return fmt::format("dims must be in [1, {}]", kMaxDim);
  if (row_stride < shape[1]) return "the row stride is smaller than a row";
  if (row_stride * element_bytes % 16 || row_stride * element_bytes >= (int64_t{1} << 40))
    return fmt::format("the row stride ({} bytes) must be a multiple of 16 bytes below 2^40", row_stride * element_bytes);
  return "";
}

void TensorDescriptor::check() const {
  if (std::string p = problem(); !p.empty()) fail("tensor descriptor {}: {}", describe(), p);
}

std::string TensorDescriptor::describe() const {
  return fmt::format("{}[{}, {}] (row stride {}) in blocks of {}x{}", dtype_name(dtype), shape[0], shape[1], row_stride,
                     block[0], block[1]);
}

}  // namespace tilejit
