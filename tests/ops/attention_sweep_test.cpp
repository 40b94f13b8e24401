// The slow attention checks: a wider sweep of shapes, dtypes and option combinations with
// the op's own configs on the emulator, and the default configs of every kernel, head dim
// and dtype assembled by ptxas for sm_80 and sm_90a without spills.
#include <gtest/gtest.h>

#include <cstdio>

#include "codegen/compiler.h"
#include "ops/attention/backward_kernels.h"
#include "ops/attention/forward_kernel.h"
#include "tests/codegen/ptxas_check.h"
#include "tests/ops/attention_test_util.h"

namespace tjops {
namespace {

using namespace tilejit::ops::attention_detail;
using tilejit::ops::NamedArguments;

// --- numerics ---------------------------------------------------------------------------------

struct SweepOptions {
  bool causal = false, bottom_right = false, window = false, lens = false, bias = false, mask = false;
};

AttentionCase sweep_case(DType dtype, int64_t h, int64_t t, int64_t s, int64_t n, int64_t k, const SweepOptions& o,
                         Layout layout) {
  AttentionCase c;
  c.dtype = dtype, c.B = 2, c.T = t, c.S = s, c.N = n, c.K = k, c.H = h;
  c.layout = layout;
  c.causal = o.causal, c.bottom_right = o.bottom_right;
  if (o.window) c.window = std::pair<int64_t, int64_t>{s / 3, 5};
  if (o.lens) c.q_lens = {int32_t(t - 7), int32_t(t / 2)}, c.kv_lens = {int32_t(s), int32_t(s / 3)};
  if (o.bias) c.bias_shape = {2, n, 1, s};
  if (o.mask) c.mask_shape = {1, 1, t, s}, c.mask_keep = 0.6;
  return c;
}

TEST(AttentionSweep, ShapesDtypesAndOptions) {
  const SweepOptions combos[] = {
      {},
      {.causal = true},
      {.bottom_right = true, .lens = true},
      {.window = true, .bias = true},
      {.causal = true, .lens = true, .mask = true},
      {.causal = true, .window = true, .lens = true, .bias = true, .mask = true},
  };
  struct Shape {
    int64_t h, t, s, n, k;
  };
  const Shape shapes[] = {{8, 150, 97, 4, 4}, {24, 130, 260, 6, 2}, {64, 200, 200, 4, 1},
                          {96, 77, 190, 2, 2}, {128, 140, 129, 4, 2}, {256, 70, 100, 2, 1}};
  // Each dtype shifts the options and layouts against the shapes, so every shape meets three
  // option sets and all three layouts.
  const DType dtypes[] = {DType::bf16, DType::f16, DType::f32};
  for (size_t d = 0; d < std::size(dtypes); ++d)
    for (size_t i = 0; i < std::size(shapes); ++i) {
      const Shape& shape = shapes[i];
      const SweepOptions& o = combos[(i + 2 * d) % std::size(combos)];
      const size_t l = (i + d) % 3;
      Layout layout = l == 1 ? Layout::bnth : l == 2 ? Layout::padded : Layout::btnh;
      check_attention_case(sweep_case(dtypes[d], shape.h, shape.t, shape.s, shape.n, shape.k, o, layout));
    }
}

TEST(AttentionSweep, EveryOptionCombination) {
  // Every subset of the six options on one shape, bf16.
  for (int bits = 0; bits < 64; ++bits) {
    SweepOptions o{bool(bits & 1), bool(bits & 2), bool(bits & 4), bool(bits & 8), bool(bits & 16), bool(bits & 32)};
    check_attention_case(sweep_case(DType::bf16, 32, 90, 110, 4, 2, o, Layout::btnh));
  }
}

// --- registers --------------------------------------------------------------------------------

// The four kernels of `c`'s features with their default configs for `arch` and their
// arguments, traced for the specialization most calls get (aligned pointers, strides divisible
// by 16, the descriptors' blocks).
struct TracedKernels {
  std::vector<std::tuple<std::string, tilejit::dsl::Kernel, KernelConfig, NamedArguments>> kernels;
};

std::vector<tilejit::ir::ArgFacts> facts_of(const tilejit::dsl::Kernel& kernel, const NamedArguments& args) {
  std::vector<tilejit::ir::ArgFacts> facts = kernel.aligned_facts();
  for (size_t i = 0; i < facts.size(); ++i)
    if (args.values()[i].kind() == KernelArg::Kind::tensor_descriptor)
      facts[i].block = args.values()[i].descriptor().block_shape();
  return facts;
}

TracedKernels default_kernels(const AttentionCase& c, const std::string& arch) {
  TJ_SEEDED_RNG(rng);
  Device& device = Device::emu();
  AttentionInputs in = random_inputs(c, rng);
  Tensor q = upload_sequence(c, in.q, c.T, c.N, device);
  Tensor k = upload_sequence(c, in.k, c.S, c.K, device);
  AttentionOptions options = case_options(c, in, device);
  AttentionProblem p = check_attention(tilejit::ops::OpArguments("attention"), q, k, k, options);
  AttentionConfigs configs = choose_configs(c.dtype, c.H, Device::by_name("emu:" + arch).info());
  Tensor lse = Tensor::empty(device, DType::f32, p.logsumexp_shape());
  BackwardBuffers buffers{q,   q, lse, p.q, p.q, Tensor::empty(device, DType::f32, row_stats_shape(p)),
                          Tensor::empty(device, DType::i32, {c.B, c.N}), q, k, k, {}};
  const DeviceInfo& info = Device::by_name("emu:" + arch).info();
  NamedArguments bwd = rows_arguments(p, buffers), dq = dq_arguments(p, configs.dq, info, buffers),
                 dkdv = dkdv_arguments(p, configs.dkdv, info, buffers);
  NamedArguments forward = forward_arguments(p, configs.forward, info, q, &lse);
  TracedKernels t;
  t.kernels.emplace_back("forward", forward_kernel(c.dtype, forward.params()), configs.forward, forward);
  t.kernels.emplace_back("rows", backward_rows_kernel(c.dtype, bwd.params()), configs.preprocess, bwd);
  t.kernels.emplace_back("dkdv", dkdv_kernel(c.dtype, dkdv.params()), configs.dkdv, dkdv);
  t.kernels.emplace_back("dq", dq_kernel(c.dtype, dq.params()), configs.dq, dq);
  return t;
}

// Without options and with a causal mask (the band and its skipping): no spills. With every
// option at once, ptxas must accept the kernels; their registers and spills are printed.
TEST(AttentionSweep, DefaultConfigsAssembleWithoutSpills) {
  if (!tilejit::codegen::find_ptxas()) GTEST_SKIP() << "ptxas is not installed";
  for (DType dtype : {DType::bf16, DType::f32})
    for (int64_t h : {16, 32, 64, 128, 256})
      for (int features = 0; features < 3; ++features) {
        AttentionCase c;
        c.dtype = dtype, c.T = 64, c.S = 64, c.N = 2, c.K = 1, c.H = h;
        c.causal = features > 0;
        if (features == 2) {
          c.q_lens = {50}, c.kv_lens = {40};
          c.bias_shape = {1, 2, 64, 64}, c.mask_shape = {1, 1, 64, 64};
        }
        for (const char* arch : {"sm_80", "sm_90a"})
          for (auto& [name, kernel, config, args] : default_kernels(c, arch).kernels) {
            SCOPED_TRACE(name + " " + name_of(dtype) + " H=" + std::to_string(h) + " " + describe(c) + " " + arch);
            auto fn = kernel.trace(kernel.constants(config.constants(h)), facts_of(kernel, args));
            tilejit::codegen::expect_ptxas_accepts(
                tilejit::codegen::compile_to_ptx(*fn, tilejit::codegen::find_target(arch)), features < 2);
          }
      }
}

// The forward's and dq's sm_90a configs with a producer warpgroup (warp_specialize), the
// forward's two consumer warpgroups taking turns (pingpong): at head dims 64 and 128, without
// options, causal (the forward then runs two loops), and with bias and mask, the consumers'
// code fits the registers setmaxnreg hands them without spills, and ptxas keeps the products
// running through the softmax. (At 256 a few values that live across the split spill.)
TEST(AttentionSweep, ProducerWarpgroupKernelsAssembleWithoutSpills) {
  if (!tilejit::codegen::find_ptxas()) GTEST_SKIP() << "ptxas is not installed";
  for (int64_t h : {64, 128})
    for (int features = 0; features < 3; ++features) {
      AttentionCase c;
      c.T = 64, c.S = 64, c.N = 2, c.K = 1, c.H = h;
      c.causal = features == 1;
      if (features == 2) c.bias_shape = {1, 2, 64, 64}, c.mask_shape = {1, 1, 64, 64};
      TracedKernels traced = default_kernels(c, "sm_90a");
      for (auto& [name, kernel, config, args] : traced.kernels) {
        if (name != "forward" && name != "dq") continue;
        SCOPED_TRACE(name + " H=" + std::to_string(h) + " " + describe(c));
        KernelConfig specialized = config;
        specialized.warp_specialize = true;
        specialized.pingpong = name == "forward";
        ASSERT_TRUE(!specialized.pingpong || (config.num_warps == 8 && config.overlap));
        auto fn = kernel.trace(kernel.constants(specialized.constants(h)), facts_of(kernel, args));
        tilejit::codegen::CompiledKernel k =
            tilejit::codegen::compile_to_ptx(*fn, tilejit::codegen::find_target("sm_90a"));
        EXPECT_NE(k.ptx.find("setmaxnreg.inc"), std::string::npos);
        EXPECT_EQ(k.ptx.find("bar.arrive") != std::string::npos, specialized.pingpong);
        tilejit::codegen::expect_ptxas_accepts(k, true);
      }
    }
}

}  // namespace
}  // namespace tjops
