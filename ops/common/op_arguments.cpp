#include "ops/common/op_arguments.h"

#include <fmt/ranges.h>

#include "ops/common/memory_overlap.h"

namespace tilejit::ops {

std::string dtype_list(std::initializer_list<DType> dtypes) {
  std::string out;
  size_t i = 0;
  for (DType d : dtypes) {
    if (i > 0) out += i + 1 == dtypes.size() ? " or " : ", ";
    out += dtype_name(d);
    ++i;
  }
  return out;
}

std::string shape_string(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

void OpArguments::dtype(std::string_view name, const Tensor& t, std::initializer_list<DType> allowed) const {
  for (DType d : allowed)
    if (t.dtype() == d) return;
  fail("{} must be {}, but is {}", name, dtype_list(allowed), t.describe());
}

void OpArguments::rank(std::string_view name, const Tensor& t, int rank) const {
  if (t.rank() != rank) fail("{} must have rank {}, but is {}", name, rank, t.describe());
}

void OpArguments::rank_between(std::string_view name, const Tensor& t, int lowest, int highest) const {
  if (t.rank() < lowest || t.rank() > highest)
    fail("{} must have rank {} to {}, but is {}", name, lowest, highest, t.describe());
}

void OpArguments::shape(std::string_view name, const Tensor& t, const std::vector<int64_t>& expected) const {
  if (t.shape() != expected) fail("{} must have shape {}, but is {}", name, shape_string(expected), t.describe());
}

void OpArguments::same_device(std::string_view name_a, const Tensor& a, std::string_view name_b,
                              const Tensor& b) const {
  if (&a.device() != &b.device())
    fail("{} and {} must be on one device, but {} is {} and {} is {}", name_a, name_b, name_a, a.describe(), name_b,
         b.describe());
}

Stream& OpArguments::stream_for(std::string_view name, const Tensor& t, Stream* stream) const {
  if (!stream) return t.device().default_stream();
  if (&stream->device() != &t.device())
    fail("the stream is on {}, but {} is {}", stream->device().info().name, name, t.describe());
  return *stream;
}

void OpArguments::no_self_overlap(std::string_view name, const Tensor& out) const {
  if (may_overlap_itself(out))
    fail("{} ({}, strides {}) has strides under which elements may share memory", name, out.describe(),
         shape_string(out.strides()));
}

void OpArguments::disjoint(std::string_view out_name, const Tensor& out, std::string_view in_name,
                           const Tensor& in) const {
  if (may_overlap(out, in))
    fail("{} ({}) overlaps the memory of {} ({}), which is read while {} is written", out_name, out.describe(),
         in_name, in.describe(), out_name);
}

void OpArguments::same_dtype(std::string_view name_a, const Tensor& a, std::string_view name_b,
                             const Tensor& b) const {
  if (a.dtype() != b.dtype())
    fail("{} and {} must have one dtype, but {} is {} and {} is {}", name_a, name_b, name_a, a.describe(), name_b,
         b.describe());
}

void OpArguments::contiguous(std::string_view name, const Tensor& t) const {
  if (!t.is_contiguous())
    fail("{} must be contiguous (row-major), but {} has strides {}", name, t.describe(), shape_string(t.strides()));
}

int OpArguments::normalized_dim(std::string_view what, int dim, int rank) const {
  if (dim < -rank || dim >= rank) fail("{} {} is out of range for rank {}", what, dim, rank);
  return dim < 0 ? dim + rank : dim;
}

}  // namespace tilejit::ops
