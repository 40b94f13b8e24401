// gemm as a tunable op on the emulator: tuning a shape through the op's own launch path
// stores a result that later calls of that shape run; with TILEJIT_AUTOTUNE=1 an untuned
// shape is tuned on its first call; batched calls and untuned shapes take the heuristic; the
// sampled-row check rejects a wrong output. The process's cache (and with it the tuning
// database) lives in a fresh directory, so no earlier run's results are seen.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "autotune/config_choice.h"
#include "autotune/device_runner.h"
#include "autotune/tuner.h"
#include "ops/common/host_values.h"
#include "ops/common/sampled_indices.h"
#include "ops/gemm/gemm_candidate_runner.h"
#include "ops/gemm/gemm_row_check.h"
#include "ops/tunable_ops.h"
#include "tests/ops/cost_model_ranking.h"
#include "tests/ops/gemm_check.h"
#include "tests/error_message.h"
#include "tests/fresh_cache.h"
#include "tests/ptx_dump.h"
#include "tests/scoped_env.h"

namespace tjops {
namespace {

namespace gd = tilejit::ops::gemm_detail;
namespace at = tilejit::autotune;

// The config gemm runs for a call of a and b.
gd::GemmConfig config_of_call(const Tensor& a, const Tensor& b, const GemmOptions& o) {
  gd::GemmProblem p = gd::check_gemm(a, b, o, nullptr);
  return gd::call_config(p, a.device());
}

void expect_same(const gd::GemmConfig& got, const gd::GemmConfig& want) {
  EXPECT_EQ(got.constants(), want.constants());
}

// Tunes `shape`, timing the cost model's top `top_k`: some are timed, a best is found, and every
// candidate ran and passed the output check or was over the device's limits.
at::TuneResult tune_checking_every_candidate(const at::TunableKernel& op, const at::ProblemShape& shape,
                                             Device& device, int top_k) {
  auto runner = at::make_candidate_runner(op, shape, device, at::TimingOptions::for_device(device.info()), 7);
  at::TuneOptions options;
  options.top_k = top_k;
  at::TuneResult result = at::tune(op, shape, *runner, at::TuningDatabase::global(), options);
  EXPECT_TRUE(result.best.has_value());
  EXPECT_GE(result.timed, 1);
  for (const at::CandidateResult& c : result.candidates) {
    SCOPED_TRACE(c.config.str());
    EXPECT_TRUE(c.trial.status == at::TrialStatus::ok || c.trial.status == at::TrialStatus::over_limits)
        << at::trial_status_name(c.trial.status) << ": " << c.trial.detail;
  }
  return result;
}

// fp8 holds each K block's product beside its accumulator (ops/common/f32_dot.h), so its
// tiles hold half the values per thread: no 128 x 256 tile on 8 warps, in the space or from the
// heuristic, unless it accumulates fast, which tunes under a name of its own.
TEST(GemmTuning, Fp8TilesLeaveRoomForTheBlockProductUnlessAccumulatingFast) {
  DeviceInfo h100 = Device::by_name("emu:sm_90a").info();
  h100.sm_count = 132, h100.shared_per_block_optin = 227 * 1024;
  gd::GemmTuningSpec spec{DType::f8e4m3, DType::f8e4m3, DType::bf16, dsl::Precision::tf32, false, true};
  const at::ProblemShape shape{{{"M", 8192}, {"N", 8192}, {"K", 4096}}};
  const at::Config wide{{{"BLOCK_M", 128},
                         {"BLOCK_N", 256},
                         {"BLOCK_K", 128},
                         {"num_warps", 8},
                         {"num_stages", 3},
                         {"SPLIT_K", 1},
                         {"PERSISTENT", 0},
                         {"warp_specialize", 0},
                         {"cluster_x", 1}}};
  const at::TunableKernel& split = gd::gemm_tunable(spec);
  EXPECT_EQ(split.space.violated(wide, shape), "2 * BLOCK_M * BLOCK_N <= 128 * 32 * num_warps");
  EXPECT_EQ(split.heuristic(shape, h100)["BLOCK_N"], 128);
  EXPECT_EQ(spec.dtypes(), "f8e4m3,f8e4m3->bf16");

  spec.fast_accumulation = true;
  const at::TunableKernel& fast = gd::gemm_tunable(spec);
  EXPECT_EQ(fast.space.violated(wide, shape), std::nullopt);
  EXPECT_EQ(fast.heuristic(shape, h100)["BLOCK_N"], 256);
  EXPECT_EQ(spec.dtypes(), "f8e4m3,f8e4m3->bf16/fast_accumulation");
}

// The tuner checks fp8 candidates on small integers, which the tensor cores sum exactly
// (gemm_row_check.h), so its check allows no more than an f32 sum's error and sees a product
// a candidate drops unless the output's rounding hides it. The premise, on the emulator's model of them: such a product is exact, by
// K blocks at K = 2048 and chained below K = 1024 with fast accumulation.
TEST(GemmTuning, Fp8CandidatesAreCheckedOnSmallIntegersSummedExactly) {
  Device& device = Device::by_name("emu:sm_90a");
  std::mt19937_64 rng(11);
  for (auto [k, fast] : {std::pair{int64_t{2048}, false}, std::pair{int64_t{512}, true}}) {
    SCOPED_TRACE(fmt::format("K = {}{}", k, fast ? ", fast accumulation" : ""));
    const int64_t m = 64, n = 64;
    std::vector<uint8_t> a = tilejit::ops::random_integer_elements(DType::f8e4m3, m * k, 4, rng),
                         b = tilejit::ops::random_integer_elements(DType::f8e4m3, k * n, 4, rng);
    GemmOptions o;
    o.out_dtype = DType::f32, o.split_k = 1, o.fp8_fast_accumulation = fast;
    Tensor out = tilejit::ops::gemm(tilejit::ops::upload_elements(device, DType::f8e4m3, {m, k}, a.data()),
                                    tilejit::ops::upload_elements(device, DType::f8e4m3, {k, n}, b.data()), o);
    std::vector<double> av = tilejit::ops::host_values(DType::f8e4m3, a), bv = tilejit::ops::host_values(DType::f8e4m3, b);
    std::vector<double> got = tilejit::ops::download_values(out);
    std::set<double> values(av.begin(), av.end());
    EXPECT_EQ(values, (std::set<double>{-4, -3, -2, -1, 0, 1, 2, 3, 4}));
    size_t inexact = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t t = 0; t < k; ++t) sum += av[size_t(i * k + t)] * bv[size_t(t * n + j)];
        inexact += got[size_t(i * n + j)] != sum;
      }
    gd::GemmFeatures f;
    f.a = f.b = DType::f8e4m3, f.fast_accumulation = fast;
    EXPECT_TRUE(gd::small_integer_sums_exact(f, k));
    EXPECT_EQ(inexact, 0u);
  }

  const gd::GemmTuningSpec spec{DType::f8e4m3, DType::f8e4m3, DType::bf16, dsl::Precision::tf32, false, true};
  tune_checking_every_candidate(gd::gemm_tunable(spec), {{{"M", 64}, {"N", 64}, {"K", 512}}}, device, 2);
}

TEST(GemmTuning, ATunedShapeServesLaterCalls) {
  Device& device = Device::by_name("emu:sm_90a");
  const gd::GemmTuningSpec spec{DType::bf16, DType::bf16, DType::bf16, dsl::Precision::tf32, false, true};
  at::TuneResult result =
      tune_checking_every_candidate(gd::gemm_tunable(spec), {{{"M", 96}, {"N", 80}, {"K", 256}}}, device, 4);
  ASSERT_TRUE(result.best.has_value());

  TJ_SEEDED_RNG(rng);
  GemmCase call{.m = 96, .n = 80, .k = 256, .device = "emu:sm_90a"};
  call.options.transpose_b = true;
  bool looked = false;
  call.before_launch = [&](const Tensor& a, const Tensor& b, const GemmOptions& o) {
    expect_same(config_of_call(a, b, o), gd::gemm_config_of(result.best->config, spec));
    looked = true;
  };
  check_gemm(call, rng);
  EXPECT_TRUE(looked);
}

// A stored result unlike anything the heuristic picks (split-K on a problem with plenty of
// tiles; a producer warpgroup, which B's rows of 240 bytes, read through pointers, leave
// without work) is what a call of any shape of its bucket runs, unless it breaks a
// constraint there, whichever shape of the bucket is called first.
TEST(GemmTuning, TheStoredResultOfABucketIsWhatItsCallsRun) {
  Device& device = Device::by_name("emu:sm_90a");
  const gd::GemmTuningSpec spec{DType::bf16, DType::bf16, DType::bf16, dsl::Precision::tf32, false, false};
  const at::TunableKernel& op = gd::gemm_tunable(spec);
  auto stored_with = [](int64_t block_k) {
    return at::Config{{{"BLOCK_M", 64},
                       {"BLOCK_N", 64},
                       {"BLOCK_K", block_k},
                       {"num_warps", 4},
                       {"num_stages", 2},
                       {"SPLIT_K", 4},
                       {"PERSISTENT", 0},
                       {"warp_specialize", 1},
                       {"cluster_x", 1}}};
  };
  TJ_SEEDED_RNG(rng);
  // Each bucket's K range holds a K where 4 slices of two BLOCK_K steps no longer fit: the
  // heuristic's there. K = 200 is called after the tuned K of its bucket, K = 400 before.
  for (auto [block_k, ks] : {std::pair{int64_t(32), std::vector<int64_t>{256, 200}},
                             std::pair{int64_t(64), std::vector<int64_t>{400, 512}}}) {
    const at::Config stored = stored_with(block_k);
    const at::ProblemShape tuned{{{"M", 128}, {"N", 128}, {"K", ks[0] > ks[1] ? ks[0] : ks[1]}}};
    at::TuningDatabase::global().offer_best(at::TuningKey::of(op, tuned, device.info()), {stored, 0.001, tuned, 0, {}});
    for (int64_t k : ks) {
      SCOPED_TRACE("K = " + std::to_string(k));
      GemmCase call{.m = 100, .n = 120, .k = k, .device = "emu:sm_90a"};
      call.before_launch = [&](const Tensor& a, const Tensor& b, const GemmOptions& o) {
        gd::GemmProblem p = gd::check_gemm(a, b, o, nullptr);
        gd::GemmConfig want = k >= 2 * 4 * block_k ? gd::gemm_config_of(stored, spec)
                                                   : gd::heuristic_gemm_config(p, device.info());
        expect_same(gd::call_config(p, device), want);
      };
      check_gemm(call, rng);
    }
  }
}

// A stored warp-specialized result on operands that both come through TMA: the call's kernel
// has the producer warpgroup (setmaxnreg in its PTX) and computes the product. Where an
// operand comes through pointers, the tuner rejects the config with the reason.
TEST(GemmTuning, AWarpSpecializedResultRunsAProducerWarpgroup) {
  Device& device = Device::by_name("emu:sm_90a");
  const gd::GemmTuningSpec spec{DType::bf16, DType::bf16, DType::bf16, dsl::Precision::tf32, false, true};
  const at::TunableKernel& op = gd::gemm_tunable(spec);
  const at::ProblemShape tuned{{{"M", 256}, {"N", 128}, {"K", 512}}};
  const at::Config stored{{{"BLOCK_M", 64},
                           {"BLOCK_N", 64},
                           {"BLOCK_K", 32},
                           {"num_warps", 4},
                           {"num_stages", 3},
                           {"SPLIT_K", 1},
                           {"PERSISTENT", 0},
                           {"warp_specialize", 1},
                           {"cluster_x", 1}}};
  at::TuningDatabase::global().offer_best(at::TuningKey::of(op, tuned, device.info()), {stored, 0.001, tuned, 0, {}});
  TJ_SEEDED_RNG(rng);
  GemmCase call{.m = 192, .n = 128, .k = 384, .device = "emu:sm_90a"};
  call.options.transpose_b = true;
  std::vector<std::string> ptx = tilejit::testing_util::ptx_built_by([&] { check_gemm(call, rng); });
  ASSERT_EQ(ptx.size(), 1u);
  EXPECT_NE(ptx[0].find("setmaxnreg.inc"), std::string::npos);

  // B (K, N) with rows of 90 bytes: no descriptor for B.
  const gd::GemmTuningSpec pointer_b{DType::bf16, DType::bf16, DType::bf16, dsl::Precision::tf32, false, false};
  auto runner = gd::make_gemm_runner(pointer_b, device, {{{"M", 64}, {"N", 45}, {"K", 64}}},
                                     at::TimingOptions::for_device(device.info()), 1);
  EXPECT_THAT(tilejit::testing_util::error_of([&] { runner->prepare(stored); }),
              ::testing::HasSubstr("warp_specialize: a producer warpgroup needs both operands through TMA"));
}

TEST(GemmTuning, AnUntunedShapeIsTunedOnItsFirstCallWithAutotune) {
  tilejit::testing_util::ScopedEnv autotune("TILEJIT_AUTOTUNE", "1");
  Device& device = Device::by_name("emu:sm_90a");
  const gd::GemmTuningSpec spec{DType::f16, DType::f16, DType::f16, dsl::Precision::tf32, false, false};
  const at::ProblemShape shape{{{"M", 72}, {"N", 64}, {"K", 128}}};
  const at::TuningKey key = at::TuningKey::of(gd::gemm_tunable(spec), shape, device.info());
  ASSERT_FALSE(at::TuningDatabase::global().best(key, shape).has_value());
  TJ_SEEDED_RNG(rng);
  check_gemm(GemmCase{.a = DType::f16, .b = DType::f16, .m = 72, .n = 64, .k = 128, .device = "emu:sm_90a"}, rng);
  std::optional<at::BestConfig> best = at::TuningDatabase::global().best(key, shape);
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->tuned_shape, shape);
}

TEST(GemmTuning, BatchedCallsAndUntunedShapesTakeTheHeuristic) {
  TJ_SEEDED_RNG(rng);
  for (int64_t batch : {1, 3}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    GemmCase c{.batch_a = batch, .batch_b = batch, .m = 40, .n = 48, .k = 64, .device = "emu:sm_90a"};
    c.before_launch = [&](const Tensor& a, const Tensor& b, const GemmOptions& o) {
      gd::GemmProblem p = gd::check_gemm(a, b, o, nullptr);
      expect_same(gd::call_config(p, a.device()), gd::heuristic_gemm_config(p, a.device().info()));
    };
    check_gemm(c, rng);
  }
}

std::vector<uint8_t> f32_bytes(const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// `values` as an (m, n) f32 output in the emulator, for SampledRows::check.
Tensor f32_output(const std::vector<float>& values, int64_t m, int64_t n) {
  return tilejit::ops::upload_elements(Device::by_name("emu"), DType::f32, {m, n}, values.data());
}

TEST(GemmTuning, TheRowCheckRejectsAWrongElement) {
  // A (2, 3) and B (3, 2) of small integers: the product is exact in f32.
  const std::vector<uint8_t> a = f32_bytes({1, 2, 3, -1, 0, 2}), b = f32_bytes({1, 0, -2, 1, 0, 3});
  std::vector<float> product = {-3, 11, -1, 6};
  auto check = [&](const std::vector<float>& out) {
    return gd::SampledRows({DType::f32, a.data(), 2, 3}, {DType::f32, b.data(), 3, 2})
        .check(f32_output(out, 2, 2), 1e-6, 1e-6);
  };
  EXPECT_TRUE(check(product).ok);
  std::vector<float> off_by_one = product;
  off_by_one[3] += 1;
  gd::RowCheck wrong = check(off_by_one);
  EXPECT_FALSE(wrong.ok);
  EXPECT_DOUBLE_EQ(wrong.max_abs_error, 1.0);
  std::vector<float> nan = product;
  nan[0] = NAN;
  EXPECT_FALSE(check(nan).ok);
  EXPECT_TRUE(std::isinf(check(nan).max_abs_error));
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{4, 1}, {3, 2}})  // an extra row as well
    EXPECT_THAT(tilejit::testing_util::error_of([&] {
                  gd::SampledRows({DType::f32, a.data(), 2, 3}, {DType::f32, b.data(), 3, 2})
                      .check(f32_output(std::vector<float>(size_t(rows * cols)), rows, cols), 1e-6, 1e-6);
                }),
                ::testing::HasSubstr("is not the output checked, of 2 x 2"));
}

// An empty sum (K = 0): every element of the product is 0.
TEST(GemmTuning, TheRowCheckOfAnEmptySum) {
  const std::vector<uint8_t> none;
  const gd::SampledRows rows({DType::bf16, none.data(), 3, 0}, {DType::bf16, none.data(), 0, 2});
  EXPECT_TRUE(rows.check(f32_output(std::vector<float>(6, 0.0f), 3, 2), 1e-6, 1e-6).ok);
  EXPECT_FALSE(rows.check(f32_output({0, 0, 0, 0, 0, 1e-3f}, 3, 2), 1e-6, 1e-6).ok);
}

// The operands are read as stored: A (K, M) and B (N, K) transposed give the same sums as
// their row-major forms, over rows that fill several groups of the sums and a last part-group
// (61 rows, all of them sampled), and columns that end inside a block.
TEST(GemmTuning, TheRowCheckReadsOperandsAsStored) {
  const int64_t m = 61, n = 13, k = 37;
  std::mt19937_64 rng(5);
  const std::vector<uint8_t> a = tilejit::ops::random_elements(DType::bf16, m * k, rng),
                             b = tilejit::ops::random_elements(DType::bf16, k * n, rng);
  const std::vector<double> av = tilejit::ops::host_values(DType::bf16, a), bv = tilejit::ops::host_values(DType::bf16, b);
  std::vector<float> product(size_t(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t t = 0; t < k; ++t) sum += av[size_t(i * k + t)] * bv[size_t(t * n + j)];
      product[size_t(i * n + j)] = float(sum);
    }
  auto stored_transposed = [](const std::vector<double>& values, int64_t rows, int64_t cols) {
    std::vector<float> out(values.size());
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) out[size_t(j * rows + i)] = float(values[size_t(i * cols + j)]);
    return f32_bytes(out);
  };
  const std::vector<uint8_t> at = stored_transposed(av, m, k), bt = stored_transposed(bv, k, n);
  const gd::SampledRows plain({DType::bf16, a.data(), m, k}, {DType::bf16, b.data(), k, n}),
      transposed({DType::f32, at.data(), m, k, true}, {DType::f32, bt.data(), k, n, true});
  for (const gd::SampledRows* rows : {&plain, &transposed}) {
    EXPECT_TRUE(rows->check(f32_output(product, m, n), 1e-5, 1e-6).ok);
    for (size_t wrong : {size_t{0}, size_t(m * n - 1), size_t(37 * n + 12)}) {
      std::vector<float> off = product;
      off[wrong] += 0.5f;
      EXPECT_FALSE(rows->check(f32_output(off, m, n), 1e-5, 1e-6).ok) << "element " << wrong;
    }
  }
}

// The checked rows fall at many positions of a tile, not only at its start: a kernel whose
// warps past the first write wrong rows (rows 16 to 47 of every 64 here) must not pass. A of
// ones and B of row indices keep the reference cheap: every row of the product is the same.
TEST(GemmTuning, TheRowCheckSeesEveryRowOfATile) {
  const int64_t m = 4096, n = 2, k = 3;
  const std::vector<uint8_t> a = f32_bytes(std::vector<float>(size_t(m * k), 1.0f)), b = f32_bytes({1, 2, 3, 4, 5, 6});
  gd::SampledRows rows({DType::f32, a.data(), m, k}, {DType::f32, b.data(), k, n});
  std::vector<float> out(size_t(m * n));
  for (int64_t i = 0; i < m; ++i) out[size_t(i * n)] = 9, out[size_t(i * n + 1)] = 12;
  EXPECT_TRUE(rows.check(f32_output(out, m, n), 1e-6, 1e-6).ok);
  for (int64_t i = 0; i < m; ++i)
    if (i % 64 >= 16 && i % 64 < 48) out[size_t(i * n + 1)] = 0;
  EXPECT_FALSE(rows.check(f32_output(out, m, n), 1e-6, 1e-6).ok);
}

// Random operands are made on every core: the same generator state gives the same elements,
// each one of the values random_elements promises, and every one of them occurs.
TEST(RandomElements, SameSeedSameElementsOfThePromisedValues) {
  const int64_t count = 300000;  // several chunks
  std::mt19937_64 rng(3), again(3);
  const std::vector<uint8_t> bytes = tilejit::ops::random_elements(DType::bf16, count, rng);
  EXPECT_EQ(bytes, tilejit::ops::random_elements(DType::bf16, count, again));
  EXPECT_NE(bytes, tilejit::ops::random_elements(DType::bf16, count, again));  // a new draw: new elements
  std::set<double> promised, seen;
  for (int e = -3; e <= 2; ++e)
    for (int mantissa = 0; mantissa < 4; ++mantissa)
      for (double sign : {1.0, -1.0}) promised.insert(sign * (1 + mantissa / 4.0) * std::ldexp(1.0, e));
  for (double v : tilejit::ops::host_values(DType::bf16, bytes)) seen.insert(v);
  EXPECT_EQ(seen, promised);
  std::set<double> integers;
  for (double v : tilejit::ops::host_values(DType::f8e4m3, tilejit::ops::random_integer_elements(DType::f8e4m3, count, 4, rng)))
    integers.insert(v);
  EXPECT_EQ(integers, (std::set<double>{-4, -3, -2, -1, 0, 1, 2, 3, 4}));
  EXPECT_THAT(tilejit::testing_util::error_of([&] { tilejit::ops::random_integer_elements(DType::f8e4m3, 4, 100, rng); }),
              ::testing::HasSubstr("does not hold the integer 100"));
  EXPECT_THAT(tilejit::testing_util::error_of([&] { tilejit::ops::random_integer_elements(DType::i8, 4, 128, rng); }),
              ::testing::HasSubstr("i8 does not hold the integer 128"));
  for (DType no_random : {DType::i1, DType::e8m0})
    EXPECT_THAT(tilejit::testing_util::error_of([&] { tilejit::ops::random_elements(no_random, 4, rng); }),
                ::testing::HasSubstr(std::string(tilejit::dtype_name(no_random))))
        << tilejit::dtype_name(no_random);
  std::set<double> wide;
  for (double v : tilejit::ops::host_values(DType::i64, tilejit::ops::random_elements(DType::i64, count, rng)))
    wide.insert(v);
  EXPECT_EQ(wide.size(), 17u);
  EXPECT_EQ(*wide.begin(), -8);
  EXPECT_EQ(*wide.rbegin(), 8);
  EXPECT_EQ(tilejit::ops::host_values(DType::i1, {0, 1, 2}), (std::vector<double>{0, 1, 1}));  // any nonzero byte is true
  const int huge = 2000000000;  // 2 * huge + 1 passes int's range
  std::vector<double> big = tilejit::ops::host_values(DType::i32, tilejit::ops::random_integer_elements(DType::i32, 1000, huge, rng));
  EXPECT_LE(*std::max_element(big.begin(), big.end()), huge);
  EXPECT_GE(*std::min_element(big.begin(), big.end()), -huge);
  EXPECT_GT(*std::max_element(big.begin(), big.end()) - *std::min_element(big.begin(), big.end()), huge);  // spread over the range
}

TEST(SampledIndices, SpreadOverTheRangeAtEveryOffset) {
  EXPECT_EQ(tilejit::ops::sampled_indices(5, 64), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(tilejit::ops::sampled_indices(5, 5), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(tilejit::ops::sampled_indices(0, 64).empty());
  EXPECT_TRUE(tilejit::ops::sampled_indices(-3, 64).empty());
  EXPECT_TRUE(tilejit::ops::sampled_indices(100, 0).empty());
  EXPECT_EQ(tilejit::ops::sampled_indices(7, 1), (std::vector<int64_t>{6}));
  // Stretches of 41 (a multiple of the usual step) still move.
  std::vector<int64_t> of41 = tilejit::ops::sampled_indices(1312, 32);
  EXPECT_NE(of41[1] % 41, 0);
  for (auto [n, count, tile] : {std::tuple{4096, 64, 64}, std::tuple{4096, 32, 128}, std::tuple{1000, 64, 16}}) {
    SCOPED_TRACE(fmt::format("{} of {}", count, n));
    std::vector<int64_t> rows = tilejit::ops::sampled_indices(n, count);
    ASSERT_EQ(rows.size(), size_t(count));
    EXPECT_EQ(rows.front(), 0);
    EXPECT_EQ(rows.back(), n - 1);
    EXPECT_TRUE(std::is_sorted(rows.begin(), rows.end()) && std::adjacent_find(rows.begin(), rows.end()) == rows.end());
    // Each of a tile's four warps' rows (a quarter of the tile) is checked.
    std::set<int64_t> quarters;
    for (int64_t r : rows) quarters.insert(r % tile / (tile / 4));
    EXPECT_EQ(quarters.size(), 4u);
  }
}

// How a tuning ranks the library gemm (bf16, B stored (N, K), 4096 cubed) on an H100: on the
// tensor cores at 16-bit rate, the widest tiles (128 x 256, the fewest bytes through L2 per
// product) come first, so the 8 configs a tuning times all have the heuristic's tile, and the
// model's first beats the heuristic's config (a producer warpgroup multicasts B to a cluster);
// fp8's heuristic config, at twice the tensor cores' rate and half the bytes, beats bf16's.
TEST(GemmTuningModel, RanksTensorCoreTilesByTheirTraffic) {
  const at::TunableKernel& bf16 = tilejit::ops::find_tunable_op("gemm_bf16_nt");
  const at::TunableKernel& fp8 = tilejit::ops::find_tunable_op("gemm_f8e4m3_nt");
  const at::ProblemShape shape{{{"M", 4096}, {"N", 4096}, {"K", 4096}}};
  const tilejit::DeviceInfo h100 = model_gpu("sm_90a", 132);
  const auto ranked = at::rank_candidates(bf16, shape, h100).configs;
  ASSERT_GE(ranked.size(), 8u);
  ASSERT_TRUE(ranked[0].heuristic);
  const at::Config& heuristic = ranked[0].config;
  for (size_t i = 1; i < 8; ++i) {
    EXPECT_EQ(ranked[i].config["BLOCK_M"], heuristic["BLOCK_M"]) << ranked[i].config.str();
    EXPECT_EQ(ranked[i].config["BLOCK_N"], heuristic["BLOCK_N"]) << ranked[i].config.str();
  }
  EXPECT_LT(ranked[1].estimate_ms, ranked[0].estimate_ms);
  const double fp8_ms = at::estimate_ms(fp8.work(fp8.heuristic_config(shape, h100), shape, h100), h100);
  EXPECT_LT(fp8_ms, 0.8 * ranked[0].estimate_ms);
}
}  // namespace
}  // namespace tjops
