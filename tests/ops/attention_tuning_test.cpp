// The attention forward as a tunable op on the emulator: tuning a shape through the op's own
// launch path stores a result that later calls of its bucket run (and compute correctly);
// results are kept apart by causality and serve only the calls tuning covers; with
// TILEJIT_AUTOTUNE=1 an untuned shape is tuned on its first call; the sampled-row check
// rejects a wrong output. The process's cache lives in a fresh directory.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "autotune/config_choice.h"
#include "autotune/device_runner.h"
#include "autotune/tuner.h"
#include "ops/attention/host_reference.h"
#include "ops/attention/tuning.h"
#include "tests/fresh_cache.h"
#include "tests/ptx_dump.h"
#include "tests/ops/cost_model_ranking.h"
#include "tests/ops/attention_test_util.h"
#include "tests/scoped_env.h"

namespace tjops {
namespace {

namespace ad = tilejit::ops::attention_detail;
namespace at = tilejit::autotune;

constexpr const char* kDevice = "emu:sm_90a";

// The problem of an attention call on one batch of `c.N` heads (k and v with `c.K`) with
// options `o`, on inputs that are never read.
struct Call {
  Call(const AttentionCase& c, AttentionOptions o)
      : device(Device::by_name(kDevice)),
        q(Tensor::empty(device, c.dtype, {1, c.T, c.N, c.H})),
        k(Tensor::empty(device, c.dtype, {1, c.S, c.K, c.H})),
        v(Tensor::empty(device, c.dtype, {1, c.S, c.K, c.H})),
        options(std::move(o)),
        problem(ad::check_attention(tilejit::ops::OpArguments("attention"), q, k, v, options)) {}
  Device& device;
  Tensor q, k, v;
  AttentionOptions options;
  ad::AttentionProblem problem;
};

std::vector<std::pair<std::string, int64_t>> constants(const ad::KernelConfig& c, int64_t head_dim) {
  return c.constants(head_dim);
}

AttentionCase forward_case(DType dtype, int64_t heads, int64_t T, int64_t S, int64_t H, bool causal) {
  AttentionCase c;
  c.dtype = dtype, c.T = T, c.S = S, c.N = c.K = heads, c.H = H, c.causal = causal;
  c.backward = false;
  c.public_api = true;  // attention() itself, with the config it picks
  c.device = kDevice;
  return c;
}

AttentionOptions causal_options(bool causal) {
  AttentionOptions o;
  o.is_causal = causal;
  return o;
}

// Tunes `op` for `shape` through its own runner on the emulator, timing the top `top_k`;
// every candidate must run and compute right. The best config.
at::Config tuned_through_runner(const at::TunableKernel& op, const at::ProblemShape& shape, int top_k, uint64_t seed) {
  Device& device = Device::by_name(kDevice);
  SCOPED_TRACE(op.name);
  auto runner = at::make_candidate_runner(op, shape, device, at::TimingOptions::for_device(device.info()), seed);
  at::TuneOptions options;
  options.top_k = top_k;
  at::TuneResult result = at::tune(op, shape, *runner, at::TuningDatabase::global(), options);
  EXPECT_EQ(result.timed, top_k);
  for (const at::CandidateResult& c : result.candidates)
    EXPECT_EQ(c.trial.status, at::TrialStatus::ok) << c.config.str() << ": " << c.trial.detail;
  if (!result.best) ADD_FAILURE() << op.name << ": no best config";
  return result.best ? result.best->config : at::Config{};
}

TEST(AttentionTuning, ATunedShapeServesLaterCalls) {
  Device& device = Device::by_name(kDevice);
  const ad::AttentionTuningSpec spec{DType::bf16, 64, false};
  const at::ProblemShape shape{{{"BN", 2}, {"G", 1}, {"T", 48}, {"S", 40}}};
  const at::Config best = tuned_through_runner(ad::attention_tunable(spec), shape, 3, 7);
  const AttentionCase c = forward_case(DType::bf16, 2, 48, 40, 64, false);
  EXPECT_EQ(constants(ad::forward_call_config(Call(c, {}).problem, device), 64),
            constants(ad::kernel_config_of(best), 64));
  check_attention_case(c);
}

// A stored result unlike the heuristic's serves every plain call of its bucket with its
// causality, and runs correctly there; the other causality, and calls with options tuning does
// not cover, take the heuristic.
TEST(AttentionTuning, TheStoredResultOfABucketIsWhatItsCallsRun) {
  Device& device = Device::by_name(kDevice);
  const ad::AttentionTuningSpec spec{DType::f16, 32, true};
  const at::Config stored{{{"BLOCK_M", 16}, {"BLOCK_N", 64}, {"num_warps", 4}, {"HEAD_CHUNK", 16}, {"num_stages", 2},
                           {"OVERLAP", 1}, {"warp_specialize", 0}, {"pingpong", 0}}};
  const ad::KernelConfig heuristic = ad::choose_configs(DType::f16, 32, device.info()).forward;
  ASSERT_NE(constants(ad::kernel_config_of(stored), 32), constants(heuristic, 32));
  const at::ProblemShape tuned{{{"BN", 4}, {"G", 1}, {"T", 64}, {"S", 64}}};
  const at::TunableKernel& op = ad::attention_tunable(spec);
  at::TuningDatabase::global().offer_best(at::TuningKey::of(op, tuned, device.info()), {stored, 0.001, tuned, 0, {}});

  // BN 3 -> 4, T 50 and S 60 -> 64: the tuned bucket.
  AttentionCase c = forward_case(DType::f16, 3, 50, 60, 32, true);
  EXPECT_EQ(constants(ad::forward_call_config(Call(c, causal_options(true)).problem, device), 32),
            constants(ad::kernel_config_of(stored), 32));
  check_attention_case(c);

  EXPECT_EQ(constants(ad::forward_call_config(Call(c, causal_options(false)).problem, device), 32),
            constants(heuristic, 32));
  AttentionOptions bottom_right;
  bottom_right.causal_bottom_right = true;  // S > T: a band tuning does not cover
  EXPECT_EQ(constants(ad::forward_call_config(Call(c, bottom_right).problem, device), 32), constants(heuristic, 32));
  AttentionOptions with_bias = causal_options(true);
  with_bias.bias = Tensor::empty(device, DType::f32, {1, 1, 50, 60});
  EXPECT_EQ(constants(ad::forward_call_config(Call(c, with_bias).problem, device), 32), constants(heuristic, 32));
}

// A bucket holding results of two tuned shapes: each call runs the nearest one's, whichever
// shape came first.
TEST(AttentionTuning, EachCallRunsTheNearestTunedShapesResult) {
  Device& device = Device::by_name(kDevice);
  const ad::AttentionTuningSpec spec{DType::bf16, 40, true};
  const at::TunableKernel& op = ad::attention_tunable(spec);
  const at::Config short_queries{{{"BLOCK_M", 16}, {"BLOCK_N", 64}, {"num_warps", 4}, {"HEAD_CHUNK", 16},
                                  {"num_stages", 2}, {"OVERLAP", 1}, {"warp_specialize", 0}, {"pingpong", 0}}};
  const at::Config long_queries{{{"BLOCK_M", 32}, {"BLOCK_N", 32}, {"num_warps", 4}, {"HEAD_CHUNK", 32},
                                 {"num_stages", 1}, {"OVERLAP", 0}, {"warp_specialize", 0}, {"pingpong", 0}}};
  const at::ProblemShape short_shape{{{"BN", 2}, {"G", 1}, {"T", 33}, {"S", 64}}};
  const at::ProblemShape long_shape{{{"BN", 2}, {"G", 1}, {"T", 64}, {"S", 64}}};
  auto& db = at::TuningDatabase::global();
  db.offer_best(at::TuningKey::of(op, short_shape, device.info()), {short_queries, 0.001, short_shape, 0, {}});
  db.offer_best(at::TuningKey::of(op, long_shape, device.info()), {long_queries, 0.001, long_shape, 0, {}});

  auto runs = [&](int64_t T) {
    Call call(forward_case(DType::bf16, 2, T, 64, 40, true), causal_options(true));
    return constants(ad::forward_call_config(call.problem, device), 40);
  };
  EXPECT_EQ(runs(60), constants(ad::kernel_config_of(long_queries), 40));
  EXPECT_EQ(runs(34), constants(ad::kernel_config_of(short_queries), 40));
  EXPECT_EQ(runs(64), constants(ad::kernel_config_of(long_queries), 40));
  AttentionCase c = forward_case(DType::bf16, 2, 34, 64, 40, true);
  check_attention_case(c);
}

// dk / dv and dq are tuned alone, through their own launches on inputs made once; a call of
// the backward pass runs both results, and its gradients are right with them.
TEST(AttentionTuning, TheBackwardKernelsAreTunedAloneAndServeTheBackwardPass) {
  Device& device = Device::by_name(kDevice);
  const ad::AttentionTuningSpec spec{DType::bf16, 64, true};
  const at::ProblemShape shape{{{"BN", 2}, {"G", 1}, {"T", 40}, {"S", 56}}};
  std::map<ad::TunedKernel, ad::KernelConfig> tuned;
  for (ad::TunedKernel kernel : {ad::TunedKernel::dkdv, ad::TunedKernel::dq})
    tuned[kernel] = ad::kernel_config_of(tuned_through_runner(ad::attention_tunable(spec, kernel), shape, 2, 11));
  AttentionCase c = forward_case(DType::bf16, 2, 40, 56, 64, true);
  c.backward = true;
  const ad::AttentionConfigs configs = ad::backward_call_configs(Call(c, causal_options(true)).problem, device);
  EXPECT_EQ(constants(configs.dkdv, 64), constants(tuned[ad::TunedKernel::dkdv], 64));
  EXPECT_EQ(constants(configs.dq, 64), constants(tuned[ad::TunedKernel::dq], 64));
  check_attention_case(c);

  // Results unlike the heuristic's, stored for another bucket, are what its backward runs.
  const at::ProblemShape other{{{"BN", 1}, {"G", 1}, {"T", 24}, {"S", 24}}};
  const std::map<ad::TunedKernel, at::Config> stored = {
      {ad::TunedKernel::dkdv,
       at::Config{{{"BLOCK_M", 16}, {"BLOCK_N", 32}, {"num_warps", 4}, {"HEAD_CHUNK", 32}, {"num_stages", 2}, {"OVERLAP", 1},
                   {"FUSE_DQ", 0}}}},
      {ad::TunedKernel::dq,
       at::Config{{{"BLOCK_M", 32}, {"BLOCK_N", 16}, {"num_warps", 4}, {"HEAD_CHUNK", 16}, {"num_stages", 1}, {"OVERLAP", 0},
                   {"warp_specialize", 0}}}}};
  for (auto& [kernel, config] : stored) {
    const at::TunableKernel& op = ad::attention_tunable(spec, kernel);
    ASSERT_NE(config, op.heuristic_config(other, device.info()));
    at::TuningDatabase::global().offer_best(at::TuningKey::of(op, other, device.info()), {config, 1e-6, other, 0, {}});
  }
  AttentionCase small = forward_case(DType::bf16, 1, 24, 24, 64, true);
  small.backward = true;
  const ad::AttentionConfigs served = ad::backward_call_configs(Call(small, causal_options(true)).problem, device);
  EXPECT_EQ(constants(served.dkdv, 64), constants(ad::kernel_config_of(stored.at(ad::TunedKernel::dkdv)), 64));
  EXPECT_EQ(constants(served.dq, 64), constants(ad::kernel_config_of(stored.at(ad::TunedKernel::dq)), 64));
  check_attention_case(small);
}

// A tuned dk / dv config that sums dq (FUSE_DQ) serves the backward pass in place of the dq
// kernel, but not a call that asks for deterministic results: that one runs the dq kernel.
TEST(AttentionTuning, ACallThatAsksForDeterminismDoesNotSumDqByAtomics) {
  Device& device = Device::by_name(kDevice);
  const ad::AttentionTuningSpec spec{DType::bf16, 64, false};
  const at::ProblemShape shape{{{"BN", 2}, {"G", 1}, {"T", 40}, {"S", 48}}};
  const at::TunableKernel& op = ad::attention_tunable(spec, ad::TunedKernel::dkdv);
  const at::Config fused{{{"BLOCK_M", 16}, {"BLOCK_N", 32}, {"num_warps", 4}, {"HEAD_CHUNK", 64}, {"num_stages", 2},
                          {"OVERLAP", 1}, {"FUSE_DQ", 1}}};
  ASSERT_FALSE(op.space.violated(fused, shape).has_value());
  at::TuningDatabase::global().offer_best(at::TuningKey::of(op, shape, device.info()), {fused, 1e-6, shape, 0, {}});
  AttentionCase c = forward_case(DType::bf16, 2, 40, 48, 64, false);
  c.backward = true;
  auto fused_kernel_built = [&] {
    std::vector<std::string> ptx = tilejit::testing_util::ptx_built_by([&] { check_attention_case(c); });
    return std::any_of(ptx.begin(), ptx.end(), [](const std::string& text) {
      return text.find(".entry attention_backward_dkdv_dq(") != std::string::npos;
    });
  };
  c.deterministic = true;
  EXPECT_FALSE(fused_kernel_built());
  c.deterministic = false;
  EXPECT_TRUE(fused_kernel_built());
}

// Grouped-query attention is tuned as it runs (BN query heads over BN / G kv heads), and a
// group size's results serve only calls with that group size.
TEST(AttentionTuning, GroupsAreTunedAsTheyRunAndKeptApart) {
  Device& device = Device::by_name(kDevice);
  const ad::AttentionTuningSpec spec{DType::bf16, 32, false};
  const at::ProblemShape grouped{{{"BN", 4}, {"G", 2}, {"T", 24}, {"S", 40}}};
  for (ad::TunedKernel kernel : {ad::TunedKernel::forward, ad::TunedKernel::dkdv})
    tuned_through_runner(ad::attention_tunable(spec, kernel), grouped, 2, 5);
  const at::ProblemShape other{{{"BN", 4}, {"G", 2}, {"T", 64}, {"S", 64}}};
  const at::Config stored{{{"BLOCK_M", 16}, {"BLOCK_N", 32}, {"num_warps", 4}, {"HEAD_CHUNK", 16}, {"num_stages", 2},
                           {"OVERLAP", 1}, {"warp_specialize", 0}, {"pingpong", 0}}};
  const at::TunableKernel& forward = ad::attention_tunable(spec);
  at::TuningDatabase::global().offer_best(at::TuningKey::of(forward, other, device.info()), {stored, 1e-6, other, 0, {}});
  AttentionCase c = forward_case(DType::bf16, 4, 50, 60, 32, false);
  c.K = 2;
  EXPECT_EQ(constants(ad::forward_call_config(Call(c, {}).problem, device), 32),
            constants(ad::kernel_config_of(stored), 32));
  check_attention_case(c);
  AttentionCase heads = c;
  heads.K = 4;  // G = 1: another bucket
  EXPECT_EQ(constants(ad::forward_call_config(Call(heads, {}).problem, device), 32),
            constants(ad::choose_configs(DType::bf16, 32, device.info()).forward, 32));
}

// The heuristic's configs (which assemble without spills) of sm_80 and sm_90a lie in every
// tuning space, so the tuner ranks them among the others.
TEST(AttentionTuning, TheSpacesHoldTheHeuristicConfigs) {
  for (const char* device : {"emu:sm_80", "emu:sm_90a"})
    for (DType dtype : {DType::bf16, DType::f16, DType::f32})
      for (int64_t head_dim = 8; head_dim <= 256; head_dim += 8)
        for (ad::TunedKernel kernel : {ad::TunedKernel::forward, ad::TunedKernel::dkdv, ad::TunedKernel::dq}) {
          const at::TunableKernel& op = ad::attention_tunable({dtype, head_dim, false}, kernel);
          const at::ProblemShape shape{{{"BN", 8}, {"G", 2}, {"T", 1024}, {"S", 1024}}};
          const at::Config heuristic = op.heuristic_config(shape, Device::by_name(device).info());
          EXPECT_FALSE(op.space.violated(heuristic, shape))
              << device << " " << op.name << " " << op.dtypes << " " << op.layout << ": " << heuristic.str()
              << " breaks " << op.space.violated(heuristic, shape).value_or("");
        }
}

TEST(AttentionTuning, TuningCoversPlainCallsOnly) {
  Device& device = Device::by_name(kDevice);
  const AttentionCase c = forward_case(DType::bf16, 2, 40, 40, 64, false);
  auto spec_of = [&](const AttentionOptions& o) { return ad::AttentionTuningSpec::of(Call(c, o).problem); };
  auto layout_of = [&](const AttentionOptions& o) { return spec_of(o) ? spec_of(o)->layout() : "none"; };
  AttentionOptions o;
  EXPECT_EQ(layout_of(o), "h64");
  o.return_logsumexp = true;
  EXPECT_EQ(layout_of(o), "h64");
  o.is_causal = true;
  EXPECT_EQ(layout_of(o), "h64/causal");
  o = {};
  o.causal_bottom_right = true;  // T == S: the top-left band
  EXPECT_EQ(layout_of(o), "h64/causal");
  o = {};
  o.local_window = std::pair<int64_t, int64_t>{40, 0};  // every key to the left: causal
  EXPECT_EQ(layout_of(o), "h64/causal");
  o.local_window = std::pair<int64_t, int64_t>{8, 0};
  EXPECT_EQ(layout_of(o), "none");
  o = {};
  o.causal_bottom_right = true;  // T > S: the band starts below the diagonal
  AttentionCase longer = c;
  longer.S = 20;
  EXPECT_FALSE(ad::AttentionTuningSpec::of(Call(longer, o).problem).has_value());
  o = {};
  o.scale = 0.5;  // a scalar: any scale
  EXPECT_EQ(layout_of(o), "h64");
  o = {};
  o.kv_seqlens = Tensor::empty(device, DType::i32, {1});
  EXPECT_EQ(layout_of(o), "none");
  o = {};
  o.q_seqlens = Tensor::empty(device, DType::i32, {1});
  EXPECT_EQ(layout_of(o), "none");
  o = {};
  o.mask = Tensor::empty(device, DType::i1, {1, 1, 40, 40});
  EXPECT_EQ(layout_of(o), "none");
  o = {};
  o.bias = Tensor::empty(device, DType::bf16, {1, 2, 40, 40});
  EXPECT_EQ(layout_of(o), "none");
}

TEST(AttentionTuning, AnUntunedShapeIsTunedOnItsFirstCallWithAutotune) {
  tilejit::testing_util::ScopedEnv autotune("TILEJIT_AUTOTUNE", "1");
  Device& device = Device::by_name(kDevice);
  const ad::AttentionTuningSpec spec{DType::f32, 16, false};
  const at::ProblemShape shape{{{"BN", 1}, {"G", 1}, {"T", 20}, {"S", 24}}};
  const at::TuningKey key = at::TuningKey::of(ad::attention_tunable(spec), shape, device.info());
  ASSERT_FALSE(at::TuningDatabase::global().best(key, shape).has_value());
  check_attention_case(forward_case(DType::f32, 1, 20, 24, 16, false));
  std::optional<at::BestConfig> best = at::TuningDatabase::global().best(key, shape);
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->tuned_shape, shape);
}

// Two queries over two keys, worked out by hand: t = 0 (q = 0) weighs both keys 1/2; t = 1
// (q = 1) sees logits 0 and log 3, weights 1/4 and 3/4.
TEST(AttentionTuning, TheSampledCheckRejectsAWrongOutput) {
  ad::HostAttention host;
  host.B = 1, host.T = 2, host.S = 2, host.N = 1, host.K = 1, host.H = 1;
  host.dtype = DType::f32;
  host.q = {0, 1}, host.k = {0, std::log(3.0)}, host.v = {2, 4};
  const ad::SampledForward reference(host);
  const std::vector<double> out = {3, 3.5}, lse = {std::log(2.0), std::log(4.0)};
  EXPECT_TRUE(reference.check(out, lse).ok);
  std::vector<double> off = out;
  off[1] += 0.01;
  ad::ErrorTally wrong = reference.check(off, lse);
  EXPECT_FALSE(wrong.ok);
  EXPECT_NEAR(wrong.max_abs_error, 0.01, 1e-12);
  std::vector<double> wrong_lse = lse;
  wrong_lse[0] += 0.01;
  EXPECT_FALSE(reference.check(out, wrong_lse).ok);
  std::vector<double> nan = out;
  nan[0] = NAN;
  EXPECT_FALSE(reference.check(nan, lse).ok);
  EXPECT_TRUE(std::isinf(reference.check(nan, lse).max_abs_error));
}

// The backward's sampled check (it decides which dq and dk / dv candidates may win) agrees with
// the tests' own long-double reference on a small causal GQA problem, and rejects one wrong
// element of dq, dk or dv.
TEST(AttentionTuning, TheSampledBackwardCheckRejectsAWrongGradient) {
  AttentionCase c;
  c.dtype = DType::f32, c.B = 1, c.T = 5, c.S = 6, c.N = 4, c.K = 2, c.H = 8, c.causal = true;
  TJ_SEEDED_RNG(rng);
  const AttentionInputs in = random_inputs(c, rng);
  const AttentionReference want = attention_reference(c, in);
  auto values = [](const Host& h) {
    std::vector<double> out(h.size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = double(h.get(i));
    return out;
  };
  auto doubles = [](const std::vector<LD>& x) { return std::vector<double>(x.begin(), x.end()); };
  ad::HostAttention host;
  host.B = c.B, host.T = c.T, host.S = c.S, host.N = c.N, host.K = c.K, host.H = c.H;
  host.causal = true, host.dtype = DType::f32, host.scale = 1 / std::sqrt(double(c.H));
  host.q = values(in.q), host.k = values(in.k), host.v = values(in.v), host.dout = values(in.dout);
  const ad::SampledBackward reference(host);
  const std::vector<double> dq = doubles(want.dq), dk = doubles(want.dk), dv = doubles(want.dv);
  EXPECT_TRUE(reference.check_dq(dq).ok);
  EXPECT_TRUE(reference.check_dkdv(dk, dv).ok);
  for (size_t at : {size_t{0}, dq.size() / 2, dq.size() - 1}) {
    std::vector<double> off = dq;
    off[at] += 0.01;
    EXPECT_FALSE(reference.check_dq(off).ok) << "dq[" << at << "]";
  }
  for (size_t at : {size_t{3}, dk.size() - 1}) {
    std::vector<double> off_k = dk, off_v = dv;
    off_k[at] += 0.01, off_v[at] -= 0.01;
    EXPECT_FALSE(reference.check_dkdv(off_k, dv).ok) << "dk[" << at << "]";
    EXPECT_FALSE(reference.check_dkdv(dk, off_v).ok) << "dv[" << at << "]";
  }
}

// The forward's and dq's spaces offer a producer warpgroup where the kernels can use it (16-bit
// inputs), with two stages and whole warpgroups only, and the forward's consumer warpgroups
// that take turns (pingpong) with a producer, OVERLAP and two warpgroups of 64 rows only; a
// stored result that asks for both is what its calls run, and they compute right.
TEST(AttentionTuning, AProducerWarpgroupIsOfferedWhereAKernelCanUseIt) {
  auto offers = [](const ad::AttentionTuningSpec& spec, ad::TunedKernel kernel, const char* constant) {
    std::vector<std::string> names = ad::attention_tunable(spec, kernel).space.constants();
    return std::find(names.begin(), names.end(), constant) != names.end();
  };
  for (const char* constant : {"warp_specialize", "pingpong"}) {
    EXPECT_TRUE(offers({DType::bf16, 64, false}, ad::TunedKernel::forward, constant));
    EXPECT_TRUE(offers({DType::bf16, 64, true}, ad::TunedKernel::forward, constant));
    EXPECT_FALSE(offers({DType::f32, 64, false}, ad::TunedKernel::forward, constant));
    EXPECT_FALSE(offers({DType::f16, 64, true}, ad::TunedKernel::dkdv, constant));
  }
  EXPECT_TRUE(offers({DType::bf16, 64, true}, ad::TunedKernel::dq, "warp_specialize"));
  EXPECT_FALSE(offers({DType::bf16, 64, true}, ad::TunedKernel::dq, "pingpong"));

  Device& device = Device::by_name(kDevice);
  const ad::AttentionTuningSpec spec{DType::f16, 64, false};
  const at::TunableKernel& op = ad::attention_tunable(spec);
  const at::ProblemShape shape{{{"BN", 8}, {"G", 1}, {"T", 32}, {"S", 64}}};
  auto config = [](int64_t warps, int64_t stages, int64_t overlap, int64_t producer, int64_t pingpong,
                   int64_t rows = 128) {
    return at::Config{{{"BLOCK_M", rows}, {"BLOCK_N", 32}, {"num_warps", warps}, {"HEAD_CHUNK", 64},
                       {"num_stages", stages}, {"OVERLAP", overlap}, {"warp_specialize", producer},
                       {"pingpong", pingpong}}};
  };
  EXPECT_TRUE(op.space.violated(config(8, 1, 0, 1, 0), shape).has_value());
  EXPECT_TRUE(op.space.violated(config(2, 2, 1, 1, 0), shape).has_value());
  EXPECT_TRUE(op.space.violated(config(4, 2, 1, 1, 1), shape).has_value());
  EXPECT_TRUE(op.space.violated(config(8, 2, 0, 1, 1), shape).has_value());
  EXPECT_TRUE(op.space.violated(config(8, 2, 1, 0, 1), shape).has_value());
  EXPECT_TRUE(op.space.violated(config(8, 2, 1, 1, 1, 64), shape).has_value());
  const at::Config stored = config(8, 2, 1, 1, 1);
  ASSERT_FALSE(op.space.violated(stored, shape).has_value());
  at::TuningDatabase::global().offer_best(at::TuningKey::of(op, shape, device.info()), {stored, 1e-6, shape, 0, {}});
  AttentionCase c = forward_case(DType::f16, 8, 30, 60, 64, false);
  const ad::KernelConfig served = ad::forward_call_config(Call(c, {}).problem, device);
  EXPECT_TRUE(served.warp_specialize && served.pingpong);
  EXPECT_EQ(constants(served, 64), constants(ad::kernel_config_of(stored), 64));
  std::vector<std::string> ptx = tilejit::testing_util::ptx_built_by([&] { check_attention_case(c); });
  ASSERT_EQ(ptx.size(), 1u);
  EXPECT_NE(ptx[0].find("setmaxnreg.inc"), std::string::npos);
  EXPECT_NE(ptx[0].find("bar.arrive"), std::string::npos);
}

// How a tuning ranks the forward (bf16, head dim 128, 16 heads of 16384 queries and keys) on
// an H100 and an A100 (autotune::rank_candidates: the heuristic's config, then the cost
// model's order). On sm_90a FlashAttention-3's schedule comes right after the heuristic's: 128
// queries by 128 keys, the whole head in one chunk, a producer warpgroup and two consumer
// warpgroups taking turns, each overlapping its softmax with its products; the 8 configs a
// tuning times hold the same tile without the turns or the producer, and no one-stage
// pipeline (it leaves each step waiting for its copies). On sm_80, whose operands pass through
// registers, that tile would spill: the 8 leave it out.
TEST(AttentionTuning, TheCostModelRanksFlashAttention3sScheduleFirstOnSm90) {
  const at::TunableKernel& op = ad::attention_tunable({DType::bf16, 128, false});
  const at::ProblemShape shape{{{"BN", 16}, {"G", 1}, {"T", 16384}, {"S", 16384}}};
  auto tile = [](const at::Config& c, int64_t rows, int64_t keys) {
    return c["BLOCK_M"] == rows && c["BLOCK_N"] == keys && c["num_warps"] == 8 && c["HEAD_CHUNK"] == 128;
  };
  const auto hopper = at::rank_candidates(op, shape, model_gpu("sm_90a", 132)).configs;
  ASSERT_GE(hopper.size(), 8u);
  ASSERT_TRUE(hopper[0].heuristic);
  const at::Config& first = hopper[1].config;
  EXPECT_TRUE(tile(first, 128, 128) && first["warp_specialize"] == 1 && first["pingpong"] == 1 &&
              first["OVERLAP"] == 1 && first["num_stages"] == 2)
      << first.str();
  EXPECT_LT(hopper[1].estimate_ms, hopper[0].estimate_ms);
  auto in_top_8 = [&](auto&& pred) {
    return std::any_of(hopper.begin(), hopper.begin() + 8, [&](auto& r) { return pred(r.config); });
  };
  EXPECT_TRUE(in_top_8([&](const at::Config& c) {
    return tile(c, 128, 128) && c["pingpong"] == 0 && c["warp_specialize"] == 1;
  }));
  EXPECT_TRUE(in_top_8([&](const at::Config& c) { return tile(c, 128, 128) && c["warp_specialize"] == 0; }));
  EXPECT_FALSE(in_top_8([](const at::Config& c) { return c["num_stages"] == 1; }));

  const auto ampere = at::rank_candidates(op, shape, model_gpu("sm_80", 108)).configs;
  auto wide = std::find_if(ampere.begin(), ampere.end(), [&](auto& r) { return tile(r.config, 128, 128); });
  ASSERT_NE(wide, ampere.end());
  EXPECT_GE(wide - ampere.begin(), 8) << ampere[1].config.str();
}
}  // namespace
}  // namespace tjops
