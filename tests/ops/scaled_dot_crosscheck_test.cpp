// scaled_dot and mx_quantize against the cases JAX computed (tests/data/crosscheck/scaled_dot.json,
// scripts/crosscheck/make_crosscheck.py): jax.lax.scaled_dot's results within each case's tolerance
// (which admits JAX's bf16 rounding of operand * scale), jax's mxfp8 quantizer bit for bit.
#include "tests/ops/crosscheck_data.h"
#include "tests/ops/scaled_dot_test_util.h"

namespace tjsdot {
namespace {

namespace crosscheck = tilejit::crosscheck;

HostTensor host_of(const crosscheck::Array& a) {
  HostTensor t{Host(a.dtype, static_cast<size_t>(a.numel())), a.shape};
  for (size_t i = 0; i < a.values.size(); ++i) t.values.set(i, a.values[i]);
  return t;
}

void expect_output(const std::string& what, const Tensor& got, const crosscheck::Array& want) {
  ASSERT_EQ(got.shape(), want.shape) << what;
  ASSERT_EQ(got.dtype(), want.dtype) << what;
  expect_values(what, download(got), std::vector<LD>(want.values.begin(), want.values.end()),
                Tol{want.tolerance.rtol, want.tolerance.atol});
}

// Runs `check` on every case of `op` in scaled_dot.json (there must be some).
void for_each_case(const std::string& op, const std::function<void(const crosscheck::Case&)>& check) {
  static const crosscheck::CaseFile file = crosscheck::load_family("scaled_dot");
  std::vector<const crosscheck::Case*> cases = file.of_op(op);
  ASSERT_FALSE(cases.empty()) << "no " << op << " cases in " << file.path();
  for (const crosscheck::Case* c : cases) {
    SCOPED_TRACE(c->describe());
    check(*c);
  }
}

TEST(ScaledDotCrosscheck, MatchesJax) {
  for_each_case("scaled_dot", [](const crosscheck::Case& c) {
    ScaledDotOptions options;
    if (c.has_option("dimension_numbers")) {
      auto n = c.option<std::vector<std::vector<std::vector<int>>>>("dimension_numbers");
      options.dimension_numbers = DotDimensionNumbers{n[0][0], n[0][1], n[1][0], n[1][1]};
    }
    options.preferred_element_type = parse_dtype(c.option<std::string>("preferred_element_type", "bf16"));
    std::optional<Tensor> lhs_scale, rhs_scale;
    if (c.has_input("lhs_scale")) lhs_scale = host_of(c.input("lhs_scale")).upload();
    if (c.has_input("rhs_scale")) rhs_scale = host_of(c.input("rhs_scale")).upload();
    Tensor out = scaled_dot(host_of(c.input("lhs")).upload(), host_of(c.input("rhs")).upload(), lhs_scale, rhs_scale,
                            options);
    expect_output(c.name(), out, c.output("out"));
  });
}

TEST(MxQuantizeCrosscheck, MatchesJax) {
  for_each_case("mx_quantize", [](const crosscheck::Case& c) {
    MxQuantized q = mx_quantize(host_of(c.input("x")).upload());
    expect_output(c.name() + " data", q.data, c.output("data"));
    expect_output(c.name() + " scale", q.scales, c.output("scale"));
  });
}

}  // namespace
}  // namespace tjsdot
