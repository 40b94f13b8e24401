// A small tensor: device memory with a dtype, a shape and strides (in elements), shared by
// copies. Memory from PyTorch, JAX or CuPy comes in through DLPack without a copy and goes
// out the same way.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dsl/dtype.h"
#include "runtime/device.h"

struct DLManagedTensor;

namespace tilejit {

class Tensor {
 public:
  // A new contiguous (row-major) tensor on `device`; its contents are undefined.
  static Tensor empty(Device& device, DType dtype, std::vector<int64_t> shape);
  // A new contiguous tensor for work enqueued on `stream` only, such as an op's temporaries:
  // its memory is allocated and, when the last copy goes away, freed in the stream's order
  // (Device::allocate_on), so neither waits for the device. `stream` must outlive it.
  static Tensor scratch(Stream& stream, DType dtype, std::vector<int64_t> shape);
  // Wraps a DLPack tensor without copying; `managed`'s deleter runs when the last copy of
  // the Tensor goes away. CUDA memory maps to Device::cuda(device_id), CPU memory to the
  // emulator. Bool tensors (DLPack 0.8's code) become i1. `as` reads the bytes of an 8-bit
  // integer or bool tensor as a 1-byte dtype DLPack 0.6 has no code for (f8e4m3, f8e5m2,
  // e8m0, i1): how fp8 data and scales come from frameworks. Throws for other devices, dtypes
  // tilejit lacks, a malformed shape, negative dims or strides, misaligned data, and a span of
  // 2^62 bytes; `managed` is taken over either way (its deleter has run when it throws).
  static Tensor from_dlpack(DLManagedTensor* managed, std::optional<DType> as = std::nullopt);
  // A DLPack view of this tensor that keeps its memory alive until the consumer calls the
  // deleter.
  DLManagedTensor* to_dlpack() const;

  Device& device() const { return *device_; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t dim(int i) const;  // negative counts from the end
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const;
  int64_t bytes() const { return numel() * dtype_storage_bytes(dtype_); }
  bool is_contiguous() const;
  void* data() const { return data_; }
  std::string describe() const;  // "f32[128, 64] on cuda:0"
  // A contiguous tensor of `shape` over this contiguous tensor's memory, starting
  // `element_offset` elements in; it shares (and keeps alive) the memory. Throws when it would
  // reach past the end.
  Tensor view(std::vector<int64_t> shape, int64_t element_offset = 0) const;
  // The same memory with dims reordered: dim i of the result is dim dims[i] of this tensor
  // (negative counts from the end); a permutation of every dim, else an error.
  Tensor permute(const std::vector<int>& dims) const;
  // Elements start .. start + length - 1 along `dim` (negative counts from the end): the same
  // memory and strides.
  Tensor slice(int dim, int64_t start, int64_t length) const;
  // The tensor of one less rank at `index` along `dim` (negative counts from the end).
  Tensor select(int dim, int64_t index) const;
  // The tensor of one more rank with a dim of size 1 at `dim` (0 to rank; negative counts
  // from the end, -1 appending), as numpy's expand_dims: the same memory and strides.
  Tensor unsqueeze(int dim) const;

  // Whole-tensor copies for contiguous tensors (synchronous, on the default stream).
  void copy_from_host(const void* src, size_t bytes);
  void copy_to_host(void* dst, size_t bytes) const;
  // These two take T of the dtype's size (float for f32, uint16_t for bf16, ...).
  template <typename T>
  void copy_from_host(std::span<const T> values) {
    check_element_size(sizeof(T), "copy_from_host");
    copy_from_host(values.data(), values.size_bytes());
  }
  template <typename T>
  std::vector<T> to_host() const {
    check_element_size(sizeof(T), "to_host");
    std::vector<T> out(static_cast<size_t>(bytes()) / sizeof(T));
    copy_to_host(out.data(), out.size() * sizeof(T));
    return out;
  }
  void fill_bytes(uint8_t value);

 private:
  Tensor() = default;
  // A contiguous tensor of `shape` with no memory yet; `maker` names the caller in errors.
  static Tensor unallocated(Device& device, DType dtype, std::vector<int64_t> shape, const char* maker);
  size_t allocation_bytes() const;
  void check_element_size(size_t bytes, const char* use) const;

  std::shared_ptr<void> storage_;  // keeps the memory alive
  Device* device_ = nullptr;
  void* data_ = nullptr;
  DType dtype_ = DType::f32;
  std::vector<int64_t> shape_, strides_;
};

}  // namespace tilejit
