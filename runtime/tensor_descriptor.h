// A 2-D row-major tensor in device memory as a kernel's TensorDesc parameter reads it
// (dsl/kernel.h): its elements, dims and row stride, and the block shape the kernel's
// desc_load reads (part of the kernel's specialization). TMA's rules hold on every device, so
// a descriptor that launches on one launches on all: the data 16-byte aligned, the row stride
// a multiple of 16 bytes, dims below 2^31, and a block of at most 256 x 256 elements whose
// dims are powers of two and whose rows hold at least 16 bytes.
//
//   auto a = TensorDescriptor::of(a_tensor, {128, 64});
//   kernel.launch(stream, grid, a, ...);   // the descriptor must outlive the call
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "dsl/dtype.h"

namespace tilejit {

class Tensor;

struct TensorDescriptor {
  void* data = nullptr;
  DType dtype = DType::f32;
  std::array<int64_t, 2> shape{};  // rows, columns
  int64_t row_stride = 0;          // elements from one row to the next
  std::array<int64_t, 2> block{};  // rows, columns of one desc_load

  // A descriptor of rank-2 `t`, whose columns must be contiguous.
  static TensorDescriptor of(const Tensor& t, std::array<int64_t, 2> block);
  // The rule the descriptor breaks, or "" when it breaks none.
  std::string problem() const;
  // Throws tilejit::Error naming the rule the descriptor breaks.
  void check() const;
  std::string describe() const;  // "bf16[1000, 512] (row stride 512) in blocks of 128x64"
};

// What a kernel parameter of type TensorDesc receives besides the tensor map: the tensor's
// address, dims and row stride, for targets that read the blocks without TMA.
struct TensorDescriptorParams {
  void* data = nullptr;
  int32_t rows = 0, columns = 0;
  int64_t row_stride = 0;
};

// The opaque 128-byte tensor map a kernel's TMA copies read (a CUtensorMap on a GPU), passed
// as a grid-constant kernel parameter. Left uninitialized by default: every launch reserves
// room for several, descriptors or not (TensorMap{} is zeros).
struct alignas(64) TensorMap {
  std::array<std::byte, 128> bytes;
};

}  // namespace tilejit
