// Checks of an op's arguments, made before any device work. Every failure is a
// tilejit::Error that starts with the op's name and names the argument, its dtype, shape
// and device:
//
//   OpArguments args("gemm");
//   args.dtype("a", a, {DType::f16, DType::bf16});
//   args.rank("a", a, 2);
//   args.same_device("a", a, "b", b);
//   if (a.dim(1) != b.dim(0)) args.fail("a's dim 1 ({}) must equal b's dim 0 ({})", a.dim(1), b.dim(0));
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "dsl/error.h"
#include "runtime/tensor.h"

namespace tilejit::ops {

class OpArguments {
 public:
  explicit OpArguments(std::string op) : op_(std::move(op)) {}
  const std::string& op() const { return op_; }

  // "OP: message"
  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) const {
    throw Error(op_ + ": " + fmt::format(format, std::forward<Args>(args)...));
  }

  void dtype(std::string_view name, const Tensor& t, std::initializer_list<DType> allowed) const;
  void rank(std::string_view name, const Tensor& t, int rank) const;
  void rank_between(std::string_view name, const Tensor& t, int lowest, int highest) const;
  void shape(std::string_view name, const Tensor& t, const std::vector<int64_t>& expected) const;
  void same_device(std::string_view name_a, const Tensor& a, std::string_view name_b, const Tensor& b) const;
  void same_dtype(std::string_view name_a, const Tensor& a, std::string_view name_b, const Tensor& b) const;
  // Row-major with no gaps (the ops that take strided operands say so and check strides themselves).
  void contiguous(std::string_view name, const Tensor& t) const;
  // An output no two of whose elements may share an address (ops/common/memory_overlap.h).
  void no_self_overlap(std::string_view name, const Tensor& out) const;
  // An output whose memory does not overlap an input's: the op reads `in` while it writes
  // `out` (ops/common/memory_overlap.h).
  void disjoint(std::string_view out_name, const Tensor& out, std::string_view in_name, const Tensor& in) const;
  // `stream`, or the default stream of `t`'s device when null. A stream of another device is
  // an error that names both devices.
  Stream& stream_for(std::string_view name, const Tensor& t, Stream* stream) const;
  // The dimension index `dim` (negative counts from the end) within a tensor of `rank`
  // dimensions, normalized; `what` names it in the error ("axis", "scatter_dimension").
  int normalized_dim(std::string_view what, int dim, int rank) const;

 private:
  std::string op_;
};

// "f32, f16 or bf16"
std::string dtype_list(std::initializer_list<DType> dtypes);
// "[2, 3, 4]"
std::string shape_string(const std::vector<int64_t>& shape);

}  // namespace tilejit::ops
