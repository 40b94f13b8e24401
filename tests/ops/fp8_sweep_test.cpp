// The slow sweep of fp8 delayed scaling: a million elements of every input dtype quantized
// bit for bit in both formats (specials included), and 200 steps of the recipe for each
// algorithm with a short history, so that NaN and inf amaxes roll in and out again.
#include "tests/ops/fp8_test_util.h"

namespace tjfp8 {
namespace {

TEST(Fp8Sweep, MillionElementsBitExact) {
  TJ_SEEDED_RNG(rng);
  for (DType x_dtype : {DType::f32, DType::f16, DType::bf16})
    for (Fp8Format format : {Fp8Format::E4M3, Fp8Format::E5M2}) {
      Fp8ScalingState state(emu(), recipe_of(format));
      HostScaling host(state.recipe(), state.dtype());
      host.scale = round_f32(std::ldexp(rng.uniform(0.5, 1), static_cast<int>(rng.integer(-4, 4))));
      set_scale(state, static_cast<float>(host.scale));
      SCOPED_TRACE(name_of(x_dtype) + " to " + name_of(state.dtype()) + ", scale " + fmt_ld(host.scale));
      const std::vector<LD> x = quantize_inputs(x_dtype, state.dtype(), host.scale, 1 << 20, rng, true);
      Fp8Tensor q = fp8_quantize(upload(host_of(x_dtype, x), {1024, 1024}), state);
      expect_fp8_bits("data", download(q.data), host.quantize(x));
      host.update();
      expect_state("state", state, host);
    }
}

TEST(Fp8Sweep, TwoHundredSteps) {
  TJ_SEEDED_RNG(rng);
  for (AmaxComputeAlgo algo : {AmaxComputeAlgo::max, AmaxComputeAlgo::most_recent}) {
    Fp8ScalingState state(emu(), recipe_of(Fp8Format::HYBRID, algo, static_cast<int>(rng.integer(0, 4)), 16),
                          Fp8TensorRole::gradient);
    HostScaling host(state.recipe(), state.dtype());
    for (int step = 0; step < 200; ++step) {
      SCOPED_TRACE("step " + std::to_string(step));
      std::vector<LD> x(static_cast<size_t>(rng.integer(1, 600)));
      const double magnitude = std::ldexp(1.0, static_cast<int>(rng.integer(-20, 20)));
      for (LD& v : x) v = round_f32(rng.uniform(-magnitude, magnitude));
      if (rng.coin(0.05)) x[0] = std::numeric_limits<LD>::quiet_NaN();
      if (rng.coin(0.05)) x[0] = std::numeric_limits<LD>::infinity();
      if (rng.coin(0.05)) std::fill(x.begin(), x.end(), 0);
      Fp8Tensor q = fp8_quantize(upload(host_of(DType::f32, x)), state);
      expect_fp8_bits("data", download(q.data), host.quantize(x));
      host.update();
      expect_state("state", state, host);
    }
  }
}

}  // namespace
}  // namespace tjfp8
