// FP8 delayed scaling and the fp8 GEMM against Transformer Engine's recipe in JAX (tests/data/
// crosscheck/fp8.json, scripts/crosscheck/make_crosscheck.py). Delayed scaling runs the case's
// steps in order on one Fp8ScalingState: each step's fp8 data and scale_inv, and the scale and
// amax history the update leaves, bit for bit. (The cases also record the amax each update used;
// the API keeps that inside the update, so the scale it produced is what is compared.)
#include "ops/fp8.h"
#include "ops/gemm.h"
#include "tests/ops/crosscheck_ops.h"

namespace tjops {
namespace {

namespace crosscheck = tilejit::crosscheck;
using tilejit::ops::AmaxComputeAlgo;
using tilejit::ops::DelayedScalingRecipe;
using tilejit::ops::Fp8Format;
using tilejit::ops::Fp8TensorRole;

DelayedScalingRecipe recipe_of(const crosscheck::Case& c) {
  DelayedScalingRecipe r;
  r.margin = c.option<int>("margin");
  r.amax_history_len = c.option<int64_t>("amax_history_len");
  std::string algo = c.option<std::string>("amax_compute_algo");
  EXPECT_TRUE(algo == "max" || algo == "most_recent") << algo;
  r.amax_compute_algo = algo == "max" ? AmaxComputeAlgo::max : AmaxComputeAlgo::most_recent;
  std::string format = c.option<std::string>("fp8_format");
  EXPECT_TRUE(format == "HYBRID" || format == "E4M3" || format == "E5M2") << format;
  r.fp8_format = format == "E4M3" ? Fp8Format::E4M3 : format == "E5M2" ? Fp8Format::E5M2 : Fp8Format::HYBRID;
  return r;
}

TEST(Fp8Crosscheck, DelayedScalingStepsMatchJax) {
  for_each_case("fp8", "fp8_delayed_scaling", [](const crosscheck::Case& c) {
    std::string role = c.option<std::string>("tensor");
    ASSERT_TRUE(role == "forward" || role == "gradient") << role;
    tilejit::ops::Fp8ScalingState state(emu(), recipe_of(c),
                                        role == "forward" ? Fp8TensorRole::forward : Fp8TensorRole::gradient);
    // The cases start where a fresh state does.
    expect_case_output(c.name() + " initial scale", state.scale(), {DType::f32, {1}, c.input("scale").values, {}});
    expect_case_output(c.name() + " initial history", state.amax_history(), c.input("amax_history"));
    const crosscheck::Array& x = c.input("x");
    for (int64_t step = 0; step < x.shape.at(0); ++step) {
      std::string what = c.name() + " step " + std::to_string(step);
      tilejit::ops::Fp8Tensor q = tilejit::ops::fp8_quantize(upload_case_array(leading_slice(x, step)), state);
      expect_case_output(what + " q", q.data, leading_slice(c.output("q"), step));
      crosscheck::Array one_value = leading_slice(c.output("scale_inv"), step);
      one_value.shape = {1};
      expect_case_output(what + " scale_inv", q.scale_inv, one_value);
      one_value = leading_slice(c.output("scale"), step);
      one_value.shape = {1};
      expect_case_output(what + " scale", state.scale(), one_value);
      expect_case_output(what + " amax_history", state.amax_history(), leading_slice(c.output("amax_history"), step));
    }
  });
}

TEST(Fp8Crosscheck, GemmWithScaleInvEpilogueMatchesJax) {
  for_each_case("fp8", "fp8_gemm", [](const crosscheck::Case& c) {
    tilejit::ops::GemmOptions o;
    auto per_tensor = [&](const char* name) {
      crosscheck::Array scale = c.input(name);
      scale.shape = {1};  // the GEMM takes f32 [1]
      return upload_case_array(scale);
    };
    o.a_scale_inv = per_tensor("a_scale_inv");
    o.b_scale_inv = per_tensor("b_scale_inv");
    o.out_dtype = parse_dtype(c.option<std::string>("out_dtype"));
    const crosscheck::Array &a = c.input("a"), &b = c.input("b");
    Tensor out = tilejit::ops::matmul(upload_case_array(a), upload_case_array(b), o);
    // Each K block's product is summed in the tensor cores (gemm_check.h): an error relative to
    // the sum of |products|.
    ASSERT_EQ(a.shape.size(), 2u);
    const int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
    const double scales = std::fabs(c.input("a_scale_inv").values[0] * c.input("b_scale_inv").values[0]);
    std::vector<LD> extra(size_t(m * n));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        LD magnitude = 0;
        for (int64_t t = 0; t < k; ++t) magnitude += std::fabs(a.values[size_t(i * k + t)] * b.values[size_t(t * n + j)]);
        extra[size_t(i * n + j)] = magnitude * scales * fp8_chain_error(4);
      }
    expect_case_output(c.name(), out, c.output("out"), extra);
  });
}

}  // namespace
}  // namespace tjops
