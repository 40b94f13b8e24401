// The kernel launch API, the same for every device:
//
//   JitKernel add(ops::vector_add_kernel());
//   add.with({{"BLOCK", 1024}}).launch(stream, {cdiv(n, 1024)}, x, y, out, n);
//
// Arguments are checked against the kernel's signature (count, pointer element types,
// scalar types). The specialization each launch needs (integer arguments equal to 1, the
// power of two up to 16 dividing each integer and aligning each pointer) is read off the
// arguments, and the kernel
// built for it is remembered per device: after the first launch of a specialization, a
// launch is a lookup and a driver call, with no tracing and no LLVM work.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "dsl/kernel.h"
#include "runtime/device.h"
#include "runtime/tensor_descriptor.h"

namespace tilejit {

class Tensor;

namespace detail {
template <typename T>
constexpr bool has_dtype = std::is_same_v<T, float> || std::is_same_v<T, int8_t> ||
                           std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t> || std::is_same_v<T, bool>;
template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::f32;
  else if constexpr (std::is_same_v<T, int8_t>) return DType::i8;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::i32;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::i64;
  else return DType::i1;
}
}  // namespace detail

// One launch argument: a device pointer (typed, or untyped for element types C++ has no
// type for), a scalar, or a tensor descriptor (referred to, not copied: it must outlive the
// launch call).
class KernelArg {
 public:
  enum class Kind : uint8_t { pointer, untyped_pointer, i32, i64, f32, tensor_descriptor };

  template <typename T>
    requires detail::has_dtype<std::remove_const_t<T>>
  KernelArg(T* device_pointer)  // NOLINT: implicit by design, so launch() reads naturally
      : kind_(Kind::pointer), dtype_(detail::dtype_of<std::remove_const_t<T>>()) {
    set(const_cast<std::remove_const_t<T>*>(device_pointer));
  }
  // Held sign-extended: an i32 parameter reads the low half, an i64 one (widening) the whole.
  KernelArg(int32_t v) : kind_(Kind::i32) { set(int64_t{v}); }  // NOLINT
  KernelArg(int64_t v) : kind_(Kind::i64) { set(v); }  // NOLINT
  KernelArg(float v) : kind_(Kind::f32) { set(v); }    // NOLINT
  KernelArg(const Tensor& t);                          // NOLINT: its data pointer, typed by its dtype
  KernelArg(const TensorDescriptor& d)                 // NOLINT
      : kind_(Kind::tensor_descriptor), dtype_(d.dtype), descriptor_(&d), device_(d.device) {}
  // A pointer to elements of `dtype` (f16, bf16, fp8, ... have no C++ type).
  static KernelArg pointer(void* device_pointer, DType dtype);
  // A pointer whose element type is not checked.
  static KernelArg untyped(void* device_pointer);

  Kind kind() const { return kind_; }
  DType dtype() const { return dtype_; }
  uint64_t bits() const { return bits_; }
  const void* value() const { return &bits_; }
  const TensorDescriptor& descriptor() const { return *descriptor_; }  // Kind::tensor_descriptor only
  // The device whose memory it points to, when it came from a Tensor (null for raw pointers).
  const Device* device() const { return device_; }
  std::string describe() const;  // "an f32 pointer", "an i32 scalar", ...

 private:
  KernelArg(Kind kind, DType dtype) : kind_(kind), dtype_(dtype) {}
  template <typename V>
  void set(V v) {
    static_assert(sizeof(V) <= sizeof(bits_));
    __builtin_memcpy(&bits_, &v, sizeof(V));
  }
  Kind kind_;
  DType dtype_ = DType::i32;
  uint64_t bits_ = 0;
  const TensorDescriptor* descriptor_ = nullptr;
  const Device* device_ = nullptr;
};

// A kernel with its constants fixed. Cheap to copy; copies share the compiled kernels.
class BoundKernel {
 public:
  template <typename... Args>
  void launch(Stream& stream, Dim3 grid, const Args&... args) const {
    const KernelArg packed[] = {KernelArg(args)...};
    launch_args(stream, LaunchDims{grid, {}}, packed);
  }
  void launch_args(Stream& stream, const LaunchDims& dims, std::span<const KernelArg> args) const;
  // The kernel the given arguments launch on `device`, built if needed (its report says how).
  std::shared_ptr<LoadedKernel> prepare(Device& device, std::span<const KernelArg> args) const;

  const dsl::Kernel& kernel() const;
  const dsl::Constants& constants() const;
  // How many kernels this configuration has built (per device and specialization).
  int builds() const;

  struct State;
  explicit BoundKernel(std::shared_ptr<State> state) : state_(std::move(state)) {}

 private:
  std::shared_ptr<State> state_;
};

class JitKernel {
 public:
  explicit JitKernel(dsl::Kernel kernel);
  // The kernel with `overrides` applied to its constants (an unknown name is an error).
  // The same overrides give the same BoundKernel, compiled kernels included.
  BoundKernel with(const std::vector<std::pair<std::string, int64_t>>& overrides = {}) const;
  // Launches with the declared constants. Each call looks its BoundKernel up by constants;
  // a hot loop keeps the BoundKernel from with() and launches that (a lookup less).
  template <typename... Args>
  void launch(Stream& stream, Dim3 grid, const Args&... args) const {
    with().launch(stream, grid, args...);
  }
  const dsl::Kernel& kernel() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace tilejit
