// Gemm in thread-block clusters of two CTAs along M on the emulator (sm_90a): each CTA's
// producer warpgroup copies its half of the B block the pair shares into both CTAs (TMA
// multicast), consumers hand ring slots back to both producers, and a CTA past M (tile rows
// are padded to whole clusters) computes with its partner and stores nothing. One program per
// tile and persistent, bf16 and fp8, B stored (K, N) and (N, K), split-K, edges that are not
// multiples of the tile; every element checked.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "ops/gemm/gemm_config.h"
#include "ops/gemm/gemm_launch.h"
#include "tests/ops/gemm_check.h"
#include "tests/ptx_dump.h"
#include "tests/scoped_env.h"

namespace tjops {
namespace {

namespace gd = tilejit::ops::gemm_detail;

struct ClusterCase {
  DType a, b;
  bool b_nk;  // B stored (N, K)
  int64_t block_m, block_n, block_k, num_warps, num_stages, split_k;
  bool persistent = false;
};

std::string description(const ClusterCase& c) {
  return fmt::format("{} x {}{} {}x{}x{} {} warps {} stages split {}{}", name_of(c.a), name_of(c.b),
                     c.b_nk ? " B (N, K)" : "", c.block_m, c.block_n, c.block_k, c.num_warps, c.num_stages, c.split_k,
                     c.persistent ? " persistent" : "");
}

// Runs the case in clusters of two and checks every element; returns its main kernel's PTX.
std::string check_clustered(const ClusterCase& cc, int64_t m, int64_t n, int64_t k) {
  SCOPED_TRACE(description(cc));
  Device& device = Device::by_name("emu:sm_90a");
  gd::GemmConfig config;
  config.block_m = cc.block_m, config.block_n = cc.block_n, config.block_k = cc.block_k;
  config.num_warps = cc.num_warps, config.num_stages = cc.num_stages, config.split_k = cc.split_k;
  config.b_transposed = cc.b_nk, config.warp_specialize = true, config.persistent = cc.persistent;
  config.cluster_m = 2;
  GemmCase c{.a = cc.a, .b = cc.b, .m = m, .n = n, .k = k, .device = "emu:sm_90a"};
  c.options.transpose_b = cc.b_nk;
  c.launch = [&](const Tensor& a, const Tensor& b, const Tensor& out, const GemmOptions& o) {
    gd::GemmProblem p = gd::check_gemm(a, b, o, &out);
    gd::set_output(p, out);
    EXPECT_EQ(config.output_tiles(p) % (2 * ((n + cc.block_n - 1) / cc.block_n)), 0);  // whole clusters of tile rows
    EXPECT_EQ(config.programs(p, device.info()) % 2, 0);
    gd::launch_gemm_with(p, config, device.default_stream());
  };
  TJ_SEEDED_RNG(rng);
  std::vector<std::string> ptx = tilejit::testing_util::ptx_built_by([&] { check_gemm(c, rng); });
  EXPECT_EQ(ptx.size(), cc.split_k > 1 ? 2u : 1u);  // the main kernel, then split-K's sum
  return ptx.empty() ? "" : ptx[0];
}

int occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

void expect_multicast(const std::string& ptx) {
  // The bf16 output tile (rows of 16-byte multiples) leaves through shared memory (stmatrix)
  // by a TMA store.
  for (const char* wanted : {".reqnctapercluster 2, 1, 1", ".multicast::cluster", "mapa.shared::cluster",
                             "mbarrier.arrive.release.cluster.shared::cluster", "fence.mbarrier_init.release.cluster",
                             "setmaxnreg.inc", "stmatrix.sync.aligned.m8n8.x4.shared.b16",
                             "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group"})
    EXPECT_NE(ptx.find(wanted), std::string::npos) << "no " << wanted << " in the PTX";
  // The cluster meets after the mbarriers are initialized and before they are invalidated
  // (a peer may arrive on them until then; the emulator's fair schedule keeps the CTAs too
  // close together to show a missing second barrier).
  EXPECT_EQ(occurrences(ptx, "barrier.cluster.arrive"), 2);
  EXPECT_EQ(occurrences(ptx, "barrier.cluster.wait"), 2);
  EXPECT_LT(ptx.rfind("barrier.cluster.wait"), ptx.find("mbarrier.inval"));
}

TEST(ClusterGemm, TheProducersMulticastBToThePair) {
  const DType bf16 = DType::bf16;
  // Three tile rows: the fourth CTA, past M, shares its partner's B and stores nothing.
  expect_multicast(check_clustered({bf16, bf16, true, 64, 64, 64, 4, 3, 1}, 130, 152, 320));
  expect_multicast(check_clustered({bf16, bf16, false, 64, 128, 32, 4, 2, 1}, 64, 200, 96));
  check_clustered({bf16, bf16, true, 128, 64, 64, 8, 4, 1}, 300, 64, 256);
  check_clustered({DType::f8e4m3, DType::f8e5m2, true, 64, 64, 128, 4, 3, 2}, 100, 130, 640);
  check_clustered({DType::i8, DType::i8, true, 64, 128, 128, 4, 2, 1}, 192, 128, 384);
}

TEST(ClusterGemm, PersistentProgramsRunWholeClusters) {
  const DType bf16 = DType::bf16;
  expect_multicast(check_clustered({bf16, bf16, true, 64, 64, 64, 4, 3, 1, true}, 330, 152, 192));
  check_clustered({bf16, bf16, false, 64, 64, 32, 4, 2, 1, true}, 200, 260, 96);
}

// The cluster's CTAs touch each other's shared memory only through mbarriers and the async
// proxy: the race detector finds nothing.
TEST(ClusterGemm, NoRacesBetweenTheCtas) {
  tilejit::testing_util::ScopedEnv racecheck("TILEJIT_EMU_RACECHECK", "1");
  check_clustered({DType::bf16, DType::bf16, true, 64, 64, 64, 4, 3, 1, true}, 130, 64, 192);
}

}  // namespace
}  // namespace tjops
