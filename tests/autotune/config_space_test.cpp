// The pieces the tuner is built from: named values (configs and shapes) and their text form,
// config spaces and their constraints, shape bucketing, pruning by the device's limits, the
// cost model's ranking, the median, and the example ops' declarations.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "autotune/config_space.h"
#include "autotune/cost_model.h"
#include "autotune/launch_timer.h"
#include "autotune/resource_limits.h"
#include "autotune/shape_bucketing.h"
#include "ops/kernels/example_tuning.h"
#include "ops/tunable_ops.h"
#include "tests/error_message.h"

namespace tilejit::autotune {
namespace {

using ::testing::HasSubstr;
using testing_util::error_of;

TEST(NamedValues, TextRoundTripsInOrder) {
  NamedValues v = NamedValues::parse("M=4096 N=1024,K=0x40");
  EXPECT_EQ(v.values, (std::vector<std::pair<std::string, int64_t>>{{"M", 4096}, {"N", 1024}, {"K", 64}}));
  EXPECT_EQ(v.str(), "M=4096 N=1024 K=64");
  EXPECT_EQ(NamedValues::parse(v.str()), v);
  EXPECT_EQ(v["N"], 1024);
  EXPECT_TRUE(NamedValues::parse("  ").values.empty());
  // A line of a file written on Windows ends "\r".
  EXPECT_EQ(NamedValues::parse("M=4096\tN=1024 K=64\r"), v);
}

TEST(NamedValues, LeadingZerosAreDecimalNotOctal) {
  EXPECT_EQ(NamedValues::parse("M=0100 N=08 K=-0x10")["M"], 100);
  EXPECT_EQ(NamedValues::parse("N=08")["N"], 8);
  EXPECT_EQ(NamedValues::parse("K=-0x10")["K"], -16);
  EXPECT_EQ(NamedValues::parse("K=0X1f")["K"], 31);
  EXPECT_THAT(error_of([] { NamedValues::parse("M=0x"); }), HasSubstr("M: '0x' is not an integer"));
}

TEST(NamedValues, ClearErrors) {
  EXPECT_THAT(error_of([] { NamedValues::parse("M=4 M=5"); }), HasSubstr("names M twice"));
  EXPECT_THAT(error_of([] { NamedValues::parse("M=x"); }), HasSubstr("M: 'x' is not an integer"));
  EXPECT_THAT(error_of([] { NamedValues::parse("=4"); }), HasSubstr("expected NAME=VALUE, got '=4'"));
  EXPECT_THAT(error_of([] { NamedValues::parse("M=4")["K"]; }), HasSubstr("no value named 'K' in 'M=4'"));
}

TEST(ConfigSpace, EnumeratesEveryCombinationInDeclarationOrder) {
  ConfigSpace space;
  space.add("BLOCK", {32, 64}).add("num_warps", {1, 2, 4});
  std::vector<Config> configs = space.configs();
  ASSERT_EQ(configs.size(), 6u);
  EXPECT_EQ(space.size(), 6u);
  EXPECT_EQ(configs.front().str(), "BLOCK=32 num_warps=1");
  EXPECT_EQ(configs[1].str(), "BLOCK=32 num_warps=2");
  EXPECT_EQ(configs.back().str(), "BLOCK=64 num_warps=4");
  std::set<std::string> distinct;
  for (auto& c : configs) distinct.insert(c.str());
  EXPECT_EQ(distinct.size(), 6u);
  EXPECT_EQ(space.constants(), (std::vector<std::string>{"BLOCK", "num_warps"}));
}

TEST(ConfigSpace, ConstraintsNameWhatIsBroken) {
  ConfigSpace space;
  space.add("BLOCK_N", {128, 256}).add("BLOCK_M", {16, 48});
  space.require("BLOCK_N >= cols", [](const Config& c, const ProblemShape& s) { return c["BLOCK_N"] >= s["cols"]; });
  space.require_divides("BLOCK_M", "rows");
  ProblemShape shape{{{"rows", 96}, {"cols", 200}}};
  EXPECT_EQ(space.violated(Config{{{"BLOCK_N", 128}, {"BLOCK_M", 16}}}, shape), "BLOCK_N >= cols");
  EXPECT_EQ(space.violated(Config{{{"BLOCK_N", 256}, {"BLOCK_M", 16}}}, shape), std::nullopt);
  EXPECT_EQ(space.violated(Config{{{"BLOCK_N", 256}, {"BLOCK_M", 48}}}, ProblemShape{{{"rows", 100}, {"cols", 1}}}),
            "BLOCK_M divides rows");
}

TEST(ConfigSpace, ClearErrors) {
  ConfigSpace space;
  EXPECT_THAT(error_of([&] { space.add("BLOCK", {}); }), HasSubstr("constant BLOCK has no candidate values"));
  space.add("BLOCK", {1});
  EXPECT_THAT(error_of([&] { space.add("BLOCK", {2}); }), HasSubstr("constant BLOCK is declared twice"));
}

TEST(ShapeBucketing, RoundsEachDimensionByItsRule) {
  ShapeBucketing b;
  b.power_of_two("M").multiple_of("N", 128).exact("K");
  ProblemShape shape{{{"M", 1000}, {"N", 1000}, {"K", 1000}, {"H", 7}}};
  EXPECT_EQ(b.bucket(shape).str(), "M=1024 N=1024 K=1000 H=7");
  EXPECT_EQ(b.bucket(ProblemShape{{{"M", 1024}, {"N", 1024}, {"K", 3}}}).str(), "M=1024 N=1024 K=3");
  EXPECT_EQ(b.bucket(ProblemShape{{{"M", 1025}, {"N", 1025}, {"K", 3}}}).str(), "M=2048 N=1152 K=3");
  EXPECT_EQ(next_power_of_two(1), 1);
  EXPECT_EQ(next_power_of_two(0), 1);
  EXPECT_EQ(next_power_of_two(65), 128);
  EXPECT_THAT(error_of([&] { b.multiple_of("N", 0); }), HasSubstr("positive multiple"));
}

DeviceInfo h100() {
  DeviceInfo d;
  d.kind = DeviceKind::cuda;
  d.name = "NVIDIA H100 80GB HBM3";
  d.arch = "sm_90a";
  d.sm_count = 132;
  d.shared_per_block_optin = 227 * 1024;
  return d;
}

TEST(ResourceLimits, PruneWhatCannotRun) {
  KernelReport fits;
  fits.num_threads = 256;
  fits.shared_bytes = 100 * 1024;
  fits.registers = 128;
  EXPECT_EQ(exceeds_device_limits(fits, h100()), std::nullopt);
  KernelReport unknown_registers = fits;
  unknown_registers.registers = -1;  // the emulator and the driver's JIT do not report them
  EXPECT_EQ(exceeds_device_limits(unknown_registers, h100()), std::nullopt);

  KernelReport shared = fits, threads = fits, per_thread = fits, per_cta = fits;
  shared.shared_bytes = 228 * 1024;
  threads.num_threads = 2048;
  per_thread.registers = 256;
  per_cta.num_threads = 1024;  // 1024 x 128 registers > 64 K
  EXPECT_THAT(*exceeds_device_limits(shared, h100()), HasSubstr("233472 bytes of shared memory"));
  EXPECT_THAT(*exceeds_device_limits(threads, h100()), HasSubstr("2048 threads per CTA"));
  EXPECT_THAT(*exceeds_device_limits(per_thread, h100()), HasSubstr("256 registers per thread"));
  EXPECT_THAT(*exceeds_device_limits(per_cta, h100()), HasSubstr("131072 registers per CTA"));
}

TEST(CostModel, MoreWorkTakesLongerAndSpillsCost) {
  LaunchWork base{1024, 4, 1e10, 1e9, 64};
  LaunchWork more_flops = base, more_bytes = base, spilling = base, followed = base;
  more_flops.flops *= 4;
  more_bytes.bytes *= 100;
  spilling.values_per_thread = 512;
  followed.follow_up_bytes = 1e9;  // a second kernel's traffic, after this one's
  double t = estimate_ms(base, h100());
  EXPECT_GT(t, 0);
  EXPECT_GT(estimate_ms(more_flops, h100()), t);
  EXPECT_GT(estimate_ms(more_bytes, h100()), t);
  EXPECT_GT(estimate_ms(spilling, h100()), t);
  EXPECT_GT(estimate_ms(followed, h100()), t + 0.25);  // 1 GB at 3.35 TB/s: 0.3 ms
}

// Tensor-core flops run at the tensor cores' rate (twice that for 8-bit inputs), a program's
// waits cost time beside its work, and a kernel whose values fit in more registers than the
// default spills later.
TEST(CostModel, TensorFlopsWaitsAndRegisterRoom) {
  LaunchWork base{1024, 4, 1e12, 1e6, 64};
  LaunchWork on_tensor_cores = base, waiting = base, roomy = base, crowded = base;
  on_tensor_cores.tensor_flops = base.flops;
  LaunchWork eight_bit = on_tensor_cores;
  eight_bit.tensor_rate = 2;
  waiting.waits_per_program = 1000;
  crowded.values_per_thread = roomy.values_per_thread = 200;
  roomy.register_values = 224;
  double t = estimate_ms(base, h100());
  EXPECT_LT(estimate_ms(on_tensor_cores, h100()) * 8, t);
  EXPECT_NEAR(estimate_ms(eight_bit, h100()) * 2, estimate_ms(on_tensor_cores, h100()),
              0.1 * estimate_ms(on_tensor_cores, h100()));
  EXPECT_GT(estimate_ms(waiting, h100()), t);
  EXPECT_LT(estimate_ms(roomy, h100()), estimate_ms(crowded, h100()));
  EXPECT_GT(estimate_ms(crowded, h100()), t);
}

// A loop whose steps each wait for their own copies (one stage) pays the copy latency a
// pipeline of two hides behind a step's work; with several CTAs on an SM, the others' work
// hides it too. Traffic that L2 serves costs at L2's rate, less than DRAM's.
TEST(CostModel, PipelinesHideTheCopiesLatency) {
  LaunchWork step_bound{132, 8, 0, 1e6, 240};  // one CTA per SM: its registers fill the file
  step_bound.flops = step_bound.tensor_flops = 132 * 64 * (2.0 * 128 * 128 * 128);  // 64 steps of 1024 clocks
  step_bound.register_values = 240;
  step_bound.copy_steps_per_program = 64;
  LaunchWork piped = step_bound, small_steps = step_bound, small_piped = step_bound;
  piped.stages = small_piped.stages = 2;
  small_steps.copy_steps_per_program = small_piped.copy_steps_per_program = 640;  // 102 clocks a step
  small_piped.stages = 4;
  EXPECT_GT(estimate_ms(step_bound, h100()), 1.5 * estimate_ms(piped, h100()));
  EXPECT_GT(estimate_ms(small_steps, h100()), estimate_ms(small_piped, h100()));
  LaunchWork shared = piped;
  shared.values_per_thread = 60;  // four CTAs an SM
  shared.programs = 4 * 132;
  shared.flops = shared.tensor_flops = 4 * piped.flops;
  shared.stages = 1;
  EXPECT_LT(estimate_ms(shared, h100()), 4.2 * estimate_ms(piped, h100()));

  LaunchWork from_dram{1024, 4, 1e6, 1e10, 64}, from_l2 = from_dram;
  from_l2.bytes = 1e6, from_l2.l2_bytes = 1e10;
  EXPECT_LT(estimate_ms(from_l2, h100()) * 2, estimate_ms(from_dram, h100()));
}

// Exponentials the products wait for cost the special-function units' time, the part a
// schedule leaves exposed.
TEST(CostModel, ExposedSpecialFunctionsCost) {
  LaunchWork products{1024, 8, 1e12, 1e6, 64};
  products.tensor_flops = products.flops;
  LaunchWork exposed = products, overlapped = products;
  exposed.special_ops = overlapped.special_ops = products.flops / 512;  // one per 512 flops: half their time
  overlapped.special_exposed = 0.3;
  const double t = estimate_ms(products, h100());
  EXPECT_NEAR(estimate_ms(exposed, h100()), 1.5 * t, 0.1 * t);
  EXPECT_NEAR(estimate_ms(overlapped, h100()), 1.15 * t, 0.1 * t);
}

// The GEMM declaration's ranking on an H100: a big square GEMM wants big tiles and enough
// warps; its top choice beats the smallest tile and a tile that must spill.
TEST(CostModel, RanksGemmTilesSensibly) {
  const TunableKernel& gemm = ops::find_tunable_op("gemm");
  ProblemShape big{{{"M", 4096}, {"N", 4096}, {"K", 4096}}};
  auto cost = [&](int64_t bm, int64_t bn, int64_t bk, int64_t warps) {
    Config c{{{"BLOCK_M", bm}, {"BLOCK_N", bn}, {"BLOCK_K", bk}, {"num_warps", warps}, {"num_stages", 1}}};
    return estimate_ms(gemm.work(c, big, h100()), h100());
  };
  EXPECT_LT(cost(128, 128, 16, 8), cost(16, 16, 8, 1));
  EXPECT_LT(cost(128, 128, 16, 8), cost(128, 128, 32, 1));  // one warp: 16 K values per thread spill
  EXPECT_LT(cost(64, 64, 16, 4), cost(16, 16, 16, 4));
}

TEST(Median, OfOddAndEvenCounts) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({7}), 7);
  EXPECT_DOUBLE_EQ(median({}), 0);
  EXPECT_DOUBLE_EQ(median({1, 1, 100}), 1);  // an outlier does not move it
}

// Every example op declares a space whose constants its kernel has, dimensions its problems
// take, and a heuristic config that meets its constraints.
TEST(ExampleOps, DeclarationsAreConsistent) {
  for (const TunableKernel& op : ops::tunable_examples()) {
    SCOPED_TRACE(op.name);
    dsl::Kernel kernel = op.kernel();
    for (const Config& config : op.space.configs()) EXPECT_NO_THROW(kernel.constants(config.values)) << config.str();
    ProblemShape shape;
    for (const std::string& dim : op.dims) shape.values.emplace_back(dim, 1000);
    Config heuristic = op.heuristic_config(shape, h100());
    EXPECT_EQ(op.space.violated(heuristic, shape), std::nullopt) << heuristic.str();
    EXPECT_NO_THROW(kernel.constants(heuristic.values));
    EXPECT_TRUE(op.work) << "no cost model";
  }
  EXPECT_THAT(error_of([] { ops::find_tunable_op("nope"); }),
              HasSubstr("no tunable op 'nope' (tunable: vector_add"));
}

}  // namespace
}  // namespace tilejit::autotune
