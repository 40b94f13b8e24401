// gemm on sm_90a reading its operands through tensor descriptors (TMA into the pipeline's
// rings): for each layout, which operands qualify, with which shape and batch rows, and the
// numbers of the call against the reference on the emulator.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "ops/gemm/gemm_config.h"
#include "ops/gemm/gemm_launch.h"
#include "ops/gemm/gemm_operands.h"
#include "ops/gemm/gemm_tuning.h"
#include "tests/codegen/ptxas_check.h"
#include "tests/ops/gemm_check.h"
#include "tests/ptx_dump.h"

namespace tjops {
namespace {

namespace gd = tilejit::ops::gemm_detail;

// How a gemm call of a and b reads them: with the config the call runs.
gd::GemmOperands operands_of(const Tensor& a, const Tensor& b, const GemmOptions& o) {
  gd::GemmProblem p = gd::check_gemm(a, b, o, nullptr);
  return gd::gemm_operands(p, gd::call_config(p, a.device()), a.device().info());
}

// What one operand is expected to be read through.
struct Read {
  bool descriptor = false;
  std::array<int64_t, 2> shape{};  // the descriptor's, in memory order, batches stacked
  int64_t batch_rows = 0;
};
const Read kPointer{};

void expect_read(const char* name, const std::optional<gd::OperandDescriptor>& got, const Read& want) {
  SCOPED_TRACE(name);
  ASSERT_EQ(got.has_value(), want.descriptor);
  if (!got) return;
  EXPECT_EQ(got->descriptor.shape, want.shape);
  EXPECT_EQ(got->batch_rows, want.batch_rows);
  EXPECT_EQ(got->descriptor.problem(), "");
}

struct DescriptorCase {
  std::string what;
  GemmCase gemm;
  Read a, b;
};

GemmCase on_sm90(GemmCase c, bool ta = false, bool tb = false) {
  c.device = "emu:sm_90a";
  c.options.transpose_a = ta, c.options.transpose_b = tb;
  return c;
}

TEST(GemmDescriptors, EveryLayoutThatQualifiesAndEveryFallback) {
  // Row strides are multiples of 16 bytes unless a case says otherwise; no size is a multiple
  // of its tile, so TMA's zero fill past the edges is exercised.
  const DType i8 = DType::i8, e4m3 = DType::f8e4m3, e5m2 = DType::f8e5m2;
  Tensor f32_placeholder = Tensor::empty(emu(), DType::f32, {1});
  GemmCase with_epilogue = on_sm90({.a = DType::f16, .b = DType::f16, .m = 104, .n = 72, .k = 88});
  with_epilogue.options.bias = f32_placeholder, with_epilogue.options.activation = Activation::gelu_tanh;
  with_epilogue.options.residual = f32_placeholder;
  GemmCase split = on_sm90({.batch_a = 2, .batch_b = 2, .m = 64, .n = 40, .k = 512});
  split.options.split_k = 3;
  const std::vector<DescriptorCase> cases = {
      {"A (M, K), B (K, N)", on_sm90({.m = 104, .n = 72, .k = 88}), {true, {104, 88}}, {true, {88, 72}}},
      {"A (K, M), B (N, K)", on_sm90({.m = 104, .n = 72, .k = 88}, true, true), {true, {88, 104}}, {true, {72, 88}}},
      {"A (K, M), B (K, N)", on_sm90({.m = 104, .n = 72, .k = 88}, true), {true, {88, 104}}, {true, {88, 72}}},
      {"a fused epilogue", with_epilogue, {true, {104, 88}}, {true, {88, 72}}},
      // Batches stacked as rows: rows past M or N read the next batch (never stored).
      {"batches one after the other", on_sm90({.batch_a = 3, .batch_b = 3, .m = 40, .n = 24, .k = 128}),
       {true, {120, 128}, 40}, {true, {384, 24}, 128}},
      {"batches stacked, B transposed", on_sm90({.batch_a = 2, .batch_b = 2, .m = 40, .n = 24, .k = 88}, false, true),
       {true, {80, 88}, 40}, {true, {48, 88}, 24}},
      // A stored (K, M): a batch's first row is along K.
      {"batches stacked, A transposed", on_sm90({.batch_a = 2, .batch_b = 2, .m = 40, .n = 24, .k = 128}, true, true),
       {true, {256, 40}, 128}, {true, {48, 128}, 24}},
      // K down the rows of stacked batches and not a multiple of BLOCK_K: the last step would
      // read the next batch where it must read zeros, so that operand takes the pointer path
      // (cp.async) beside the other's TMA.
      {"stacked K not a multiple of BLOCK_K", on_sm90({.batch_a = 2, .batch_b = 2, .m = 40, .n = 24, .k = 88}),
       {true, {80, 88}, 40}, kPointer},
      {"stacked K not a multiple of BLOCK_K, A transposed",
       on_sm90({.batch_a = 2, .batch_b = 2, .m = 40, .n = 24, .k = 88}, true, true), kPointer, {true, {48, 88}, 24}},
      {"B shared by the batches", on_sm90({.batch_a = 3, .batch_b = 1, .m = 40, .n = 24, .k = 88}),
       {true, {120, 88}, 40}, {true, {88, 24}, 0}},
      {"split K over stacked batches", split, {true, {128, 512}, 64}, {true, {1024, 40}, 512}},
      // B's rows 90 bytes apart: no descriptor, and its odd width keeps it out of the ring, so
      // the dot stores it into scratch space above the ring and its mbarriers.
      {"B rows not 16-byte multiples", on_sm90({.m = 104, .n = 45, .k = 88}), {true, {104, 88}}, kPointer},
      {"A rows not 16-byte multiples", on_sm90({.m = 104, .n = 72, .k = 20}), kPointer, {true, {20, 72}}},
      // 8-bit tiles go to wgmma from the ring only K-major: A (M, K), B (N, K).
      {"fp8, B (N, K)", on_sm90({.a = e4m3, .b = e5m2, .m = 104, .n = 72, .k = 160}, false, true),
       {true, {104, 160}}, {true, {72, 160}}},
      {"fp8, B (K, N)", on_sm90({.a = e5m2, .b = e4m3, .m = 104, .n = 80, .k = 160}), {true, {104, 160}}, kPointer},
      {"int8, B (N, K)", on_sm90({.a = i8, .b = i8, .m = 104, .n = 72, .k = 160}, false, true), {true, {104, 160}},
       {true, {72, 160}}},
      {"int8, A (K, M)", on_sm90({.a = i8, .b = i8, .m = 112, .n = 72, .k = 160}, true, true), kPointer,
       {true, {72, 160}}},
      // tf32 operands go to the tensor cores through registers.
      {"f32", on_sm90({.a = DType::f32, .b = DType::f32, .m = 104, .n = 72, .k = 88}), kPointer, kPointer},
      // sm_80 has no TMA.
      {"sm_80", {.m = 104, .n = 72, .k = 88, .device = "emu:sm_80"}, kPointer, kPointer},
  };
  TJ_SEEDED_RNG(rng);
  for (const DescriptorCase& c : cases) {
    SCOPED_TRACE(c.what);
    GemmCase run = c.gemm;
    bool looked = false;
    run.before_launch = [&](const Tensor& a, const Tensor& b, const GemmOptions& o) {
      gd::GemmOperands operands = operands_of(a, b, o);
      expect_read("A", operands.a, c.a);
      expect_read("B", operands.b, c.b);
      looked = true;
    };
    check_gemm(run, rng);
    EXPECT_TRUE(looked);
  }
}

// The output leaves through a descriptor (TMA stores on sm_90) when the main kernel writes
// it, it is one matrix and its rows suit TMA; otherwise through its pointer. The numerics of
// both ways are every sm_90a gemm test's.
TEST(GemmDescriptors, TheOutputLeavesThroughADescriptorWhereItCan) {
  auto output = [](const char* arch, int64_t batch, int64_t n, int64_t split_k) {
    Device& device = Device::by_name(std::string("emu:") + arch);
    Tensor a = Tensor::empty(device, DType::bf16, {batch, 104, 64}), b = Tensor::empty(device, DType::bf16, {batch, 64, n});
    const GemmOptions options;  // the problem points to it
    gd::GemmProblem p = gd::check_gemm(a, b, options, nullptr);
    gd::set_output(p, Tensor::empty(device, p.features.out, p.out_shape));
    gd::GemmConfig config = gd::call_config(p, device);
    config.split_k = split_k;
    return gd::gemm_operands(p, config, device.info()).out;
  };
  std::optional<TensorDescriptor> out = output("sm_90a", 1, 72, 1);
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->shape, (std::array<int64_t, 2>{104, 72}));
  EXPECT_EQ(out->problem(), "");
  EXPECT_FALSE(output("sm_90a", 2, 72, 1)) << "batches: a tile's rows past M would land in the next batch";
  EXPECT_FALSE(output("sm_90a", 1, 72, 2)) << "split-K: the main kernel writes slices";
  EXPECT_FALSE(output("sm_90a", 1, 45, 1)) << "rows 90 bytes apart";
  EXPECT_FALSE(output("sm_80", 1, 72, 1)) << "no TMA";
}

TEST(GemmDescriptors, MisalignedOrScatteredOperandsUseTheirPointers) {
  Device& device = Device::by_name("emu:sm_90a");
  Tensor wide = Tensor::empty(device, DType::bf16, {2, 64, 72});
  Tensor b = Tensor::empty(device, DType::bf16, {2, 64, 32});
  // Columns 3.. of a wider matrix: its data is 6 bytes past a 16-byte boundary.
  EXPECT_FALSE(operands_of(wide.slice(2, 3, 64), b, {}).a.has_value());
  EXPECT_TRUE(operands_of(wide.slice(2, 8, 64), b, {}).a.has_value());
  // Batches that are not one after the other cannot be stacked as rows.
  Tensor rows_apart = Tensor::empty(device, DType::bf16, {64, 2, 64}).permute({1, 0, 2});
  gd::GemmOperands scattered = operands_of(rows_apart, b, {});
  EXPECT_FALSE(scattered.a.has_value());
  EXPECT_TRUE(scattered.b.has_value());
}

// An 8-bit B given (K, N), which wgmma reads stored transposed: with 3 or more stages a dot that
// chains into its accumulator (int8, fp8 with fast accumulation) stays in flight and each
// stage holds a transposed tile too. The heuristic keeps what that needs within an H100's
// shared memory: the wide 128 x 256 tile takes 2 stages (4 with their transposed tiles would
// need 320 KiB), the 128 x 128 one 3, and the kernel built fits.
TEST(GemmDescriptors, An8BitBGivenKByNKeepsItsTransposedTilesWithinSharedMemory) {
  Device& device = Device::by_name("emu:sm_90a");
  DeviceInfo h100 = device.info();
  h100.sm_count = 132, h100.shared_per_block_optin = 227 * 1024;
  GemmOptions fast;
  fast.fp8_fast_accumulation = true;
  for (auto [dtype, options] : {std::pair{DType::i8, GemmOptions{}}, std::pair{DType::f8e4m3, fast}}) {
    for (int64_t mn : {8192, 1024}) {
      SCOPED_TRACE(name_of(dtype) + " " + std::to_string(mn));
      Tensor a = Tensor::empty(device, dtype, {mn, 1024}), b = Tensor::empty(device, dtype, {1024, mn});
      gd::GemmProblem p = gd::check_gemm(a, b, options, nullptr);
      gd::set_output(p, Tensor::empty(device, p.features.out, p.out_shape));
      gd::GemmConfig config = gd::heuristic_gemm_config(p, h100);
      EXPECT_EQ(config.block_n, mn == 8192 ? 256 : 128);
      EXPECT_EQ(config.num_stages, mn == 8192 ? 2 : 3);
      KernelReport report;
      std::vector<std::string> ptx = tilejit::testing_util::ptx_built_by([&] {
        report = gd::prepare_gemm_with(p, config, device, Tensor::empty(device, p.features.accumulator(), {1}));
      });
      ASSERT_EQ(ptx.size(), 1u);
      int64_t rings = config.num_stages * (config.block_m + 2 * config.block_n) * config.block_k;
      EXPECT_GE(report.shared_bytes, mn == 8192 ? rings - config.block_n * config.block_k : rings);
      EXPECT_LE(report.shared_bytes, h100.shared_per_block_optin);
      EXPECT_EQ(ptx[0].find("wgmma.wait_group.sync.aligned 1;") != std::string::npos, config.num_stages >= 3);
    }
  }
}

// The kernels gemm builds with an H100's default configs (132 multiprocessors, 227 KiB of
// shared memory per block) at the sizes its benchmarks run: 128 x 256 tiles in a 4-stage
// pipeline (fp8: 128 x 128 in 3, its block products beside the accumulator), which ptxas
// accepts for sm_90a without spills; both operands come through TMA,
// the products through wgmma, and the output leaves by TMA. The same with a producer warpgroup (warp_specialize): one
// more warpgroup in the launch, registers moved to the consumers, their barriers named; and
// persistent, with and without it (the ring position carried from tile to tile in registers,
// not local memory); and with a producer in clusters of two CTAs multicasting B.
TEST(GemmDescriptors, H100DefaultConfigsAssembleWithoutSpills) {
  if (!tilejit::codegen::find_ptxas()) GTEST_SKIP() << "ptxas is not installed";
  Device& device = Device::by_name("emu:sm_90a");
  DeviceInfo h100 = device.info();
  h100.sm_count = 132, h100.shared_per_block_optin = 227 * 1024;
  struct Problem {
    DType a, b;
    int64_t m, n, k;
    bool a_km = false, b_nk = false;  // A stored (K, M), B stored (N, K)
    int64_t block_n = 256, stages = 4;  // the heuristic's
  };
  const DType bf16 = DType::bf16, e4m3 = DType::f8e4m3;
  for (const Problem& s : {Problem{bf16, bf16, 4096, 4096, 4096}, Problem{bf16, bf16, 4096, 4096, 4096, true, true},
                           Problem{e4m3, e4m3, 8192, 8192, 4096, false, true, 128, 3},
                           Problem{DType::i8, DType::i8, 4096, 4096, 4096, false, true}}) {
    SCOPED_TRACE(name_of(s.a) + (s.a_km ? " A (K, M)" : " A (M, K)") + (s.b_nk ? " B (N, K)" : " B (K, N)"));
    Tensor a = Tensor::empty(device, s.a, s.a_km ? std::vector<int64_t>{s.k, s.m} : std::vector<int64_t>{s.m, s.k});
    Tensor b = Tensor::empty(device, s.b, s.b_nk ? std::vector<int64_t>{s.n, s.k} : std::vector<int64_t>{s.k, s.n});
    GemmOptions o;
    o.transpose_a = s.a_km, o.transpose_b = s.b_nk;
    gd::GemmProblem p = gd::check_gemm(a, b, o, nullptr);
    gd::set_output(p, Tensor::empty(device, p.features.out, p.out_shape));
    gd::GemmConfig config = gd::heuristic_gemm_config(p, h100);
    EXPECT_EQ(config.split_k, 1);
    EXPECT_EQ(config.block_m, 128);
    EXPECT_EQ(config.block_n, s.block_n);
    EXPECT_EQ(config.num_stages, s.stages);
    gd::GemmOperands operands = gd::gemm_operands(p, config, h100);
    EXPECT_TRUE(operands.a && operands.b);
    // Consumer warps and the registers setmaxnreg gives each: what 384 or 640 threads
    // started with (168, 96), less the producer's 40 each, shared out.
    struct Variant {
      bool specialized;
      int64_t warps;
      const char* consumer_registers;
      bool persistent = false;
      int64_t stages = 4;
      int64_t cluster = 1;  // CTAs per cluster along M, multicasting B
    };
    // Persistent with a producer, the epilogue's scratch cannot reuse the rings (the producer
    // fills them with the next tile's operands meanwhile): 3 stages leave room for it, 2 for
    // int8, whose i32 output tile takes 128 KiB to stage for its TMA store.
    int64_t stages_beside_epilogue = s.a == DType::i8 ? 2 : 3;
    for (const Variant& v : {Variant{false, 8, ""}, Variant{true, 8, "232"}, Variant{true, 16, "104"},
                             Variant{false, 8, "", true}, Variant{true, 8, "232", true, stages_beside_epilogue},
                             Variant{true, 8, "232", false, 4, 2},
                             Variant{true, 8, "232", true, stages_beside_epilogue, 2}}) {
      bool specialized = v.specialized;
      SCOPED_TRACE(fmt::format("{}{}{}", specialized ? fmt::format("warp-specialized, {} warps", v.warps) : "",
                               v.persistent ? ", persistent" : "", v.cluster > 1 ? ", clusters of 2" : ""));
      config.warp_specialize = specialized, config.num_warps = v.warps, config.persistent = v.persistent;
      config.num_stages = v.stages, config.cluster_m = v.cluster;
      // Built as a call builds it; the 4-stage rings of both operand tiles fit.
      KernelReport report;
      std::vector<std::string> ptx = tilejit::testing_util::ptx_built_by([&] {
        report = gd::prepare_gemm_with(p, config, device, Tensor::empty(device, p.features.accumulator(), {1}));
      });
      int64_t rings = config.num_stages * (config.block_m + config.block_n) * config.block_k * dtype_storage_bytes(s.a);
      EXPECT_GE(report.shared_bytes, rings);
      EXPECT_LE(report.shared_bytes, h100.shared_per_block_optin);
      EXPECT_EQ(report.num_threads, 32 * (config.num_warps + (specialized ? 4 : 0)));
      ASSERT_EQ(ptx.size(), 1u);
      EXPECT_NE(ptx[0].find("cp.async.bulk.tensor.2d.shared::cluster.global"), std::string::npos);
      EXPECT_NE(ptx[0].find("cp.async.bulk.tensor.2d.global.shared::cta"), std::string::npos);  // the output
      // A 16-bit output tile goes to shared memory by stmatrix.
      bool half_output = dtype_storage_bytes(p.features.out) == 2;
      EXPECT_EQ(ptx[0].find("stmatrix.sync.aligned.m8n8.x4.shared.b16") != std::string::npos, half_output);
      EXPECT_NE(ptx[0].find("wgmma.mma_async"), std::string::npos);
      EXPECT_EQ(ptx[0].find("cp.async.cg"), std::string::npos);
      EXPECT_EQ(ptx[0].find(".local"), std::string::npos);
      for (const std::string& added :
           {std::string("setmaxnreg.dec.sync.aligned.u32 \t40"),
            fmt::format("setmaxnreg.inc.sync.aligned.u32 \t{}", v.consumer_registers),
            fmt::format("bar.sync \t1, {}", 32 * v.warps)})
        EXPECT_EQ(ptx[0].find(added) != std::string::npos, specialized) << added;
      // Consumer warps release ring slots to their own CTA's producer, or to the cluster's.
      EXPECT_EQ(ptx[0].find("mbarrier.arrive.shared.b64") != std::string::npos, specialized && v.cluster == 1);
      for (const char* multicast : {".reqnctapercluster 2, 1, 1", ".multicast::cluster", "barrier.cluster.wait"})
        EXPECT_EQ(ptx[0].find(multicast) != std::string::npos, v.cluster > 1) << multicast;
      EXPECT_EQ(report.cluster, (Dim3{uint32_t(v.cluster), 1, 1}));
      tilejit::codegen::CompiledKernel compiled;
      compiled.name = "gemm", compiled.arch = "sm_90a", compiled.ptx = ptx[0];
      tilejit::codegen::expect_ptxas_accepts(compiled, true);
    }
  }
}

}  // namespace
}  // namespace tjops
