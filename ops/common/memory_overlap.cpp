#include "ops/common/memory_overlap.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace tilejit::ops {
namespace {

// (stride, size) in bytes of each dim of more than one element, smallest stride first.
std::vector<std::pair<int64_t, int64_t>> byte_dims(const Tensor& t) {
  std::vector<std::pair<int64_t, int64_t>> dims;
  const int64_t element = dtype_storage_bytes(t.dtype());
  for (int i = 0; i < t.rank(); ++i)
    if (t.dim(i) > 1) dims.emplace_back(t.strides()[static_cast<size_t>(i)] * element, t.dim(i));
  std::sort(dims.begin(), dims.end());
  return dims;
}

// The bytes from the first element to the end of the last.
std::pair<uintptr_t, uintptr_t> byte_range(const Tensor& t) {
  auto begin = reinterpret_cast<uintptr_t>(t.data());
  int64_t last = 0;
  for (auto [stride, size] : byte_dims(t)) last += (size - 1) * stride;
  return {begin, begin + static_cast<uintptr_t>(last + dtype_storage_bytes(t.dtype()))};
}

// A tensor as rows: its elements lie at [row start, row start + width) where every row start
// is the first element's address plus a multiple of `period`. `period` is 0 for a single row.
struct Rows {
  int64_t width = 0, period = 0;
};

// A dense innermost dim makes rows as wide as it, else each element is a row of its own; null
// unless every stride beyond the rows is a multiple of the period.
std::optional<Rows> rows_of(const Tensor& t) {
  const int64_t element = dtype_storage_bytes(t.dtype());
  std::vector<std::pair<int64_t, int64_t>> dims = byte_dims(t);
  if (dims.empty()) return Rows{element, 0};
  const bool dense_rows = dims[0].first == element;
  const size_t outer = dense_rows ? 1 : 0;  // the first dim beyond a row
  Rows rows{dense_rows ? dims[0].second * element : element, outer < dims.size() ? dims[outer].first : 0};
  for (size_t i = outer; i < dims.size(); ++i)
    if (rows.period == 0 || dims[i].first % rows.period != 0) return std::nullopt;
  return rows;
}

}  // namespace

bool may_overlap(const Tensor& a, const Tensor& b) {
  if (&a.device() != &b.device() || a.numel() == 0 || b.numel() == 0) return false;
  auto [a_begin, a_end] = byte_range(a);
  auto [b_begin, b_end] = byte_range(b);
  if (a_end <= b_begin || b_end <= a_begin) return false;
  // Rows of one period (a single row takes the other's): apart when their places within a
  // period do not meet.
  std::optional<Rows> ra = rows_of(a), rb = rows_of(b);
  if (!ra || !rb) return true;
  const int64_t period = std::max(ra->period, rb->period);
  if (period == 0 || (ra->period != 0 && rb->period != 0 && ra->period != rb->period)) return true;
  if (ra->width > period || rb->width > period) return true;
  // Where b's rows start within a period that starts where a's rows do.
  const int64_t difference = static_cast<int64_t>(b_begin) - static_cast<int64_t>(a_begin);
  const int64_t shift = (difference % period + period) % period;
  return !(ra->width <= shift && shift + rb->width <= period);
}

bool may_overlap_itself(const Tensor& t) {
  if (t.numel() == 0) return false;
  int64_t span = 0;  // bytes the dims so far reach past their first element's start
  const int64_t element = dtype_storage_bytes(t.dtype());
  for (auto [stride, size] : byte_dims(t)) {
    if (stride < span + element) return true;
    span += (size - 1) * stride;
  }
  return false;
}

}  // namespace tilejit::ops
