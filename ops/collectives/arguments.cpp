#include "ops/collectives/arguments.h"

#include <fmt/ranges.h>

#include "dsl/error.h"

namespace tilejit::ops {

void check_groups(const RankGroups& groups, int world_size, const char* op) {
  if (groups.empty()) return;
  std::vector<int> group_of_rank(static_cast<size_t>(world_size), -1);
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].empty()) fail("{}: groups {}: group {} is empty", op, groups, g);
    if (groups[g].size() != groups[0].size())
      fail("{}: groups {}: the groups must all have one size, but group 0 has {} ranks and group {} has {}", op, groups,
           groups[0].size(), g, groups[g].size());
    for (int rank : groups[g]) {
      if (rank < 0 || rank >= world_size)
        fail("{}: groups {}: rank {} is not a rank of the communicator (ranks 0 to {})", op, groups, rank,
             world_size - 1);
      int& seen = group_of_rank[static_cast<size_t>(rank)];
      if (seen >= 0)
        fail(
            "{}: groups {}: rank {} appears more than once (in group {} and group {}); the groups must cover every "
            "rank exactly once",
            op, groups, rank, seen, g);
      seen = static_cast<int>(g);
    }
  }
  std::vector<int> missing;
  for (int r = 0; r < world_size; ++r)
    if (group_of_rank[static_cast<size_t>(r)] < 0) missing.push_back(r);
  if (!missing.empty())
    fail("{}: groups {}: {} {} in no group; the groups must cover every rank of the {} exactly once", op, groups,
         missing.size() == 1 ? "rank" : "ranks", fmt::join(missing, ", "), world_size);
}

int checked_group_size(const RankGroups& groups, int world_size, const char* op) {
  check_groups(groups, world_size, op);
  return groups.empty() ? world_size : static_cast<int>(groups[0].size());
}

int normalize_axis(int axis, int rank, const char* op, const char* what, const Tensor& tensor) {
  if (axis < -rank || axis >= rank)
    fail("{}: {} {} is out of range for {} (valid: {} to {})", op, what, axis, tensor.describe(), -rank, rank - 1);
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> part_shape(const Tensor& tensor, const char* name, int axis, size_t dim, bool tiled, int k,
                                const char* op, const char* what) {
  std::vector<int64_t> shape = tensor.shape();
  const int64_t size = shape[dim];
  if (tiled && size % k != 0)
    fail("{}: {} {} of {} {} has size {}, which the group size {} does not divide (tiled)", op, what, axis, name,
         tensor.describe(), size, k);
  if (!tiled && size != k)
    fail("{}: {} {} of {} {} has size {}, but untiled it must equal the group size {}", op, what, axis, name,
         tensor.describe(), size, k);
  if (tiled)
    shape[dim] = size / k;
  else
    shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(dim));
  return shape;
}

void check_input(const Tensor& x, const Communicator& comm, const char* op, const char* what) {
  if (!x.is_contiguous()) fail("{}: {} ({}) must be contiguous", op, what, x.describe());
  if (&x.device() != &comm.device())
    fail("{}: {} is {}, but the communicator ({}) is on {}", op, what, x.describe(), comm.describe(),
         comm.device().info().name);
}

void check_output(const Tensor& out, const Tensor& x, const std::vector<int64_t>& shape, const Communicator& comm,
                  const char* op) {
  check_input(out, comm, op, "out");
  if (out.dtype() != x.dtype() || out.shape() != shape)
    fail("{}: out is {}, but for x {} it must be {}[{}]", op, out.describe(), x.describe(), dtype_name(x.dtype()),
         fmt::join(shape, ", "));
}

void check_in_place_slot(const Tensor& small, const char* small_name, const Tensor& big, const char* big_name,
                         int64_t slot, const char* op) {
  auto begin = [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data()); };
  uintptr_t s = begin(small), b = begin(big);
  auto small_bytes = static_cast<uintptr_t>(small.bytes()), big_bytes = static_cast<uintptr_t>(big.bytes());
  bool overlap = s < b + big_bytes && b < s + small_bytes;
  int64_t slot_byte = slot * dtype_storage_bytes(big.dtype());
  if (!overlap || (s >= b && s - b == static_cast<uintptr_t>(slot_byte))) return;
  fail("{}: {} ({} bytes at byte {} of {}) overlaps {} but is not its in-place slot (byte {})", op, small_name,
       small_bytes, static_cast<intptr_t>(s - b), big_name, big_name, slot_byte);
}

int64_t product(const std::vector<int64_t>& shape, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= shape[i];
  return p;
}

}  // namespace tilejit::ops
