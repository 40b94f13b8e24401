// Kernel arguments by name, for ops whose kernels take some parameters only when a feature
// is on (a bias, a residual, ...). The host side lists the arguments of a call once; the
// kernel's parameters are derived from that same list, and the kernel body looks its tiles
// up by name, so the signature and the launch can never disagree:
//
//   NamedArguments args;
//   args.add("x", x);
//   if (bias) args.add("bias", *bias);
//   args.add("n", int32_t(n));
//   Kernel k = define_op_kernel("op", args.params(), {...}, [](const Constants& c, std::span<const Tile> t) {
//     NamedTiles in(params, t);   // the same params
//     if (in.has("bias")) ...
//   });
//   k.launch_args(stream, dims, args.values());
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <memory>
#include <vector>

#include "dsl/tile.h"
#include "runtime/jit.h"

namespace tilejit::ops {

class NamedArguments {
 public:
  void add(std::string name, const KernelArg& value);
  // A descriptor borrowed by add must outlive the launch: a temporary one goes to add_owned.
  void add(std::string name, TensorDescriptor&& descriptor) = delete;
  // A tensor descriptor these arguments keep (copies share it) for as long as they live; add
  // borrows one that outlives the launch instead.
  void add_owned(std::string name, TensorDescriptor descriptor);
  // The kernel parameters these arguments fill, in order: a pointer of the argument's dtype
  // or a scalar of its kind.
  std::vector<ir::Param> params() const;
  const std::vector<KernelArg>& values() const { return values_; }
  // The parameters' names and types ("x:ptr<bf16>,n:i32"): what a memo key of a kernel made
  // from params() must name (op_kernels.h).
  std::string signature() const;

 private:
  ir::Type param_type(size_t i) const;  // the parameter argument i fills

  std::vector<std::string> names_;
  std::vector<KernelArg> values_;
  std::vector<std::shared_ptr<const TensorDescriptor>> descriptors_;
};

// A traced kernel's parameter tiles by name.
class NamedTiles {
 public:
  NamedTiles(const std::vector<ir::Param>& params, std::span<const dsl::Tile> tiles);
  bool has(std::string_view name) const;
  const dsl::Tile& operator[](std::string_view name) const;  // throws for a name it lacks

 private:
  const std::vector<ir::Param>& params_;
  std::span<const dsl::Tile> tiles_;
};

}  // namespace tilejit::ops
