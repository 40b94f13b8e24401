// attention and attention_backward against jax.nn.dot_product_attention (tests/data/crosscheck/
// attention.json, scripts/crosscheck/make_crosscheck.py): out, the logsumexp and, where the case
// has an incoming gradient, dq, dk and dv, each within the case's tolerance (fully masked rows'
// logsumexp under SEMANTICS.md's masked logit, see contract_lse). The backward pass takes the
// forward's own out and logsumexp, as a user's training step would.
#include "ops/attention.h"
#include "tests/ops/crosscheck_ops.h"

namespace tjops {
namespace {

namespace crosscheck = tilejit::crosscheck;
using tilejit::ops::AttentionOptions;

AttentionOptions options_of(const crosscheck::Case& c) {
  AttentionOptions o;
  if (c.has_option("scale")) o.scale = c.option<double>("scale");
  o.is_causal = c.option<bool>("is_causal", false);
  o.causal_bottom_right = c.option<bool>("causal_bottom_right", false);
  if (c.has_option("local_window")) {
    if (c.options().at("local_window").is_number()) {
      auto w = c.option<int64_t>("local_window");
      o.local_window = std::pair{w, w};  // SEMANTICS.md: an int w means (w, w)
    } else {
      auto w = c.option<std::vector<int64_t>>("local_window");
      o.local_window = std::pair{w.at(0), w.at(1)};
    }
  }
  auto optional_input = [&](const char* name) -> std::optional<Tensor> {
    if (!c.has_input(name)) return std::nullopt;
    return upload_case_array(c.input(name));
  };
  o.bias = optional_input("bias");
  o.mask = optional_input("mask");
  o.q_seqlens = optional_input("q_seqlens");
  o.kv_seqlens = optional_input("kv_seqlens");
  o.return_logsumexp = true;
  return o;
}

// The case's logsumexp under SEMANTICS.md's masked logit. JAX forms the logits in f32 and masks
// them with -0.7 * f32 max whatever the input dtype; SEMANTICS.md takes the input dtype's largest
// value. A row that keeps no key has the masked logit as its logsumexp (log S is below its
// rounding), so for bf16 those rows hold the contract's constant instead of JAX's.
crosscheck::Array contract_lse(const crosscheck::Case& c, DType dtype) {
  crosscheck::Array lse = c.output("lse");
  const double jax_masked = tilejit::ops::masked_logit(DType::f32), masked = tilejit::ops::masked_logit(dtype);
  for (double& v : lse.values)
    if (v == jax_masked) v = masked;
  return lse;
}

TEST(AttentionCrosscheck, ForwardAndBackwardMatchJax) {
  for_each_case("attention", "attention", [](const crosscheck::Case& c) {
    AttentionOptions o = options_of(c);
    Tensor q = upload_case_array(c.input("q")), k = upload_case_array(c.input("k")), v = upload_case_array(c.input("v"));
    tilejit::ops::AttentionResult r = tilejit::ops::attention(q, k, v, o);
    expect_case_output(c.name() + " out", r.out, c.output("out"));
    ASSERT_TRUE(r.logsumexp.has_value());
    if (c.has_output("lse")) expect_case_output(c.name() + " lse", *r.logsumexp, contract_lse(c, q.dtype()));
    if (!c.has_input("dout")) return;
    tilejit::ops::AttentionGradients g =
        tilejit::ops::attention_backward(q, k, v, r.out, upload_case_array(c.input("dout")), *r.logsumexp, o);
    expect_case_output(c.name() + " dq", g.dq, c.output("dq"));
    expect_case_output(c.name() + " dk", g.dk, c.output("dk"));
    expect_case_output(c.name() + " dv", g.dv, c.output("dv"));
  });
}

}  // namespace
}  // namespace tjops
