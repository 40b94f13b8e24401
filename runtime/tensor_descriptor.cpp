#include "runtime/tensor_descriptor.h"

#include "dsl/error.h"
#include "dsl/ir.h"
#include "runtime/tensor.h"

namespace tilejit {

TensorDescriptor TensorDescriptor::of(const Tensor& t, std::array<int64_t, 2> block) {
  if (t.rank() < 2 || t.rank() > static_cast<int>(2 + kMaxOuterDims))
    fail("TensorDescriptor::of: {} must have rank 2 to {}", t.describe(), 2 + kMaxOuterDims);
  const auto last = static_cast<size_t>(t.rank() - 1);
  if (t.strides()[last] != 1 && t.shape()[last] > 1)
    fail("TensorDescriptor::of: {} has column stride {}; a descriptor's columns must be contiguous", t.describe(),
         t.strides()[last]);
  TensorDescriptor d{t.data(), t.dtype(), {t.shape()[last - 1], t.shape()[last]}, t.strides()[last - 1], block, {},
                     &t.device()};
  // A dim of size 1 has any stride; TMA wants a valid one.
  for (size_t i = 0; i + 2 < t.shape().size(); ++i)
    d.outer.push_back({t.shape()[i], t.shape()[i] == 1 ? d.row_stride : t.strides()[i]});
  d.check();
  return d;
}

std::vector<int64_t> TensorDescriptor::block_shape() const {
  std::vector<int64_t> out(outer.size(), 1);
  out.insert(out.end(), block.begin(), block.end());
  return out;
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
  auto stride_problem = [&](const char* what, int64_t stride) {
    int64_t bytes = stride * element_bytes;
    if (bytes > 0 && bytes % 16 == 0 && bytes < (int64_t{1} << 40)) return std::string();
    return fmt::format("the {} ({} bytes) must be a multiple of 16 bytes in (0, 2^40)", what, bytes);
  };
  if (std::string p = stride_problem("row stride", row_stride); !p.empty()) return p;
  if (outer.size() > kMaxOuterDims) return fmt::format("{} outer dims: at most {}", outer.size(), kMaxOuterDims);
  for (size_t i = 0; i < outer.size(); ++i) {
    if (outer[i].size < 1 || outer[i].size > kMaxDim) return fmt::format("dims must be in [1, {}]", kMaxDim);
    if (std::string p = stride_problem(fmt::format("stride of outer dim {}", i).c_str(), outer[i].stride); !p.empty())
      return p;
  }
  return "";
}

void TensorDescriptor::check() const {
  if (std::string p = problem(); !p.empty()) fail("tensor descriptor {}: {}", describe(), p);
}

std::string TensorDescriptor::describe() const {
  if (outer.empty())
    return fmt::format("{}[{}, {}] (row stride {}) in blocks of {}x{}", dtype_name(dtype), shape[0], shape[1],
                       row_stride, block[0], block[1]);
  std::string dims, strides;
  for (const DescriptorDim& d : outer) {
    dims += fmt::format("{}, ", d.size);
    strides += fmt::format("{}, ", d.stride);
  }
  return fmt::format("{}[{}{}, {}] (strides {}{}) in blocks of {}x{}", dtype_name(dtype), dims, shape[0], shape[1],
                     strides, row_stride, block[0], block[1]);
}

}  // namespace tilejit
