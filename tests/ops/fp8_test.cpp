// fp8_quantize and fp8_update_scale against the host recipe of fp8_test_util.h: fp8 bits
// exactly as the host encoder makes them (both formats, every input dtype, saturation at
// +-fmax, ties to even, subnormals, NaN), the amax over many programs, and steps of the
// recipe with both amax algorithms, margins, history lengths, and amaxes of 0, inf and NaN.
#include <gmock/gmock.h>

#include "ops/gemm.h"
#include "tests/ops/fp8_test_util.h"

namespace tjfp8 {
namespace {

using ::testing::HasSubstr;

TEST(Fp8, FormatsRecipeDefaultsAndInitialState) {
  EXPECT_EQ(fp8_dtype(Fp8Format::E4M3, Fp8TensorRole::forward), DType::f8e4m3);
  EXPECT_EQ(fp8_dtype(Fp8Format::E4M3, Fp8TensorRole::gradient), DType::f8e4m3);
  EXPECT_EQ(fp8_dtype(Fp8Format::E5M2, Fp8TensorRole::forward), DType::f8e5m2);
  EXPECT_EQ(fp8_dtype(Fp8Format::E5M2, Fp8TensorRole::gradient), DType::f8e5m2);
  EXPECT_EQ(fp8_dtype(Fp8Format::HYBRID, Fp8TensorRole::forward), DType::f8e4m3);
  EXPECT_EQ(fp8_dtype(Fp8Format::HYBRID, Fp8TensorRole::gradient), DType::f8e5m2);
  EXPECT_EQ(fp8_max(DType::f8e4m3), 448.0f);
  EXPECT_EQ(fp8_max(DType::f8e5m2), 57344.0f);
  EXPECT_EQ(static_cast<LD>(fp8_max(DType::f8e4m3)), fmax_of(DType::f8e4m3));
  EXPECT_EQ(static_cast<LD>(fp8_max(DType::f8e5m2)), fmax_of(DType::f8e5m2));

  const DelayedScalingRecipe defaults;
  EXPECT_EQ(defaults.margin, 0);
  EXPECT_EQ(defaults.amax_history_len, 1024);
  EXPECT_EQ(defaults.amax_compute_algo, AmaxComputeAlgo::max);
  EXPECT_EQ(defaults.fp8_format, Fp8Format::HYBRID);

  Fp8ScalingState forward(emu());
  Fp8ScalingState gradient(emu(), {}, Fp8TensorRole::gradient);
  EXPECT_EQ(forward.dtype(), DType::f8e4m3);
  EXPECT_EQ(gradient.dtype(), DType::f8e5m2);
  EXPECT_EQ(&forward.device(), &emu());
  for (const Fp8ScalingState* s : {&forward, &gradient}) {
    EXPECT_EQ(s->scale().dtype(), DType::f32);
    EXPECT_EQ(s->scale().shape(), (std::vector<int64_t>{1}));
    EXPECT_EQ(s->amax_history().shape(), (std::vector<int64_t>{1024}));
    expect_state("initial state", *s, HostScaling(defaults, s->dtype()));
  }
}

struct QuantizeCase {
  DType x;
  DType fp8;
};

class Fp8Quantize : public ::testing::TestWithParam<QuantizeCase> {};

// Bit-exact fp8 data, scale_inv and amax for several scales (powers of two keep the midpoints
// exact; 3 and 0.7 make the f32 product round first; with 3, x holds +-inf and NaN too), with
// the data spread over three programs.
TEST_P(Fp8Quantize, BitExactAgainstTheHostEncoder) {
  const auto [x_dtype, fp8] = GetParam();
  TJ_SEEDED_RNG(rng);
  const Fp8Format format = fp8 == DType::f8e4m3 ? Fp8Format::E4M3 : Fp8Format::E5M2;
  for (float scale : {1.0f, 0.25f, 8.0f, 3.0f, 0.7f}) {
    SCOPED_TRACE("scale " + std::to_string(scale));
    Fp8ScalingState state(emu(), recipe_of(format, AmaxComputeAlgo::max, 0, 4));
    set_scale(state, scale);
    HostScaling host(state.recipe(), fp8);
    host.scale = scale;
    const std::vector<LD> x = quantize_inputs(x_dtype, fp8, scale, 17 * 241, rng, scale == 3.0f);
    Tensor xt = upload(host_of(x_dtype, x), {17, 241, 1});
    Fp8Tensor q = fp8_quantize(xt, state, quantize_only());
    EXPECT_EQ(q.format(), fp8);
    EXPECT_EQ(q.data.shape(), xt.shape());
    EXPECT_EQ(q.scale_inv.shape(), (std::vector<int64_t>{1}));
    const std::vector<uint64_t> want = host.quantize(x);
    expect_fp8_bits("fp8_quantize data", download(q.data), want, [&](size_t i) { return "x = " + fmt_ld(x[i]); });
    expect_same("the output's scale_inv", download(q.scale_inv).values(), {host.scale_inv});
    expect_state("after quantize_only", state, host);
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllInputs, Fp8Quantize,
    ::testing::Values(QuantizeCase{DType::f32, DType::f8e4m3}, QuantizeCase{DType::f32, DType::f8e5m2},
                      QuantizeCase{DType::f16, DType::f8e4m3}, QuantizeCase{DType::f16, DType::f8e5m2},
                      QuantizeCase{DType::bf16, DType::f8e4m3}, QuantizeCase{DType::bf16, DType::f8e5m2}),
    [](const auto& info) { return name_of(info.param.x) + "_to_" + name_of(info.param.fp8); });

// Named values: saturation, ties to even in both formats, the smallest subnormal and half of it
// (a tie with zero: rounds to +-0), infinities.
TEST(Fp8, SaturationTiesAndSpecialValues) {
  struct Case {
    DType fp8;
    LD x;
    uint64_t bits;
  };
  const Case cases[] = {
      {DType::f8e4m3, 448, 0x7e},       {DType::f8e4m3, 463.99, 0x7e},  {DType::f8e4m3, 464, 0x7e},
      {DType::f8e4m3, 1e30, 0x7e},      {DType::f8e4m3, -1e30, 0xfe},   {DType::f8e4m3, INFINITY, 0x7e},
      {DType::f8e4m3, -INFINITY, 0xfe}, {DType::f8e4m3, 1.0625, 0x38},  {DType::f8e4m3, 1.1875, 0x3a},
      {DType::f8e4m3, 0x1p-9, 0x01},    {DType::f8e4m3, 0x1p-10, 0x00}, {DType::f8e4m3, -0x1p-10, 0x80},
      {DType::f8e4m3, 0x3p-10, 0x02},   {DType::f8e4m3, -0.0, 0x80},    {DType::f8e5m2, 57344, 0x7b},
      {DType::f8e5m2, 61440, 0x7b},     {DType::f8e5m2, 1e9, 0x7b},     {DType::f8e5m2, -INFINITY, 0xfb},
      {DType::f8e5m2, 1.125, 0x3c},     {DType::f8e5m2, 1.375, 0x3e},   {DType::f8e5m2, 0x1p-16, 0x01},
      {DType::f8e5m2, 0x1p-17, 0x00},   {DType::f8e5m2, 0x3p-17, 0x02}, {DType::f8e5m2, -3.0, 0xc2},
  };
  for (DType fp8 : {DType::f8e4m3, DType::f8e5m2}) {
    std::vector<LD> x;
    std::vector<uint64_t> named;
    for (const Case& c : cases)
      if (c.fp8 == fp8) x.push_back(c.x), named.push_back(c.bits);
    std::vector<uint64_t> reference;
    for (LD v : x) reference.push_back(quantize_reference(v, 1, fp8));
    EXPECT_EQ(reference, named) << "the host reference disagrees with the named encodings of " << name_of(fp8);
    Fp8ScalingState state(emu(), recipe_of(fp8 == DType::f8e4m3 ? Fp8Format::E4M3 : Fp8Format::E5M2));
    Fp8Tensor q = fp8_quantize(upload(host_of(DType::f32, x)), state, quantize_only());
    expect_fp8_bits("named values", download(q.data), named, [&](size_t i) { return "x = " + fmt_ld(x[i]); });
  }
}

// NaN anywhere in x: NaN in the data, and the step's amax is exactly the quiet NaN 0x7fc00000
// whichever program saw it; the update then keeps the scale.
TEST(Fp8, NanInXIsDeterministic) {
  TJ_SEEDED_RNG(rng);
  for (DType x_dtype : {DType::f32, DType::bf16}) {
    for (size_t nan_at : {size_t{0}, size_t{2047}, size_t{2048}, size_t{6999}}) {
      SCOPED_TRACE(name_of(x_dtype) + ", NaN at " + std::to_string(nan_at));
      Fp8ScalingState state(emu(), recipe_of(Fp8Format::HYBRID, AmaxComputeAlgo::max, 0, 3));
      HostScaling host(state.recipe(), state.dtype());
      std::vector<LD> x = quantize_inputs(x_dtype, DType::f8e4m3, 1, 7000, rng, false);
      x[nan_at] = std::numeric_limits<LD>::quiet_NaN();
      if (rng.coin()) x[rng.integer(0, 6999)] = std::numeric_limits<LD>::infinity();
      // The NaN with a random sign and payload (quiet or signalling).
      Host xh = host_of(x_dtype, x);
      const FloatFormat f = format_of(x_dtype);
      const uint64_t exponent = ((uint64_t{1} << f.exp_bits) - 1) << f.mant_bits;
      const uint64_t payload = 1 + rng.bits() % ((uint64_t{1} << f.mant_bits) - 1);
      xh.set_raw(nan_at, (rng.coin() ? uint64_t{1} << (f.bits() - 1) : 0) | exponent | payload);
      Fp8Tensor q = fp8_quantize(upload(xh), state, quantize_only());
      expect_fp8_bits("data", download(q.data), host.quantize(x));
      EXPECT_EQ(download(state.amax_history()).raw(0), 0x7fc00000u);
      fp8_update_scale(state);
      host.update();
      expect_state("after the update", state, host);
      EXPECT_EQ(download(state.scale()).get(0), 1) << "a NaN amax keeps the scale";
    }
  }
  // A NaN amax stays for the step: a later quantization of finite values does not replace it.
  Fp8ScalingState state(emu(), recipe_of(Fp8Format::E4M3, AmaxComputeAlgo::most_recent, 0, 2));
  HostScaling host(state.recipe(), state.dtype());
  for (LD first : {std::numeric_limits<LD>::quiet_NaN(), LD{3}}) {
    std::vector<LD> x = {first, 1, -2};
    fp8_quantize(upload(host_of(DType::f32, x)), state, quantize_only());
    host.quantize(x);
  }
  EXPECT_EQ(download(state.amax_history()).raw(0), 0x7fc00000u);
  EXPECT_TRUE(std::isnan(host.history[0]));
  fp8_update_scale(state);
  host.update();
  expect_state("after the update", state, host);
}

// An amax so small (or a margin so negative) that fmax / amax / 2^margin leaves f32 gives
// f32's largest scale, as Transformer Engine's update does; quantizing with it keeps 0 at 0.
TEST(Fp8, ATinyAmaxGivesTheLargestFiniteScale) {
  const LD largest = std::numeric_limits<float>::max();
  for (auto [amax, margin] : {std::pair{1e-37f, 0}, std::pair{1e-36f, 0}, std::pair{1.0f, -126}}) {
    SCOPED_TRACE("amax " + std::to_string(amax) + ", margin " + std::to_string(margin));
    Fp8ScalingState state(emu(), recipe_of(Fp8Format::E4M3, AmaxComputeAlgo::most_recent, margin, 1));
    HostScaling host(state.recipe(), state.dtype());
    const std::vector<float> entry = {amax};
    Tensor history = state.amax_history();
    history.copy_from_host(std::span<const float>(entry));
    host.history[0] = amax;
    fp8_update_scale(state);
    host.update();
    EXPECT_EQ(host.scale, largest);
    expect_state("after the update", state, host);
    const std::vector<LD> x = {0, LD{amax}, -LD{amax}, 1};
    Fp8Tensor q = fp8_quantize(upload(host_of(DType::f32, x)), state, quantize_only());
    std::vector<uint64_t> want = host.quantize(x);
    EXPECT_EQ(want[0], 0u) << "0 quantizes to 0";
    expect_fp8_bits("data", download(q.data), want);
    expect_same("scale_inv", download(q.scale_inv).values(), {host.scale_inv});
  }
}

// history[0] is the max over several quantizations with update_scale = false; one update ends
// the step. An empty x quantizes to nothing but still writes scale_inv.
TEST(Fp8, AmaxAccumulatesUntilTheUpdate) {
  TJ_SEEDED_RNG(rng);
  Fp8ScalingState state(emu(), recipe_of(Fp8Format::E4M3, AmaxComputeAlgo::max, 0, 5));
  HostScaling host(state.recipe(), state.dtype());
  set_scale(state, 2.0f);
  host.scale = 2;
  for (double magnitude : {3.0, 40.0, 7.0}) {
    std::vector<LD> x(static_cast<size_t>(rng.integer(1, 5000)));
    for (LD& v : x) v = round_f32(rng.uniform(-magnitude, magnitude));
    Fp8Tensor q = fp8_quantize(upload(host_of(DType::f32, x)), state, quantize_only());
    expect_fp8_bits("data", download(q.data), host.quantize(x));
    expect_state("after a quantization", state, host);
  }
  Tensor empty = Tensor::empty(emu(), DType::f16, {3, 0, 2});
  Fp8Tensor e = fp8_quantize(empty, state, quantize_only());
  EXPECT_EQ(e.data.shape(), empty.shape());
  host.quantize({});
  expect_same("scale_inv of an empty quantization", download(e.scale_inv).values(), {host.scale_inv});
  fp8_update_scale(state);
  host.update();
  expect_state("after the update", state, host);
}

struct StepsCase {
  AmaxComputeAlgo algo;
  int margin;
  int64_t len;
};

class Fp8RecipeSteps : public ::testing::TestWithParam<StepsCase> {};

// Whole steps (fp8_quantize with update_scale) against the host recipe, step by step: data,
// both scale_invs, scale and the whole history. The magnitudes vary by step, with steps of
// all zeros (amax 0), an inf and a NaN, which keep the old scale; with 'max' the NaN stays in
// the history (and the scale stays) until it is rolled out. Earlier outputs keep their scale_inv.
TEST_P(Fp8RecipeSteps, MatchTheHostRecipe) {
  const StepsCase p = GetParam();
  TJ_SEEDED_RNG(rng);
  for (Fp8TensorRole role : {Fp8TensorRole::forward, Fp8TensorRole::gradient}) {
    Fp8ScalingState state(emu(), recipe_of(Fp8Format::HYBRID, p.algo, p.margin, p.len), role);
    HostScaling host(state.recipe(), state.dtype());
    std::vector<std::pair<Fp8Tensor, LD>> earlier;  // outputs and their scale_inv
    const char* kinds[] = {"random", "random", "zeros",  "random", "inf",   "random",
                           "nan",    "random", "random", "random", "zeros", "random"};
    for (int step = 0; step < 12; ++step) {
      SCOPED_TRACE(std::string(role == Fp8TensorRole::forward ? "forward" : "gradient") + " step " +
                   std::to_string(step) + " (" + kinds[step] + ")");
      const std::string kind = kinds[step];
      std::vector<LD> x(static_cast<size_t>(rng.integer(1, 3000)));
      const double magnitude = std::ldexp(rng.uniform(0.5, 1), static_cast<int>(rng.integer(-12, 12)));
      for (LD& v : x) v = kind == "zeros" ? 0 : round_to(DType::bf16, rng.uniform(-magnitude, magnitude));
      if (kind == "inf") x[0] = -std::numeric_limits<LD>::infinity();
      if (kind == "nan") x[x.size() / 2] = std::numeric_limits<LD>::quiet_NaN();
      // amax 0 (all zeros, when nothing older counts), inf or NaN: the scale stays.
      const bool keeps =
          kind == "inf" || kind == "nan" || (kind == "zeros" && (p.algo == AmaxComputeAlgo::most_recent || p.len == 1));
      const LD scale_before = host.scale;
      Fp8Tensor q = fp8_quantize(upload(host_of(DType::bf16, x)), state);
      std::vector<uint64_t> want = host.quantize(x);
      host.update();
      expect_fp8_bits("data", download(q.data), want);
      expect_state("state", state, host);
      if (keeps) {
        EXPECT_EQ(host.scale, scale_before) << "an amax of 0, inf or NaN";
      }
      earlier.emplace_back(q, host.scale_inv);
    }
    for (auto& [q, scale_inv] : earlier)
      expect_same("an earlier output's scale_inv", download(q.scale_inv).values(), {scale_inv});
  }
}

INSTANTIATE_TEST_SUITE_P(Recipes, Fp8RecipeSteps,
                         ::testing::Values(StepsCase{AmaxComputeAlgo::max, 0, 1024},
                                           StepsCase{AmaxComputeAlgo::max, 2, 4}, StepsCase{AmaxComputeAlgo::max, 0, 1},
                                           StepsCase{AmaxComputeAlgo::most_recent, 0, 3},
                                           StepsCase{AmaxComputeAlgo::most_recent, 3, 1},
                                           StepsCase{AmaxComputeAlgo::max, -1, 1500}),
                         [](const auto& info) {
                           return std::string(info.param.algo == AmaxComputeAlgo::max ? "max" : "most_recent") +
                                  "_margin" + (info.param.margin < 0 ? "_minus" : "") +
                                  std::to_string(std::abs(info.param.margin)) + "_len" + std::to_string(info.param.len);
                         });

// The roll on a history whose every entry is known: [a, b, c, d] -> [0, c, d, a] after the
// update, and the 'max' amax takes every entry.
TEST(Fp8, HistoryRollsLeftAndClearsTheFront) {
  for (AmaxComputeAlgo algo : {AmaxComputeAlgo::max, AmaxComputeAlgo::most_recent}) {
    Fp8ScalingState state(emu(), recipe_of(Fp8Format::E4M3, algo, 0, 4));
    Tensor history = state.amax_history();
    const std::vector<float> entries = {2, 7, 3, 5};
    history.copy_from_host(std::span<const float>(entries));
    fp8_update_scale(state);
    expect_same("rolled history", download(state.amax_history()).values(), {0, 3, 5, 2});
    const LD amax = algo == AmaxComputeAlgo::max ? 7 : 2;
    expect_same("scale", download(state.scale()).values(), {round_f32(448 / amax)});
  }
}

// What the fp8 gemm takes: after a first step has set the scales, out = (a.data . b.data) *
// a.scale_inv * b.scale_inv approximates a . b, and equals the product of the dequantized
// operands up to f32 accumulation. a is a forward tensor (e4m3), b a gradient (e5m2).
TEST(Fp8, QuantizedOperandsFeedTheGemm) {
  TJ_SEEDED_RNG(rng);
  const int64_t m = 33, k = 64, n = 24;
  const Host a = random_host(DType::f32, size_t(m * k), rng, -3, 3),
             b = random_host(DType::f32, size_t(k * n), rng, -0.01, 0.01);
  Fp8ScalingState sa(emu(), {}, Fp8TensorRole::forward), sb(emu(), {}, Fp8TensorRole::gradient);
  const Tensor ta = upload(a, {m, k}), tb = upload(b, {k, n});
  fp8_quantize(ta, sa);
  fp8_quantize(tb, sb);
  const Fp8Tensor qa = fp8_quantize(ta, sa), qb = fp8_quantize(tb, sb);
  EXPECT_EQ(qa.format(), DType::f8e4m3);
  EXPECT_EQ(qb.format(), DType::f8e5m2);
  GemmOptions options;
  options.a_scale_inv = qa.scale_inv;
  options.b_scale_inv = qb.scale_inv;
  options.out_dtype = DType::f32;
  const Host out = download(gemm(qa.data, qb.data, options));

  const LD a_scale_inv = download(qa.scale_inv).get(0), b_scale_inv = download(qb.scale_inv).get(0);
  Host da = download(qa.data), db = download(qb.data);
  const MatmulReference quantized = matmul_reference(da, db, m, n, k), exact = matmul_reference(a, b, m, n, k);
  std::vector<LD> want, scale;
  for (size_t i = 0; i < quantized.sum.size(); ++i) {
    want.push_back(quantized.sum[i] * a_scale_inv * b_scale_inv);
    scale.push_back(quantized.magnitude[i] * a_scale_inv * b_scale_inv);
  }
  expect_scaled("gemm of the fp8 tensors", out.values(), want, scale, 1e-5 + fp8_chain_error(4));
  // e5m2 keeps 2 mantissa bits: each product is within 2^-3 + 2^-4 of the exact one.
  expect_scaled("gemm against the unquantized product", out.values(), exact.sum, exact.magnitude, 0.2);
}

TEST(Fp8, ErrorsNameWhatIsWrong) {
  Fp8ScalingState state(emu());
  auto quantize_error = [&](const Tensor& x) { return error_of([&] { fp8_quantize(x, state); }); };
  EXPECT_THAT(quantize_error(Tensor::empty(emu(), DType::i32, {4})),
              HasSubstr("fp8_quantize: x must be f32, f16 or bf16, but is i32[4]"));
  EXPECT_THAT(quantize_error(Tensor::empty(emu(), DType::f8e4m3, {4})),
              HasSubstr("fp8_quantize: x must be f32, f16 or bf16, but is f8e4m3[4]"));
  EXPECT_THAT(quantize_error(every_other_row(Tensor::empty(emu(), DType::f32, {4, 3}))),
              HasSubstr("fp8_quantize: x must be contiguous (row-major), but f32[2, 3]"));
  EXPECT_THAT(quantize_error(Tensor::empty(other_device(), DType::f32, {4})),
              HasSubstr("fp8_quantize: x and the scaling state's scale must be on one device"));
  auto state_error = [](int margin, int64_t len) {
    return error_of(
        [&] { (void)Fp8ScalingState(emu(), recipe_of(Fp8Format::HYBRID, AmaxComputeAlgo::max, margin, len)); });
  };
  EXPECT_THAT(state_error(127, 8), HasSubstr("Fp8ScalingState: margin 127 is out of range (-126 to 126"));
  EXPECT_THAT(state_error(-127, 8), HasSubstr("Fp8ScalingState: margin -127 is out of range"));
  EXPECT_THAT(state_error(0, 0), HasSubstr("Fp8ScalingState: amax_history_len 0 is out of range (1 to 1073741824)"));
  EXPECT_THAT(state_error(0, (int64_t{1} << 30) + 1), HasSubstr("amax_history_len 1073741825 is out of range"));
  EXPECT_THAT(error_of([] { fp8_max(DType::bf16); }), HasSubstr("fp8_max: bf16 is not an fp8 dtype"));
}

}  // namespace
}  // namespace tjfp8
