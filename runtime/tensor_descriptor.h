// A tensor in device memory as a kernel's TensorDesc parameter reads it (dsl/kernel.h): rows
// of contiguous columns, with up to three outer dims before the rows (any strides, any order
// in memory), and the block shape the kernel's desc_load reads (part of the kernel's
// specialization): rows by columns at one index of each outer dim. TMA's rules hold on every
// device, so a descriptor that launches on one launches on all: the data 16-byte aligned,
// every stride a multiple of 16 bytes, dims below 2^31, and a block of at most 256 x 256
// elements whose dims are powers of two and whose rows hold at least 16 bytes.
//
//   auto a = TensorDescriptor::of(a_tensor, {128, 64});
//   kernel.launch(stream, grid, a, ...);   // the descriptor must outlive the call
//
// An outer dim lets a block stop at the edge of one matrix of a stack: keys of one (batch,
// head) of a (B, S, N, H) tensor are TensorDescriptor::of(k.permute({0, 2, 1, 3}), {64, 64}),
// and rows past S read zeros, not the next batch.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "dsl/dtype.h"

namespace tilejit {

class Device;

class Tensor;

// A dim before the rows of a TensorDescriptor.
struct DescriptorDim {
  int64_t size = 1;
  int64_t stride = 0;  // elements from one index to the next
  bool operator==(const DescriptorDim&) const = default;
};

struct TensorDescriptor {
  static constexpr size_t kMaxOuterDims = 3;  // TMA copies tensors of rank 5 at most

  void* data = nullptr;
  DType dtype = DType::f32;
  std::array<int64_t, 2> shape{};  // rows, columns
  int64_t row_stride = 0;          // elements from one row to the next
  std::array<int64_t, 2> block{};  // rows, columns of one desc_load
  std::vector<DescriptorDim> outer;  // the dims before the rows, outermost first
  const Device* device = nullptr;    // whose memory `data` is, when known (of() sets it)

  // A descriptor of `t` (rank 2 to 5), whose last dim must be contiguous: its last two dims
  // are the rows and columns, those before them the outer dims.
  static TensorDescriptor of(const Tensor& t, std::array<int64_t, 2> block);
  int rank() const { return static_cast<int>(2 + outer.size()); }
  // The block shape the kernel sees (ir::Type of a descriptor): 1 per outer dim, then rows, columns.
  std::vector<int64_t> block_shape() const;
  // The rule the descriptor breaks, or "" when it breaks none.
  std::string problem() const;
  // Throws tilejit::Error naming the rule the descriptor breaks.
  void check() const;
  // "bf16[1000, 512] (row stride 512) in blocks of 128x64"; with outer dims
  // "bf16[2, 4, 1000, 64] (strides 256000, 64, 256) in blocks of 128x64"
  std::string describe() const;
};

// What a kernel parameter of type TensorDesc receives besides the tensor map: the tensor's
// address, dims and strides, for targets that read the blocks without TMA. The kernel takes
// them as separate parameters: data, rows, columns, row stride, then each outer dim's size
// and stride.
struct TensorDescriptorParams {
  void* data = nullptr;
  int32_t rows = 0, columns = 0;
  int64_t row_stride = 0;
  std::array<int32_t, TensorDescriptor::kMaxOuterDims> outer_sizes{};
  std::array<int64_t, TensorDescriptor::kMaxOuterDims> outer_strides{};
};

// The opaque 128-byte tensor map a kernel's TMA copies read (a CUtensorMap on a GPU), passed
// as a grid-constant kernel parameter. Left uninitialized by default: every launch reserves
// room for several, descriptors or not (TensorMap{} is zeros).
struct alignas(64) TensorMap {
  std::array<std::byte, 128> bytes;
};

}  // namespace tilejit
