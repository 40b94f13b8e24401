// The int8 ops and matmul against JAX's outputs (tests/data/crosscheck/int8.json): the same
// inputs, each output within the case's tolerance (exact for integers).
#include <gtest/gtest.h>

#include "ops/gemm.h"
#include "ops/int8.h"
#include "tests/emu/ops_test_util.h"
#include "tests/ops/crosscheck_data.h"

namespace {

using namespace tjops;
namespace xc = tilejit::crosscheck;

Tensor upload_array(const xc::Array& a) {
  Host h(a.dtype, a.values.size());
  for (size_t i = 0; i < a.values.size(); ++i) h.set(i, static_cast<LD>(a.values[i]));
  return upload(h, a.shape);
}

void expect_output(const xc::Case& c, const Tensor& got) {
  const xc::Array& want = c.output("out");
  ASSERT_EQ(got.shape(), want.shape) << c.describe();
  ASSERT_EQ(got.dtype(), want.dtype) << c.describe();
  std::vector<LD> values(want.values.begin(), want.values.end());
  expect_values(c.name(), download(got), values, Tol{want.tolerance.rtol, want.tolerance.atol});
}

TEST(Int8CrossCheck, EveryJaxCase) {
  xc::CaseFile file = xc::load_family("int8");
  ASSERT_FALSE(file.cases().empty());
  for (const xc::Case& c : file.cases()) {
    SCOPED_TRACE(c.describe());
    if (c.op() == "quant_int8") {
      expect_output(c, tilejit::ops::quant_int8(upload_array(c.input("x"))));
    } else if (c.op() == "matmul_true_int8") {
      expect_output(c, tilejit::ops::matmul_true_int8(upload_array(c.input("a")), upload_array(c.input("b"))));
    } else if (c.op() == "q_matmul_int8") {
      expect_output(c, tilejit::ops::q_matmul_int8(upload_array(c.input("a")), upload_array(c.input("w"))));
    } else if (c.op() == "matmul") {
      tilejit::ops::GemmOptions o;
      o.precision = dsl::Precision::tf32x3;  // JAX on the CPU multiplies f32 exactly
      expect_output(c, tilejit::ops::matmul(upload_array(c.input("a")), upload_array(c.input("b")), o));
    } else {
      ADD_FAILURE() << "no test for op " << c.op();
    }
  }
}

}  // namespace
