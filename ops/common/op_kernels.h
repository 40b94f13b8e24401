// How library ops hold their kernels. An op builds one DSL kernel per combination of what
// its signature depends on (dtypes, a fused epilogue, ...), once per process, and launches
// it through the JIT (runtime/jit.h), so a warm call is a map lookup and a launch.
//
//   const JitKernel& k = op_kernel(fmt::format("rmsnorm/{}", dtype_name(x.dtype())),
//                                  [&] { return rmsnorm_kernel(x.dtype()); });
//   k.with({{"BLOCK", block}}).launch(args.stream_for("x", x, stream), {rows}, x, gamma, y, n);
//
// Kernels whose parameter dtypes are only known at run time are defined with
// define_op_kernel, which takes the parameters as a list.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "dsl/kernel.h"
#include "ops/common/named_arguments.h"
#include "runtime/jit.h"
#include "runtime/tensor.h"

namespace tilejit::ops {

// The kernel memoized under `key`, made by `make` on first use; thread-safe. The key must
// name everything `make` depends on; it describes what the kernel's body captures
// (dsl::Kernel::describe_captures), so two kernels of one lambda never share compiled code.
const JitKernel& op_kernel(const std::string& key, const std::function<dsl::Kernel()>& make);
// The same for a kernel whose parameters are `args`' (NamedArguments::params), which `make`
// receives: memoized under `key` and the parameters' names and types, so that calls whose
// arguments differ in a dtype, or in a tensor given as a descriptor, never share a kernel.
const JitKernel& op_kernel(const std::string& key, const NamedArguments& args,
                           const std::function<dsl::Kernel(std::vector<ir::Param>)>& make);

// A parameter of a kernel defined with define_op_kernel.
inline ir::Param pointer_param(std::string name, DType element) {
  return ir::Param{std::move(name), ir::Type::pointer_to(element), {}};
}
inline ir::Param scalar_param(std::string name, DType dtype) {
  return ir::Param{std::move(name), ir::Type::scalar(dtype), {}};
}

// A kernel over `params` whose body receives them as a span, in order. The body's origin is
// found as define_kernel finds it (dsl/kernel.h); op_kernel describes what it captures.
template <typename F>
dsl::Kernel define_op_kernel(std::string name, std::vector<ir::Param> params,
                             std::vector<dsl::ConstantDecl> constants, F body) {
  dsl::BodyOrigin origin = dsl::body_origin(body);
  return dsl::Kernel(std::move(name), std::move(params), std::move(constants),
                     [body](const dsl::Constants& c, std::span<const dsl::Tile> args) { body(c, args); },
                     std::move(origin));
}

}  // namespace tilejit::ops
