// layer_norm, rms_norm and their backward passes against Transformer Engine's formulas in JAX
// (tests/data/crosscheck/norms.json, scripts/crosscheck/make_crosscheck.py): y, the statistics
// and the gradients, each within the case's tolerance. The backward pass takes the forward's own
// statistics.
#include "ops/norms.h"
#include "tests/ops/crosscheck_ops.h"

namespace tjops {
namespace {

namespace crosscheck = tilejit::crosscheck;
using tilejit::ops::NormBackwardOptions;
using tilejit::ops::NormOptions;

NormOptions options_of(const crosscheck::Case& c) {
  NormOptions o;
  if (c.has_option("eps")) o.eps = static_cast<float>(c.option<double>("eps"));
  o.zero_centered_gamma = c.option<bool>("zero_centered_gamma", false);
  o.store_statistics = true;
  return o;
}

void expect_gradients(const crosscheck::Case& c, const tilejit::ops::NormGradients& g) {
  expect_case_output(c.name() + " dx", g.dx, c.output("dx"));
  expect_case_output(c.name() + " dgamma", g.dgamma, c.output("dgamma"));
  if (c.has_output("dbeta")) {
    ASSERT_TRUE(g.dbeta.has_value());
    expect_case_output(c.name() + " dbeta", *g.dbeta, c.output("dbeta"));
  }
}

TEST(NormsCrosscheck, LayerNormMatchesJax) {
  for_each_case("norms", "layer_norm", [](const crosscheck::Case& c) {
    NormOptions o = options_of(c);
    Tensor x = upload_case_array(c.input("x")), gamma = upload_case_array(c.input("gamma"));
    tilejit::ops::NormOutput r = tilejit::ops::layer_norm(x, gamma, upload_case_array(c.input("beta")), o);
    expect_case_output(c.name() + " y", r.y, c.output("y"));
    expect_case_output(c.name() + " mean", *r.mean, c.output("mean"));
    expect_case_output(c.name() + " rsigma", *r.rsigma, c.output("rsigma"));
    NormBackwardOptions b{o.zero_centered_gamma};
    expect_gradients(c, tilejit::ops::layer_norm_backward(upload_case_array(c.input("dy")), x, *r.mean, *r.rsigma,
                                                          gamma, b));
  });
}

TEST(NormsCrosscheck, RmsNormMatchesJax) {
  for_each_case("norms", "rms_norm", [](const crosscheck::Case& c) {
    NormOptions o = options_of(c);
    Tensor x = upload_case_array(c.input("x")), gamma = upload_case_array(c.input("gamma"));
    tilejit::ops::NormOutput r = tilejit::ops::rms_norm(x, gamma, o);
    expect_case_output(c.name() + " y", r.y, c.output("y"));
    expect_case_output(c.name() + " rsigma", *r.rsigma, c.output("rsigma"));
    expect_gradients(c, tilejit::ops::rms_norm_backward(upload_case_array(c.input("dy")), x, *r.rsigma, gamma));
  });
}

}  // namespace
}  // namespace tjops
