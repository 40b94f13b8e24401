// layer_norm, rms_norm and their backward against the long-double references of
// norms_test_util.h: odd hidden sizes (rows in registers, several rows per tile, and rows
// walked in blocks), every dtype and gamma dtype, zero-centered gamma, eps, the mean / rsigma
// outputs, the fused fp8 copy of y with its amax and scale update, the analytic gradient, and
// a deterministic dgamma; then every error case.
#include <dlpack/dlpack.h>
#include <gmock/gmock.h>

#include "tests/ops/norms_test_util.h"

namespace tjnorms {
namespace {

using ::testing::HasSubstr;

// The reference gradient (the Jacobian) agrees with central differences of the reference
// forward, in long double.
TEST(NormsReference, JacobianMatchesFiniteDifferences) {
  TJ_SEEDED_RNG(rng);
  for (bool layer : {true, false}) {
    NormCase c{layer, {3, 7}, DType::f32, DType::f32, layer, 1e-3f};
    const NormInputs in = norm_inputs(c, rng);
    const BackwardReference ref = backward_reference(c, in);
    const LD step = 1e-7L;
    for (size_t r = 0; r < 3; ++r) {
      const std::vector<LD> x = row_of(c, in.x, r);
      for (size_t j = 0; j < 7; ++j) {
        std::vector<LD> up = x, down = x;
        up[j] += step, down[j] -= step;
        const std::vector<LD> y_up = norm_row(c, up, in).y, y_down = norm_row(c, down, in).y;
        LD dx = 0;
        for (size_t i = 0; i < 7; ++i) dx += in.dy.get(r * 7 + i) * (y_up[i] - y_down[i]) / (2 * step);
        EXPECT_NEAR(static_cast<double>(dx), static_cast<double>(ref.dx[r * 7 + j]),
                    1e-6 * static_cast<double>(ref.dx_scale[r * 7 + j]))
            << (layer ? "LayerNorm" : "RMSNorm") << " row " << r << " column " << j;
      }
    }
  }
}

std::vector<NormCase> emu_cases() {
  const std::vector<std::vector<int64_t>> shapes = {{67}, {5, 300}, {2, 3, 129}, {7, 1}, {3, 2048}, {2, 8193}};
  const float eps[] = {1e-6f, 1e-3f, 0.5f};
  std::vector<NormCase> cases;
  for (bool layer : {true, false})
    for (size_t d = 0; d < std::size(kNormDTypes); ++d)
      for (size_t k = 0; k < shapes.size(); ++k) {
        const bool walked = shapes[k].back() > 8192;  // rows walked in blocks: two dtype pairs suffice
        if (walked && d != 0 && d != 4) continue;
        cases.push_back({layer, shapes[k], kNormDTypes[d].first, kNormDTypes[d].second, layer && (k + d) % 2 == 1,
                         eps[(k + d) % 3]});
      }
  // More rows than the backward has programs: each program walks several tiles of rows.
  cases.push_back({true, {33000, 3}, DType::f32, DType::f32, false, 1e-6f});
  cases.push_back({false, {40000, 3}, DType::bf16, DType::f32, false, 1e-6f});
  return cases;
}

class Norms : public ::testing::TestWithParam<NormCase> {};

// Forward with every output, with the fp8 copy alone, and without any; the backward from the forward's statistics, then
// once more, bit-identical.
TEST_P(Norms, ForwardAndBackward) {
  const NormCase c = GetParam();
  TJ_SEEDED_RNG(rng);
  SCOPED_TRACE(c.describe());
  const NormInputs in = norm_inputs(c, rng);

  const CheckedCase out = check_forward_and_backward(c, in, rng);
  const NormOptions plain = norm_options(c, false);
  const NormOutput y_only = run_forward(c, in, plain);
  check_forward(c, in, y_only, plain, nullptr);
  // The fp8 copy without the statistics: a kernel of its own, with other parameters.
  DelayedScalingRecipe recipe;
  recipe.amax_history_len = 2;
  Fp8ScalingState state(emu(), recipe);
  HostScaling host(recipe, state.dtype());
  const NormOptions fp8_only = norm_options(c, false, &state);
  check_forward(c, in, run_forward(c, in, fp8_only), fp8_only, &host);

  const NormGradients& g = out.backward;
  const NormGradients again = run_backward(c, in, out.forward);
  EXPECT_EQ(download(again.dx).bytes, download(g.dx).bytes) << "dx is deterministic";
  EXPECT_EQ(download(again.dgamma).bytes, download(g.dgamma).bytes) << "dgamma is deterministic";
  if (c.layer) {
    EXPECT_EQ(download(*again.dbeta).bytes, download(*g.dbeta).bytes) << "dbeta is deterministic";
  }
}

INSTANTIATE_TEST_SUITE_P(Emu, Norms, ::testing::ValuesIn(emu_cases()),
                         [](const auto& info) { return case_name(info.param); });

// x with no rows: empty outputs, zero dgamma / dbeta, and the fp8 output still gets its scale_inv.
TEST(Norms, NoRows) {
  Tensor x = Tensor::empty(emu(), DType::bf16, {0, 5}), gamma = upload(Host(DType::f32, 5)), beta = gamma;
  Fp8ScalingState state(emu());
  NormOptions options;
  options.store_statistics = true;
  options.fp8_state = &state;
  options.fp8_options.update_scale = false;
  NormOutput out = layer_norm(x, gamma, beta, options);
  EXPECT_EQ(out.y.shape(), (std::vector<int64_t>{0, 5}));
  EXPECT_EQ(out.mean->shape(), (std::vector<int64_t>{0}));
  expect_same("scale_inv", download(out.y_fp8->scale_inv).values(), {1});
  expect_same("amax", download(state.amax_history()).values(), std::vector<LD>(1024, 0));
  NormGradients g = layer_norm_backward(x, x, *out.mean, *out.rsigma, gamma);
  expect_same("dgamma", download(g.dgamma).values(), std::vector<LD>(5, 0));
  expect_same("dbeta", download(*g.dbeta).values(), std::vector<LD>(5, 0));
}

// A NaN in x makes its row NaN (mean and rsigma too) and leaves the other rows alone; the fp8
// copy of that row is NaN and the amax is the quiet NaN, as fp8_quantize has it.
TEST(Norms, NanInXStaysInItsRow) {
  TJ_SEEDED_RNG(rng);
  for (bool layer : {true, false}) {
    const NormCase c{layer, {3, 37}, DType::bf16, DType::f32, false, 1e-6f};
    NormInputs in = norm_inputs(c, rng);
    in.x.set(37 + static_cast<size_t>(rng.integer(0, 36)), std::numeric_limits<LD>::quiet_NaN());
    Fp8ScalingState state(emu());
    NormOutput out = run_forward(c, in, norm_options(c, true, &state, false));
    const Host y = download(out.y), q = download(out.y_fp8->data);
    for (size_t i = 0; i < 3 * 37; ++i) {
      EXPECT_EQ(std::isnan(y.get(i)), i / 37 == 1) << "y[" << i << "]";
      EXPECT_EQ(std::isnan(q.get(i)), i / 37 == 1) << "fp8 copy [" << i << "]";
    }
    const Host rsigma = download(*out.rsigma);
    for (size_t r = 0; r < 3; ++r) EXPECT_EQ(std::isnan(rsigma.get(r)), r == 1) << "rsigma[" << r << "]";
    EXPECT_EQ(download(state.amax_history()).raw(0), 0x7fc00000u);
  }
}

TEST(Norms, ErrorsNameWhatIsWrong) {
  auto f32 = [](std::vector<int64_t> shape, Device& d = emu()) { return Tensor::empty(d, DType::f32, shape); };
  auto typed = [](DType t, std::vector<int64_t> shape) { return Tensor::empty(emu(), t, shape); };
  const Tensor x = f32({4, 6}), g = f32({6});
  auto ln = [](const Tensor& x, const Tensor& g, const Tensor& b, NormOptions o = {}) {
    return error_of([&] { layer_norm(x, g, b, o); });
  };
  auto rms = [](const Tensor& x, const Tensor& g, NormOptions o = {}) { return error_of([&] { rms_norm(x, g, o); }); };

  EXPECT_THAT(ln(typed(DType::i32, {4, 6}), g, g),
              HasSubstr("layer_norm: x must be f32, f16 or bf16, but is i32[4, 6]"));
  EXPECT_THAT(rms(typed(DType::f8e4m3, {4, 6}), g), HasSubstr("rms_norm: x must be f32, f16 or bf16, but is f8e4m3"));
  EXPECT_THAT(rms(f32({}), g),
              HasSubstr("rms_norm: x must have rank 1 or more (the last dimension is normalized), but is f32[]"));
  EXPECT_THAT(rms(f32({4, 0}), f32({0})),
              HasSubstr("rms_norm: x's hidden size (its last dimension) must be at least 1, but x is f32[4, 0]"));
  DLManagedTensor* too_wide = f32({1, 6}).to_dlpack();  // rows past 32-bit indexing, never read
  too_wide->dl_tensor.shape[1] = too_wide->dl_tensor.strides[0] = 2147479552;
  EXPECT_THAT(rms(Tensor::from_dlpack(too_wide), g),
              HasSubstr("rms_norm: x's hidden size 2147479552 is larger than 2147479551, beyond the kernels' 32-bit"));
  EXPECT_THAT(rms(every_other_row(f32({8, 6})), g),
              HasSubstr("rms_norm: x must be contiguous (row-major), but f32[4, 6]"));
  EXPECT_THAT(rms(typed(DType::bf16, {4, 6}), typed(DType::f16, {6})),
              HasSubstr("rms_norm: gamma must be f32 or bf16, but is f16[6]"));
  EXPECT_THAT(rms(x, typed(DType::bf16, {6})), HasSubstr("rms_norm: gamma must be f32, but is bf16[6]"));
  EXPECT_THAT(rms(x, f32({7})), HasSubstr("rms_norm: gamma must have shape [6], but is f32[7]"));
  EXPECT_THAT(rms(x, f32({1, 6})), HasSubstr("rms_norm: gamma must have shape [6], but is f32[1, 6]"));
  EXPECT_THAT(rms(x, f32({6}, other_device())), HasSubstr("rms_norm: x and gamma must be on one device"));
  EXPECT_THAT(ln(typed(DType::bf16, {4, 6}), typed(DType::bf16, {6}), f32({6})),
              HasSubstr("layer_norm: gamma and beta must have one dtype, but gamma is bf16[6]"));
  EXPECT_THAT(ln(x, g, f32({5})), HasSubstr("layer_norm: beta must have shape [6], but is f32[5]"));
  EXPECT_THAT(ln(x, g, f32({6}, other_device())), HasSubstr("layer_norm: x and beta must be on one device"));
  NormOptions zero_centered;
  zero_centered.zero_centered_gamma = true;
  EXPECT_THAT(rms(x, g, zero_centered),
              HasSubstr("rms_norm: zero_centered_gamma is not supported with RMSNorm (only LayerNorm uses 1 + gamma)"));
  for (float eps : {-1e-6f, NAN, INFINITY}) {
    NormOptions bad_eps;
    bad_eps.eps = eps;
    EXPECT_THAT(ln(x, g, g, bad_eps), HasSubstr("layer_norm: eps must be finite and not negative, but is"));
  }
  Fp8ScalingState elsewhere(other_device());
  NormOptions fp8_elsewhere;
  fp8_elsewhere.fp8_state = &elsewhere;
  EXPECT_THAT(rms(x, g, fp8_elsewhere), HasSubstr("rms_norm: x and fp8_state's scale must be on one device"));

  const Tensor stats = f32({4});
  auto ln_back = [](const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rsigma, const Tensor& g,
                    NormBackwardOptions o = {}) {
    return error_of([&] { layer_norm_backward(dy, x, mean, rsigma, g, o); });
  };
  auto rms_back = [](const Tensor& dy, const Tensor& x, const Tensor& rsigma, const Tensor& g,
                     NormBackwardOptions o = {}) { return error_of([&] { rms_norm_backward(dy, x, rsigma, g, o); }); };
  EXPECT_THAT(ln_back(typed(DType::bf16, {4, 6}), x, stats, stats, g),
              HasSubstr("layer_norm_backward: dy and x must have one dtype, but dy is bf16[4, 6]"));
  EXPECT_THAT(ln_back(f32({4, 7}), x, stats, stats, g),
              HasSubstr("layer_norm_backward: dy must have x's shape [4, 6], but is f32[4, 7]"));
  EXPECT_THAT(ln_back(f32({4, 6}, other_device()), x, stats, stats, g),
              HasSubstr("layer_norm_backward: x and dy must be on one device"));
  EXPECT_THAT(ln_back(every_other_row(f32({8, 6})), x, stats, stats, g),
              HasSubstr("layer_norm_backward: dy must be contiguous"));
  EXPECT_THAT(ln_back(x, x, f32({4, 1}), stats, g),
              HasSubstr("layer_norm_backward: mean must have shape [4], but is f32[4, 1]"));
  EXPECT_THAT(ln_back(x, x, stats, typed(DType::bf16, {4}), g),
              HasSubstr("layer_norm_backward: rsigma must be f32, but is bf16[4]"));
  EXPECT_THAT(rms_back(x, x, f32({4}, other_device()), g),
              HasSubstr("rms_norm_backward: x and rsigma must be on one device"));
  EXPECT_THAT(rms_back(f32({6}), f32({6}), f32({1}), g),
              HasSubstr("rms_norm_backward: rsigma must have shape [], but is f32[1]"));
  EXPECT_THAT(rms_back(x, x, stats, f32({4})),
              HasSubstr("rms_norm_backward: gamma must have shape [6], but is f32[4]"));
  NormBackwardOptions zero_centered_back;
  zero_centered_back.zero_centered_gamma = true;
  EXPECT_THAT(rms_back(x, x, stats, g, zero_centered_back),
              HasSubstr("rms_norm_backward: zero_centered_gamma is not supported with RMSNorm"));
}

}  // namespace
}  // namespace tjnorms
