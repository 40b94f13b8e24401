// The schedules the tuner may choose for the library's gemm and attention kernels on sm_90a,
// on the GPU: a producer warpgroup, persistent programs, clusters of two CTAs sharing B, the
// attention forward's consumer warpgroups taking turns, dk / dv summing dq by atomic adds. The
// cost model ranks them first on an H100, and no call runs them untuned, so a tuning is where
// a GPU would first meet them: each is built, run on poisoned outputs and checked against the
// reference by the tuner's own candidate runner, at a shape no tile divides (its rows 16-byte
// aligned, as TMA needs).
#include <gtest/gtest.h>

#include <initializer_list>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "autotune/launch_timer.h"
#include "autotune/resource_limits.h"
#include "ops/tunable_ops.h"

namespace {

using namespace tilejit;
using autotune::Config;
using autotune::ProblemShape;

struct ScheduleCase {
  std::string name;  // the test's
  std::string op;    // a tunable op (ops/tunable_ops.h)
  ProblemShape shape;
  std::vector<std::pair<std::string, int64_t>> settings;  // over the op's heuristic config
};

void PrintTo(const ScheduleCase& c, std::ostream* os) { *os << c.name; }

class ScheduleOnGpu : public ::testing::TestWithParam<ScheduleCase> {
 protected:
  void SetUp() override {
    if (Device::cuda_device_count() == 0) GTEST_SKIP() << "no GPU: " << cuda_driver_status();
    if (Device::cuda(0).info().cc_major != 9) GTEST_SKIP() << "these schedules are sm_90a's";
  }
};

TEST_P(ScheduleOnGpu, MatchesItsReference) {
  const ScheduleCase& c = GetParam();
  Device& device = Device::cuda(0);
  const autotune::TunableKernel& op = ops::find_tunable_op(c.op);
  Config config = op.heuristic_config(c.shape, device.info());
  for (const auto& [name, value] : c.settings) {
    ASSERT_TRUE(config.has(name)) << name << " is not in " << config.str();
    for (auto& [have, v] : config.values)
      if (have == name) v = value;
  }
  ASSERT_EQ(op.space.violated(config, c.shape), std::nullopt) << config.str();
  auto runner = op.runner(device, c.shape, autotune::TimingOptions::for_device(device.info()), 7);
  ASSERT_EQ(autotune::exceeds_device_limits(runner->prepare(config), device.info()), std::nullopt) << config.str();
  autotune::Measurement m = runner->measure(config);
  EXPECT_TRUE(m.correct) << config.str() << ": " << m.mismatch;
}

const ProblemShape kGemm{{{"M", 300}, {"N", 700}, {"K", 1008}}};
const ProblemShape kAttention{{{"BN", 4}, {"G", 2}, {"T", 700}, {"S", 900}}};

std::vector<ScheduleCase> cases() {
  const std::pair<std::string, int64_t> wide[] = {{"BLOCK_M", 128}, {"BLOCK_N", 256}, {"BLOCK_K", 64},
                                                  {"num_warps", 8}, {"num_stages", 4}};
  auto gemm = [&](const char* name, const char* op, std::initializer_list<std::pair<std::string, int64_t>> more) {
    ScheduleCase c{name, op, kGemm, {}};
    if (std::string(op) == "gemm_bf16_nt") c.settings.assign(std::begin(wide), std::end(wide));
    c.settings.insert(c.settings.end(), more);
    return c;
  };
  return {
      gemm("gemm_producer", "gemm_bf16_nt", {{"warp_specialize", 1}}),
      // Persistent programs stage their output tile too: three stages fit beside it.
      gemm("gemm_persistent_producer", "gemm_bf16_nt", {{"warp_specialize", 1}, {"PERSISTENT", 1}, {"num_stages", 3}}),
      gemm("gemm_clusters", "gemm_bf16_nt", {{"warp_specialize", 1}, {"cluster_x", 2}}),
      gemm("gemm_persistent_clusters", "gemm_bf16_nt",
           {{"warp_specialize", 1}, {"PERSISTENT", 1}, {"num_stages", 3}, {"cluster_x", 2}}),
      gemm("fp8_gemm_clusters", "gemm_f8e4m3_nt", {{"warp_specialize", 1}, {"cluster_x", 2}}),
      {"attention_producer_pingpong",
       "attention_bf16_h128",
       kAttention,
       {{"BLOCK_N", 128}, {"warp_specialize", 1}, {"pingpong", 1}}},
      {"attention_producer_pingpong_64_keys",
       "attention_bf16_h128",
       kAttention,
       {{"BLOCK_N", 64}, {"warp_specialize", 1}, {"pingpong", 1}}},
      {"causal_attention_producer", "attention_bf16_h128_causal", kAttention, {{"warp_specialize", 1}}},
      {"dq_producer", "attention_dq_bf16_h128", kAttention, {{"warp_specialize", 1}}},
      {"dkdv_summing_dq", "attention_dkdv_bf16_h128", kAttention, {{"FUSE_DQ", 1}}},
  };
}

INSTANTIATE_TEST_SUITE_P(Sm90a, ScheduleOnGpu, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
