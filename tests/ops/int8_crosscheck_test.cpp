// The int8 ops and matmul against JAX's outputs (tests/data/crosscheck/int8.json): the same
// inputs, each output within the case's tolerance (exact for integers).
#include <gtest/gtest.h>

#include "ops/gemm.h"
#include "ops/int8.h"
#include "tests/ops/crosscheck_ops.h"

namespace {

using namespace tjops;
namespace xc = tilejit::crosscheck;

void expect_output(const xc::Case& c, const Tensor& got) { expect_case_output(c.name(), got, c.output("out")); }

TEST(Int8CrossCheck, EveryJaxCase) {
  xc::CaseFile file = xc::load_family("int8");
  ASSERT_FALSE(file.cases().empty());
  for (const xc::Case& c : file.cases()) {
    SCOPED_TRACE(c.describe());
    if (c.op() == "quant_int8") {
      expect_output(c, tilejit::ops::quant_int8(upload_case_array(c.input("x"))));
    } else if (c.op() == "matmul_true_int8") {
      expect_output(c, tilejit::ops::matmul_true_int8(upload_case_array(c.input("a")), upload_case_array(c.input("b"))));
    } else if (c.op() == "q_matmul_int8") {
      expect_output(c, tilejit::ops::q_matmul_int8(upload_case_array(c.input("a")), upload_case_array(c.input("w"))));
    } else if (c.op() == "matmul") {
      tilejit::ops::GemmOptions o;
      o.precision = dsl::Precision::tf32x3;  // JAX on the CPU multiplies f32 exactly
      expect_output(c, tilejit::ops::matmul(upload_case_array(c.input("a")), upload_case_array(c.input("b")), o));
    } else {
      ADD_FAILURE() << "no test for op " << c.op();
    }
  }
}

}  // namespace
