// scaled_dot and mx_quantize against the cases JAX computed (tests/data/crosscheck/scaled_dot.json,
// scripts/crosscheck/make_crosscheck.py): jax.lax.scaled_dot's results within each case's tolerance
// (which admits JAX's bf16 rounding of operand * scale), jax's mxfp8 quantizer bit for bit.
#include "tests/ops/crosscheck_ops.h"
#include "tests/ops/scaled_dot_test_util.h"

namespace tjsdot {
namespace {

namespace crosscheck = tilejit::crosscheck;

TEST(ScaledDotCrosscheck, MatchesJax) {
  for_each_case("scaled_dot", "scaled_dot", [](const crosscheck::Case& c) {
    ScaledDotOptions options;
    if (c.has_option("dimension_numbers")) {
      auto n = c.option<std::vector<std::vector<std::vector<int>>>>("dimension_numbers");
      options.dimension_numbers = DotDimensionNumbers{n[0][0], n[0][1], n[1][0], n[1][1]};
    }
    options.preferred_element_type = parse_dtype(c.option<std::string>("preferred_element_type", "bf16"));
    std::optional<Tensor> lhs_scale, rhs_scale;
    if (c.has_input("lhs_scale")) lhs_scale = upload_case_array(c.input("lhs_scale"));
    if (c.has_input("rhs_scale")) rhs_scale = upload_case_array(c.input("rhs_scale"));
    const crosscheck::Array &lhs = c.input("lhs"), &rhs = c.input("rhs");
    Tensor out = scaled_dot(upload_case_array(lhs), upload_case_array(rhs), lhs_scale, rhs_scale, options);
    // fp8 x fp8: each K block's product is summed in the tensor cores (scaled_dot_test_util.h),
    // an error relative to the sum of |terms|.
    std::vector<LD> extra(c.output("out").values.size(), 0);
    if (is_fp8(lhs.dtype) && is_fp8(rhs.dtype)) {
      auto host = [&](const char* name) { return HostTensor{host_of_case_array(c.input(name)), c.input(name).shape}; };
      std::optional<HostTensor> ls, rs;
      if (lhs_scale) ls = host("lhs_scale");
      if (rhs_scale) rs = host("rhs_scale");
      Reference ref = reference_scaled_dot(host("lhs"), host("rhs"), ls ? &*ls : nullptr, rs ? &*rs : nullptr,
                                           options.dimension_numbers.value_or(default_numbers(int(lhs.shape.size()))));
      for (size_t i = 0; i < extra.size(); ++i) extra[i] = ref.magnitude[i] * fp8_chain_error(2);
    }
    expect_case_output(c.name(), out, c.output("out"), extra);
  });
}

TEST(MxQuantizeCrosscheck, MatchesJax) {
  for_each_case("scaled_dot", "mx_quantize", [](const crosscheck::Case& c) {
    MxQuantized q = mx_quantize(upload_case_array(c.input("x")));
    expect_case_output(c.name() + " data", q.data, c.output("data"));
    expect_case_output(c.name() + " scale", q.scales, c.output("scale"));
  });
}

}  // namespace
}  // namespace tjsdot
