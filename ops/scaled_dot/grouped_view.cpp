#include "ops/scaled_dot/grouped_view.h"

#include <optional>

#include "ops/scaled_dot/gather_copy.h"

namespace tilejit::ops::scaled_dot_detail {
namespace {

struct Merged {
  int64_t size = 1, stride = 0;
};

// The dims of one group as one strided dim, when they nest in memory in the group's order.
std::optional<Merged> merge(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                            const std::vector<int>& dims) {
  Merged m;
  for (int d : dims) m.size *= sizes[static_cast<size_t>(d)];
  if (m.size == 0) return Merged{0, 0};  // no elements: any strides do
  m.size = 1;
  bool first = true;
  for (int d : dims) {
    int64_t size = sizes[static_cast<size_t>(d)], stride = strides[static_cast<size_t>(d)];
    if (size == 1) continue;
    if (!first && m.stride != stride * size) return std::nullopt;
    m.size *= size;
    m.stride = stride;
    first = false;
  }
  return m;
}

std::optional<GroupedView> merged_view(const Tensor& storage, const std::vector<int64_t>& sizes,
                                       const std::vector<int64_t>& strides, const std::array<std::vector<int>, 3>& groups) {
  GroupedView view{storage, {}, {}, false};
  for (size_t g = 0; g < 3; ++g) {
    std::optional<Merged> m = merge(sizes, strides, groups[g]);
    if (!m) return std::nullopt;
    view.size[g] = m->size;
    view.stride[g] = m->stride;
  }
  return view;
}

}  // namespace

GroupedView grouped_view(const Tensor& t, const std::array<std::vector<int>, 3>& groups,
                         const std::vector<int64_t>& repeat, Stream& stream) {
  bool repeats = false;
  for (int64_t r : repeat) repeats = repeats || r > 1;
  if (!repeats)
    if (std::optional<GroupedView> view = merged_view(t, t.shape(), t.strides(), groups)) return *view;

  // The copy: dims in group order, each widened by its repeat.
  std::vector<int64_t> shape, strides, repeats_in_order;
  std::array<std::vector<int>, 3> copy_groups;  // the copy's dims are the groups' dims in order
  for (size_t g = 0; g < 3; ++g)
    for (int d : groups[g]) {
      int64_t r = repeat.empty() ? 1 : repeat[static_cast<size_t>(d)];
      copy_groups[g].push_back(static_cast<int>(shape.size()));
      shape.push_back(t.dim(d) * r);
      strides.push_back(t.strides()[static_cast<size_t>(d)]);
      repeats_in_order.push_back(r);
    }
  Tensor copy = Tensor::empty(t.device(), t.dtype(), shape);
  gather_copy(t, strides, repeats_in_order, copy, stream);
  std::optional<GroupedView> view = merged_view(copy, copy.shape(), copy.strides(), copy_groups);
  TJ_CHECK(view.has_value());
  view->copied = true;
  return *view;
}

}  // namespace tilejit::ops::scaled_dot_detail
