// What every op test against the cross-check cases (tests/ops/crosscheck_data.h) does: upload a
// case's input arrays to the emulator, compare an op's output with the case's array within the
// case's tolerance, take one element of a stacked leading dim, and run a check on every case
// of one op in a family's file.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/emu/ops_test_util.h"
#include "tests/ops/crosscheck_data.h"

namespace tjops {

inline Host host_of_case_array(const tilejit::crosscheck::Array& a) {
  Host h(a.dtype, a.values.size());
  for (size_t i = 0; i < a.values.size(); ++i) h.set(i, static_cast<LD>(a.values[i]));
  return h;
}

// On the emulator, in the array's shape (rank 0 included).
inline Tensor upload_case_array(const tilejit::crosscheck::Array& a) {
  Host h = host_of_case_array(a);
  Tensor t = Tensor::empty(emu(), a.dtype, a.shape);
  t.copy_from_host(h.bytes.data(), h.bytes.size());
  return t;
}

inline void expect_case_output(const std::string& what, const Tensor& got, const tilejit::crosscheck::Array& want) {
  ASSERT_EQ(got.shape(), want.shape) << what;
  ASSERT_EQ(got.dtype(), want.dtype) << what;
  expect_values(what, download(got), std::vector<LD>(want.values.begin(), want.values.end()),
                Tol{want.tolerance.rtol, want.tolerance.atol});
}

// The same, allowing element i an error of extra[i] besides: what the case's tolerance, made
// against float64, cannot know of (the tensor cores' own sum of fp8 products, for one).
inline void expect_case_output(const std::string& what, const Tensor& got, const tilejit::crosscheck::Array& want,
                               const std::vector<LD>& extra) {
  ASSERT_EQ(got.shape(), want.shape) << what;
  ASSERT_EQ(got.dtype(), want.dtype) << what;
  ASSERT_EQ(extra.size(), want.values.size()) << what;
  std::vector<LD> values(want.values.begin(), want.values.end()), allowed(extra.size());
  for (size_t i = 0; i < allowed.size(); ++i)
    allowed[i] = want.tolerance.atol + want.tolerance.rtol * std::fabs(values[i]) + extra[i];
  expect_scaled(what, download(got).values(), values, allowed, 1.0);
}

// Element `index` of the leading dim (a rank of a collective case, a step of fp8 delayed scaling),
// with the array's tolerance.
inline tilejit::crosscheck::Array leading_slice(const tilejit::crosscheck::Array& a, int64_t index) {
  tilejit::crosscheck::Array slice{a.dtype, std::vector<int64_t>(a.shape.begin() + 1, a.shape.end()), {}, a.tolerance};
  auto per = static_cast<size_t>(slice.numel());
  auto first = a.values.begin() + static_cast<std::ptrdiff_t>(per * static_cast<size_t>(index));
  slice.values.assign(first, first + static_cast<std::ptrdiff_t>(per));
  return slice;
}

// Runs `check` on every case of `op` in the family's file (there must be some).
inline void for_each_case(const std::string& family, const std::string& op,
                          const std::function<void(const tilejit::crosscheck::Case&)>& check) {
  const tilejit::crosscheck::CaseFile file = tilejit::crosscheck::load_family(family);
  std::vector<const tilejit::crosscheck::Case*> cases = file.of_op(op);
  ASSERT_FALSE(cases.empty()) << "no " << op << " cases in " << file.path();
  for (const tilejit::crosscheck::Case* c : cases) {
    SCOPED_TRACE(c->describe());
    check(*c);
  }
}

}  // namespace tjops
