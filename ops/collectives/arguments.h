// Internal to ops/collectives: the checks the collectives make on their arguments, shared so
// that every op words its errors alike. Each message names the op and the offending sizes or
// ranks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ops/collectives.h"

namespace tilejit::ops {

// The groups must cover ranks 0..world_size-1 exactly once, all with the same size.
void check_groups(const RankGroups& groups, int world_size, const char* op);
// The size of every group, after check_groups; world_size without groups.
int checked_group_size(const RankGroups& groups, int world_size, const char* op);

// `axis` (negative counts from the end) as an index into `rank` dimensions; `what` names the
// option ("scatter_dimension"), `tensor` the tensor it refers to.
int normalize_axis(int axis, int rank, const char* op, const char* what, const Tensor& tensor);

// The shape of one of k positions' parts of `tensor` split along `dim` (normalized; `axis` is the
// option as given, `what` its name, `name` the tensor's): the dimension divided by k when tiled
// (k must divide it), removed when untiled (it must equal k).
std::vector<int64_t> part_shape(const Tensor& tensor, const char* name, int axis, size_t dim, bool tiled, int k,
                                const char* op, const char* what);

// x must be contiguous, of a dtype the collectives support, on the communicator's device.
void check_input(const Tensor& x, const Communicator& comm, const char* op, const char* what);

// out must have x's dtype and `shape` (and pass check_input).
void check_output(const Tensor& out, const Tensor& x, const std::vector<int64_t>& shape, const Communicator& comm,
                  const char* op);

// `small` may lie inside `big` only as the in-place slot starting at element `slot`; any other
// overlap is an error naming both byte ranges.
void check_in_place_slot(const Tensor& small, const char* small_name, const Tensor& big, const char* big_name,
                         int64_t slot, const char* op);

// The product of shape[begin, end).
int64_t product(const std::vector<int64_t>& shape, size_t begin, size_t end);

}  // namespace tilejit::ops
