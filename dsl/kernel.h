// Kernel definitions. A kernel is a C++ callable over typed parameters (Ptr<f32>,
// Scalar<i32>, ...) plus the compile-time constants it was declared with; tracing calls it
// once with symbolic tiles and records the tile IR.
//
//   auto k = define_kernel("vector_add", {"x", "y", "out", "n"}, {{"BLOCK", 1024}},
//       [](const Constants& c, Ptr<f32> x, Ptr<f32> y, Ptr<f32> out, Scalar<i32> n) {
//         Tile offs = program_id(0) * c["BLOCK"] + arange(0, c["BLOCK"]);
//         Tile mask = offs < n;
//         store(out + offs, load(x + offs, mask) + load(y + offs, mask), mask);
//       });
//
// A body that captures values (a lambda with captures) makes different kernels from one piece
// of code: BodyOrigin below says how the compiled-code cache tells them apart.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "dsl/builder.h"

namespace tilejit::dsl {

using namespace tilejit::dtypes;

template <DType D>
struct Ptr : Tile {
  explicit Ptr(const Tile& t) : Tile(t) {}
  static ir::Type param_type() { return ir::Type::pointer_to(D); }
};
template <DType D>
struct Scalar : Tile {
  explicit Scalar(const Tile& t) : Tile(t) {}
  static ir::Type param_type() { return ir::Type::scalar(D); }
};

// A tensor of D in global memory (rank 2 to 5) that the kernel reads blocks of with
// desc_load; the launch passes a TensorDescriptor (runtime/tensor_descriptor.h), whose rank
// and block shape the kernel is specialized for. On sm_90 the blocks arrive by TMA.
template <DType D>
struct TensorDesc : Tile {
  explicit TensorDesc(const Tile& t) : Tile(t) {}
  static ir::Type param_type() { return ir::Type::descriptor_of(D); }
};

struct ConstantDecl {
  std::string name;
  int64_t default_value;
};

// The compile-time constants a kernel is traced with. num_warps (default 4) and num_stages
// (default 1) are constants too; the code generator reads them, and warp_specialize and
// pingpong (0 or 1) where a kernel declares them.
class Constants {
 public:
  std::vector<std::pair<std::string, int64_t>> values;
  int64_t operator[](std::string_view name) const;  // throws for an undeclared name
  bool flag(std::string_view name) const { return (*this)[name] != 0; }
  bool has(std::string_view name) const;
};

// Where a kernel's body comes from, which lets a later process reuse the kernel's compiled
// code without tracing it (runtime/cuda/cuda_compile.h): an address inside the binary
// (executable or shared library) that defines the body, and what else the body's IR depends
// on beside the kernel's name, constants and arguments, as text. A lambda's captures are such
// state: `captures` is unknown (nullopt) for a lambda that captures anything until the code
// that made it names what it captured (Kernel::describe_captures). State a body reads from
// elsewhere (a global) must go into a constant or the name.
struct BodyOrigin {
  const void* code_anchor = nullptr;
  std::optional<std::string> captures;
};

class Kernel {
 public:
  using Body = std::function<void(const Constants&, std::span<const Tile>)>;
  Kernel(std::string name, std::vector<ir::Param> params, std::vector<ConstantDecl> constants, Body body,
         BodyOrigin origin = {});

  const std::string& name() const { return name_; }
  const std::vector<ir::Param>& params() const { return params_; }
  const std::vector<ConstantDecl>& constant_decls() const { return constants_; }
  // The body's code (BodyOrigin): an address inside the binary that defines it, which the
  // runtime identifies the binary by, so a cached kernel is reused without tracing only while
  // that code is unchanged. Null when unknown, or while what the body captures is.
  const void* code_anchor() const { return origin_.captures ? origin_.code_anchor : nullptr; }
  // What the body depends on beside its code, name, constants and arguments; empty for a body
  // that captures nothing.
  const std::string& captures() const;
  // Names what this kernel's body captured: `description` must tell apart every two kernels
  // made from one lambda whose traces may differ (ops use the key they memoize the kernel by).
  void describe_captures(std::string description) { origin_.captures = std::move(description); }

  // The declared constants with `overrides` applied; an unknown name is an error.
  Constants constants(const std::vector<std::pair<std::string, int64_t>>& overrides = {}) const;
  // The most common specialization: every pointer 16-byte aligned, every integer argument
  // divisible by 16 (what `tilejit emit` assumes unless told --generic).
  std::vector<ir::ArgFacts> aligned_facts() const;
  // Traces the kernel into verified tile IR. `facts` (one per parameter, or empty) is the
  // specialization the IR is traced for.
  std::unique_ptr<ir::Function> trace(const Constants& constants,
                                      const std::vector<ir::ArgFacts>& facts = {}) const;

 private:
  std::string name_;
  std::vector<ir::Param> params_;
  std::vector<ConstantDecl> constants_;
  Body body_;
  BodyOrigin origin_;
};

namespace detail {
// One instantiation per kernel body type, emitted in the binary that defines the body.
// Each instantiation returns the address of a variable of its own, so that no two are the same
// code: a linker that folds identical functions (lld's or gold's --icf=all) would give two
// bodies one anchor, and their kernels one launch key.
template <typename F>
const void* code_anchor() {
  static const char own = 0;
  return &own;
}

template <typename T>
struct CallableArgs : CallableArgs<decltype(&T::operator())> {};
template <typename C, typename R, typename... A>
struct CallableArgs<R (C::*)(const Constants&, A...) const> {
  using Tuple = std::tuple<A...>;
};
template <typename R, typename... A>
struct CallableArgs<R (*)(const Constants&, A...)> {
  using Tuple = std::tuple<A...>;
};
}  // namespace detail

// The origin of a body of type F: a function's own address; a lambda's type, with nothing
// captured when the lambda holds no state (a capturing one is unknown until described).
template <typename F>
BodyOrigin body_origin(const F& body) {
  if constexpr (std::is_pointer_v<F>) {
    return {reinterpret_cast<const void*>(body), std::string()};
  } else {
    std::optional<std::string> captures;
    if constexpr (std::is_empty_v<F>) captures = std::string();
    return {reinterpret_cast<const void*>(&detail::code_anchor<F>), captures};
  }
}

// Defines a kernel from a callable `(const Constants&, Ptr<..>/Scalar<..>/TensorDesc<..>...)`; `names`
// names its parameters in order.
template <typename F>
Kernel define_kernel(std::string name, std::vector<std::string> names, std::vector<ConstantDecl> constants,
                     F fn) {
  using Args = typename detail::CallableArgs<F>::Tuple;
  constexpr size_t n = std::tuple_size_v<Args>;
  if (names.size() != n)
    fail("define_kernel({}): {} parameter names for {} parameters", name, names.size(), n);
  std::vector<ir::Param> params;
  [&]<size_t... I>(std::index_sequence<I...>) {
    (params.push_back(ir::Param{names[I], std::tuple_element_t<I, Args>::param_type(), {}}), ...);
  }(std::make_index_sequence<n>());
  Kernel::Body body = [fn](const Constants& c, std::span<const Tile> args) {
    [&]<size_t... I>(std::index_sequence<I...>) {
      fn(c, std::tuple_element_t<I, Args>(args[I])...);
    }(std::make_index_sequence<n>());
  };
  return Kernel(std::move(name), std::move(params), std::move(constants), std::move(body), body_origin(fn));
}

}  // namespace tilejit::dsl
