// Persistent gemm on the emulator: fewer programs than output tiles, each looping over every
// num_programs-th tile with its own pipeline of operand copies (cp.async on sm_80, TMA on
// sm_90a, with and without a producer warpgroup), split-K, batches and edges that are not
// multiples of the tile. The batch takes every multiprocessor, so each program runs
// several tiles whatever the number of the emulator's host threads.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "ops/gemm/gemm_config.h"
#include "ops/gemm/gemm_launch.h"
#include "tests/ops/gemm_check.h"
#include "tests/ptx_dump.h"

namespace tjops {
namespace {

namespace gd = tilejit::ops::gemm_detail;

struct PersistentCase {
  const char* device;
  DType a, b;
  bool b_nk;  // B stored (N, K): through TMA on sm_90a
  int64_t block_m, block_n, block_k, num_warps, num_stages, split_k;
  bool warp_specialize = false;
};

std::string description(const PersistentCase& c) {
  return fmt::format("{} {} x {}{} {}x{}x{} {} warps {} stages split {}{}", c.device, name_of(c.a), name_of(c.b),
                     c.b_nk ? " B (N, K)" : "", c.block_m, c.block_n, c.block_k, c.num_warps, c.num_stages, c.split_k,
                     c.warp_specialize ? " warp-specialized" : "");
}

// Runs the case persistently on a batch of as many matrices as the device has
// multiprocessors and checks every element; returns the PTX of its main kernel.
std::string check_persistent(const PersistentCase& pc, int64_t m, int64_t n, int64_t k) {
  SCOPED_TRACE(description(pc));
  Device& device = Device::by_name(pc.device);
  gd::GemmConfig config;
  config.block_m = pc.block_m, config.block_n = pc.block_n, config.block_k = pc.block_k;
  config.num_warps = pc.num_warps, config.num_stages = pc.num_stages, config.split_k = pc.split_k;
  config.group_m = 2, config.b_transposed = pc.b_nk;
  config.warp_specialize = pc.warp_specialize, config.persistent = true;
  int64_t batch = device.info().sm_count;
  GemmCase c{.a = pc.a, .b = pc.b, .batch_a = batch, .batch_b = batch, .m = m, .n = n, .k = k, .device = pc.device};
  c.options.transpose_b = pc.b_nk;
  c.launch = [&](const Tensor& a, const Tensor& b, const Tensor& out, const GemmOptions& o) {
    gd::GemmProblem p = gd::check_gemm(a, b, o, &out);
    gd::set_output(p, out);
    // One program per batch and slice: it runs every tile of its matrix.
    EXPECT_EQ(config.programs(p, device.info()), 1);
    EXPECT_GT(config.output_tiles(p), 2);
    gd::launch_gemm_with(p, config, device.default_stream());
  };
  TJ_SEEDED_RNG(rng);
  std::vector<std::string> ptx = tilejit::testing_util::ptx_built_by([&] { check_gemm(c, rng); });
  EXPECT_EQ(ptx.size(), pc.split_k > 1 ? 2u : 1u);  // the main kernel, then split-K's sum
  return ptx.empty() ? "" : ptx[0];
}

TEST(PersistentGemm, CpAsyncPipelinesOnSm80) {
  const DType bf16 = DType::bf16;
  check_persistent({"emu:sm_80", bf16, bf16, false, 64, 64, 32, 4, 3, 1}, 130, 150, 96);
  check_persistent({"emu:sm_80", DType::i8, DType::i8, true, 64, 64, 64, 4, 2, 1}, 96, 200, 192);
  check_persistent({"emu:sm_80", bf16, bf16, true, 64, 32, 32, 4, 2, 2}, 100, 96, 160);
}

TEST(PersistentGemm, TmaPipelinesOnSm90) {
  const DType bf16 = DType::bf16;
  // Three stages keep a wgmma in flight across K steps; the pipeline drains at each tile's end.
  std::string ptx = check_persistent({"emu:sm_90a", bf16, bf16, true, 64, 64, 64, 4, 3, 1}, 130, 150, 256);
  EXPECT_NE(ptx.find("cp.async.bulk.tensor.2d"), std::string::npos);
  check_persistent({"emu:sm_90a", DType::f8e4m3, DType::f8e4m3, true, 64, 64, 128, 4, 2, 2}, 64, 200, 512);
}

// A producer warpgroup runs across the tiles: the warps split once, before the loop over
// tiles, and the consumers hand the ring slots of each tile's last K steps back after its
// dots (so the producer copies the next tile's operands during this one's epilogue).
TEST(PersistentGemm, AProducerWarpgroupRunsAcrossTiles) {
  const DType bf16 = DType::bf16;
  for (int64_t stages : {2, 3, 4}) {
    // Three stages and more keep a wgmma in flight: two slots to hand back per tile.
    std::string ptx = check_persistent({"emu:sm_90a", bf16, bf16, true, 64, 64, 64, 4, stages, 1, true}, 130, 150,
                                       stages == 4 ? 64 : 320);
    EXPECT_NE(ptx.find("setmaxnreg.inc"), std::string::npos);
  }
  check_persistent({"emu:sm_90a", bf16, bf16, true, 64, 64, 32, 4, 2, 1, true}, 96, 80, 256);
  check_persistent({"emu:sm_90a", DType::f8e4m3, DType::f8e5m2, true, 128, 64, 128, 8, 3, 2, true}, 200, 130, 640);
}

}  // namespace
}  // namespace tjops
