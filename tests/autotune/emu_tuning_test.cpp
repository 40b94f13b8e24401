// Tuning for real on the emulator: the example GEMM and vector_add tuned end to end (compiled
// in parallel, checked, timed, stored); a fast kernel that computes the wrong result never
// wins; a kernel that needs more shared memory than a CTA may have is compiled, pruned by its
// report and never timed; a tile that does not divide the shape is pruned before compiling;
// and how op calls choose their config (database, tuned on first use, heuristic).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "autotune/config_choice.h"
#include "autotune/device_runner.h"
#include "autotune/tuner.h"
#include "ops/kernels/example_runs.h"
#include "ops/tunable_ops.h"
#include "runtime/tensor.h"
#include "tests/scoped_env.h"
#include "tests/temp_directory.h"

namespace tilejit::autotune {
namespace {

using ::testing::HasSubstr;

// A square f32 matrix problem: x random, out poisoned; out must equal `expected(x)`.
class MatrixProblem : public TuningProblem {
 public:
  using Expected = std::function<float(const std::vector<float>& x, size_t row, size_t col)>;
  MatrixProblem(Device& device, int32_t n, uint64_t seed, Expected expected)
      : n_(n), expected_(std::move(expected)), x_(Tensor::empty(device, DType::f32, {n, n})),
        out_(Tensor::empty(device, DType::f32, {n, n})) {
    std::mt19937 rng(static_cast<uint32_t>(seed));
    std::uniform_real_distribution<float> dist(-1, 1);
    host_.resize(size_t(n) * size_t(n));
    for (float& v : host_) v = dist(rng);
    x_.copy_from_host(std::span<const float>(host_));
  }
  std::vector<KernelArg> arguments() const override { return {x_, out_, n_}; }
  Dim3 grid(const dsl::Constants& c) const override {
    auto blocks = static_cast<uint32_t>(n_ / c["BLOCK"]);
    return {blocks, blocks};
  }
  void poison_outputs() override { out_.fill_bytes(0xff); }
  std::string check_outputs() override {
    std::vector<float> got = out_.to_host<float>();
    for (size_t i = 0; i < size_t(n_); ++i)
      for (size_t j = 0; j < size_t(n_); ++j)
        if (got[i * size_t(n_) + j] != expected_(host_, i, j)) return fmt::format("out[{}][{}] is wrong", i, j);
    return "";
  }

 private:
  int32_t n_;
  Expected expected_;
  Tensor x_, out_;
  std::vector<float> host_;
};

// out = transpose(x), tile by tile through shared memory: a BLOCK x BLOCK f32 tile needs
// BLOCK * BLOCK * 4 bytes of it (256 KiB for BLOCK=256: more than a CTA may have). No masks,
// so BLOCK must divide n. Its declared constants (what an untuned call runs, timed first) are
// the space's first config.
TunableKernel transpose_op() {
  TunableKernel op;
  op.name = "test_transpose";
  op.kernel = [] {
    using namespace tilejit::dsl;
    return define_kernel("test_transpose", {"x", "out", "n"}, {{"BLOCK", 32}, {"num_warps", 16}},
                         [](const Constants& c, Ptr<f32> x, Ptr<f32> out, Scalar<i32> n) {
                           int64_t b = c["BLOCK"];
                           Tile rows = expand_dims(program_id(0) * b + arange(0, b), 1);  // (BLOCK, 1)
                           Tile cols = expand_dims(program_id(1) * b + arange(0, b), 0);  // (1, BLOCK)
                           Tile tile = load(x + rows * n + cols);                         // (BLOCK, BLOCK)
                           store(out + expand_dims(program_id(1) * b + arange(0, b), 1) * n +
                                     expand_dims(program_id(0) * b + arange(0, b), 0),
                                 trans(tile));
                         });
  };
  op.dims = {"n"};
  op.space.add("BLOCK", {32, 64, 256}).add("num_warps", {16});
  op.space.require_divides("BLOCK", "n");
  op.problem = [](Device& device, const ProblemShape& s, uint64_t seed) {
    auto n = static_cast<size_t>(s["n"]);
    return std::make_unique<MatrixProblem>(device, int32_t(n), seed, [n](const std::vector<float>& x, size_t i, size_t j) {
      return x[j * n + i];
    });
  };
  return op;
}

// out = x + 1; with SHORTCUT=1 it skips the loads and writes 1: less work, wrong result.
TunableKernel shortcut_op() {
  TunableKernel op;
  op.name = "test_shortcut";
  op.kernel = [] {
    using namespace tilejit::dsl;
    return define_kernel("test_shortcut", {"x", "out", "n"}, {{"BLOCK", 32}, {"SHORTCUT", 0}},
                         [](const Constants& c, Ptr<f32> x, Ptr<f32> out, Scalar<i32> n) {
                           int64_t b = c["BLOCK"];
                           Tile rows = expand_dims(program_id(0) * b + arange(0, b), 1);  // (BLOCK, 1)
                           Tile cols = expand_dims(program_id(1) * b + arange(0, b), 0);  // (1, BLOCK)
                           Tile offsets = rows * n + cols;                                // (BLOCK, BLOCK)
                           if (c.flag("SHORTCUT")) store(out + offsets, zeros({b, b}, DType::f32) + 1.0);
                           else store(out + offsets, load(x + offsets) + 1.0);
                         });
  };
  op.dims = {"n"};
  op.space.add("BLOCK", {16, 32}).add("SHORTCUT", {1, 0}).add("num_warps", {4});
  op.problem = [](Device& device, const ProblemShape& s, uint64_t seed) {
    auto n = static_cast<size_t>(s["n"]);
    return std::make_unique<MatrixProblem>(device, int32_t(n), seed, [n](const std::vector<float>& x, size_t i, size_t j) {
      return x[i * n + j] + 1.0f;
    });
  };
  return op;
}

class EmuTuningTest : public testing::Test {
 protected:
  TuneResult tune_on_emulator(const TunableKernel& op, const ProblemShape& shape, int top_k) {
    DeviceRunner runner(op, shape, Device::emu(), TimingOptions::for_device(Device::emu().info()), 1);
    TuneOptions options;
    options.top_k = top_k;
    return tune(op, shape, runner, db_, options);
  }
  const CandidateResult* candidate(const TuneResult& r, const std::string& config) const {
    for (const CandidateResult& c : r.candidates)
      if (c.config.str() == config) return &c;
    return nullptr;
  }

  testing_util::TempDirectory dir_{"tilejit_emu_tuning_test"};
  KernelCache cache_{CacheOptions{dir_.path().string(), true}};
  TuningDatabase db_{cache_};
};

// The fastest correct candidate wins and is stored; every candidate was checked and timed.
void expect_fastest_correct_won(const TuneResult& r, int expected_timed) {
  ASSERT_TRUE(r.best);
  EXPECT_EQ(r.timed, expected_timed);
  double fastest = 1e30;
  for (const CandidateResult& c : r.candidates) {
    EXPECT_EQ(c.trial.status, TrialStatus::ok) << c.config.str() << ": " << c.trial.detail;
    EXPECT_GT(c.trial.ms, 0);
    fastest = std::min(fastest, c.trial.ms);
  }
  EXPECT_DOUBLE_EQ(r.best->ms, fastest);
}

TEST_F(EmuTuningTest, TunesTheExampleGemmEndToEnd) {
  const TunableKernel& gemm = ops::find_tunable_op("gemm");
  ProblemShape shape{{{"M", 96}, {"N", 80}, {"K", 72}}};
  TuneResult r = tune_on_emulator(gemm, shape, 3);
  expect_fastest_correct_won(r, 3);
  auto stored = db_.best(TuningKey::of(gemm, shape, Device::emu().info()), shape);
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->config, r.best->config);
  // The winner computes the right result at another size too.
  ops::ExampleRun run = ops::run_example("gemm", Device::emu(), {r.best->config.values, 0, true, false});
  EXPECT_TRUE(run.ok) << r.best->config.str() << ": max error " << run.max_abs_error;
}

TEST_F(EmuTuningTest, TunesVectorAddEndToEnd) {
  const TunableKernel& add = ops::find_tunable_op("vector_add");
  TuneResult r = tune_on_emulator(add, ProblemShape{{{"n", 30000}}}, 4);
  expect_fastest_correct_won(r, 4);
}

TEST_F(EmuTuningTest, AFastWrongKernelNeverWins) {
  TuneResult r = tune_on_emulator(shortcut_op(), ProblemShape{{{"n", 64}}}, 4);
  ASSERT_TRUE(r.best);
  EXPECT_EQ(r.best->config["SHORTCUT"], 0);
  for (const char* wrong : {"BLOCK=16 SHORTCUT=1 num_warps=4", "BLOCK=32 SHORTCUT=1 num_warps=4"}) {
    const CandidateResult* c = candidate(r, wrong);
    ASSERT_NE(c, nullptr) << wrong;
    EXPECT_EQ(c->trial.status, TrialStatus::wrong) << wrong;
    EXPECT_THAT(c->trial.detail, HasSubstr("is wrong"));
  }
}

TEST_F(EmuTuningTest, SharedMemoryOverTheLimitIsPrunedAfterCompilingBeforeTiming) {
  TuneResult r = tune_on_emulator(transpose_op(), ProblemShape{{{"n", 256}}}, 3);
  const CandidateResult* too_big = candidate(r, "BLOCK=256 num_warps=16");
  ASSERT_NE(too_big, nullptr);
  EXPECT_EQ(too_big->trial.status, TrialStatus::over_limits);
  EXPECT_THAT(too_big->trial.detail, HasSubstr("262144 bytes of shared memory"));
  ASSERT_TRUE(r.best);
  EXPECT_NE(r.best->config["BLOCK"], 256);
  EXPECT_EQ(r.timed, 2);
}

TEST_F(EmuTuningTest, TilesThatDoNotDivideTheShapeArePrunedBeforeCompiling) {
  TuneResult r = tune_on_emulator(transpose_op(), ProblemShape{{{"n", 96}}}, 3);
  EXPECT_EQ(r.pruned, 2);  // 64 and 256 do not divide 96
  ASSERT_EQ(r.candidates.size(), 1u);
  EXPECT_EQ(r.candidates[0].config.str(), "BLOCK=32 num_warps=16");
  EXPECT_EQ(r.candidates[0].trial.status, TrialStatus::ok);
}

TEST_F(EmuTuningTest, OpCallsUseTheDatabaseOrTuneOnFirstUseOrTheHeuristic) {
  const TunableKernel& softmax = ops::find_tunable_op("softmax");
  Device& emu = Device::emu();
  ProblemShape shape{{{"rows", 64}, {"cols", 300}}};
  TuneOptions options;
  options.top_k = 2;
  {
    testing_util::ScopedEnv off("TILEJIT_AUTOTUNE", nullptr);
    ConfigChoice choice = choose_config(softmax, shape, emu, db_, options);
    EXPECT_EQ(choice.source, ConfigSource::heuristic);
    EXPECT_EQ(choice.config, softmax.heuristic_config(shape, emu.info()));
    EXPECT_FALSE(db_.best(TuningKey::of(softmax, shape, emu.info()), shape));
  }
  testing_util::ScopedEnv on("TILEJIT_AUTOTUNE", "1");
  ConfigChoice tuned = choose_config(softmax, shape, emu, db_, options);
  EXPECT_EQ(tuned.source, ConfigSource::tuned_now);
  EXPECT_GE(tuned.config["BLOCK_N"], 300);
  // Remembered: the next call (another shape of the bucket, another process) reads it.
  KernelCache next(CacheOptions{dir_.path().string(), true});
  TuningDatabase next_db(next);
  ConfigChoice remembered = choose_config(softmax, ProblemShape{{{"rows", 60}, {"cols", 290}}}, emu, next_db, options);
  EXPECT_EQ(remembered.source, ConfigSource::database);
  EXPECT_EQ(remembered.config, tuned.config);
}

TEST_F(EmuTuningTest, AStoredConfigThatDoesNotFitTheExactShapeIsNotUsed) {
  const TunableKernel& softmax = ops::find_tunable_op("softmax");
  Device& emu = Device::emu();
  testing_util::ScopedEnv off("TILEJIT_AUTOTUNE", nullptr);
  // Tuned on cols=200 (bucket 256) with BLOCK_N=256; a config with BLOCK_N=128 stored for the
  // bucket would break "BLOCK_N >= cols" for cols=200.
  ProblemShape shape{{{"rows", 8}, {"cols", 200}}};
  TuningKey key = TuningKey::of(softmax, shape, emu.info());
  db_.offer_best(key, {Config{{{"BLOCK_N", 128}, {"num_warps", 4}}}, 0.5, ProblemShape{{{"rows", 8}, {"cols", 100}}}, 0, {}});
  ConfigChoice choice = choose_config(softmax, shape, emu, db_);
  EXPECT_EQ(choice.source, ConfigSource::heuristic);
  EXPECT_GE(choice.config["BLOCK_N"], 200);
  // A stored config naming other constants (an older declaration) is not used either.
  ProblemShape other{{{"rows", 8}, {"cols", 1000}}};
  db_.offer_best(TuningKey::of(softmax, other, emu.info()), {Config{{{"BLOCK", 1024}}}, 0.5, other, 0, {}});
  EXPECT_EQ(choose_config(softmax, other, emu, db_).source, ConfigSource::heuristic);
}

// A bucket holds a result per tuned shape: a call takes the one tuned on its shape, else the
// one tuned on the nearest shape it fits.
TEST_F(EmuTuningTest, ACallTakesTheResultOfItsShapeOrOfTheNearestShape) {
  const TunableKernel& softmax = ops::find_tunable_op("softmax");
  Device& emu = Device::emu();
  testing_util::ScopedEnv off("TILEJIT_AUTOTUNE", nullptr);
  ProblemShape narrow{{{"rows", 8}, {"cols", 140}}}, wide{{{"rows", 8}, {"cols", 250}}};
  TuningKey key = TuningKey::of(softmax, narrow, emu.info());
  ASSERT_EQ(key.str(), TuningKey::of(softmax, wide, emu.info()).str());
  const Config for_narrow{{{"BLOCK_N", 256}, {"num_warps", 2}}}, for_wide{{{"BLOCK_N", 256}, {"num_warps", 8}}};
  db_.offer_best(key, {for_narrow, 0.5, narrow, 0, {}});
  db_.offer_best(key, {for_wide, 0.5, wide, 0, {}});
  for (auto [cols, expected] : {std::pair{140, for_narrow}, {250, for_wide}, {150, for_narrow}, {230, for_wide}}) {
    ConfigChoice choice = choose_config(softmax, ProblemShape{{{"rows", 8}, {"cols", cols}}}, emu, db_);
    EXPECT_EQ(choice.source, ConfigSource::database) << cols;
    EXPECT_EQ(choice.config, expected) << cols;
  }
  // One that breaks a constraint for the call is passed over for one that does not.
  const Config too_narrow{{{"BLOCK_N", 128}, {"num_warps", 4}}};
  ProblemShape almost{{{"rows", 8}, {"cols", 129}}};
  db_.offer_best(key, {too_narrow, 0.5, ProblemShape{{{"rows", 8}, {"cols", 128}}}, 0, {}});
  EXPECT_EQ(choose_config(softmax, almost, emu, db_).config, for_narrow);
}

}  // namespace
}  // namespace tilejit::autotune
