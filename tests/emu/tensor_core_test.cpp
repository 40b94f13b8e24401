// The tensor-core lowering checked by running it: the GEMM of every operand pairing on the
// emulator of sm_80 (mma.sync; fp8 falls back to the CUDA cores there), sm_89 (fp8 mma.sync)
// and sm_90a, with problem sizes that are not multiples of the tile and a K loop. The sweep
// over tiles and warps is in tensor_core_sweep_test.cpp (label slow).
#include <gtest/gtest.h>

#include "fp8_accumulator_probe.h"
#include "tensor_core_check.h"

namespace tjops {
namespace {

class TensorCoreGemm : public ::testing::TestWithParam<TensorCoreCase> {};

TEST_P(TensorCoreGemm, MatchesTheReference) { check_tensor_core_gemm(GetParam()); }

constexpr DType f16 = DType::f16, bf16 = DType::bf16, f32 = DType::f32, i8 = DType::i8, e4m3 = DType::f8e4m3,
                e5m2 = DType::f8e5m2;

INSTANTIATE_TEST_SUITE_P(
    Pairings, TensorCoreGemm,
    ::testing::Values(
        // sm_80: mma.sync for 16-bit, tf32 (both precisions) and int8; fp8 on the CUDA cores.
        TensorCoreCase{f16, f16, "sm_80", 0, 64, 64, 32, 4, 100, 72, 70},
        TensorCoreCase{bf16, bf16, "sm_80", 0, 64, 64, 32, 4, 64, 130, 96},
        TensorCoreCase{f32, f32, "sm_80", 0, 64, 32, 16, 4, 70, 40, 50},
        TensorCoreCase{f32, f32, "sm_80", 2, 32, 64, 16, 2, 33, 65, 47},
        TensorCoreCase{i8, i8, "sm_80", 0, 64, 64, 64, 4, 80, 64, 150},
        TensorCoreCase{e4m3, e5m2, "sm_80", 0, 32, 32, 32, 4, 40, 36, 70},
        // sm_89: fp8 in every pairing.
        TensorCoreCase{e4m3, e4m3, "sm_89", 0, 64, 64, 64, 4, 70, 72, 100},
        TensorCoreCase{e4m3, e5m2, "sm_89", 0, 32, 64, 32, 4, 64, 64, 64},
        TensorCoreCase{e5m2, e4m3, "sm_89", 0, 64, 32, 32, 2, 50, 33, 96},
        TensorCoreCase{e5m2, e5m2, "sm_89", 0, 16, 16, 32, 1, 17, 30, 40},
        // sm_90a
        TensorCoreCase{bf16, bf16, "sm_90a", 0, 128, 64, 32, 8, 130, 70, 64},
        TensorCoreCase{f16, f16, "sm_90a", 0, 16, 64, 16, 4, 20, 64, 33},
        TensorCoreCase{f32, f32, "sm_90a", 1, 32, 32, 8, 4, 40, 40, 20},  // ieee: the CUDA cores
        TensorCoreCase{i8, i8, "sm_90a", 0, 32, 32, 32, 4, 32, 40, 33},
        TensorCoreCase{e4m3, e4m3, "sm_90a", 0, 64, 64, 32, 4, 64, 64, 64},
        // Pipelined through cp.async (M, N, K multiples of 16, so rows are 16-byte aligned):
        // a partial last K step, fewer K steps than stages, one K step, and M, N edges.
        TensorCoreCase{bf16, bf16, "sm_80", 0, 64, 64, 32, 4, 100, 80, 160, 3},
        TensorCoreCase{f16, f16, "sm_80", 0, 64, 64, 64, 4, 64, 64, 80, 2},
        TensorCoreCase{f16, f16, "sm_90a", 0, 128, 64, 32, 8, 130, 64, 48, 4},
        TensorCoreCase{bf16, bf16, "sm_90a", 0, 32, 32, 32, 4, 48, 48, 32, 3},
        TensorCoreCase{i8, i8, "sm_80", 0, 64, 64, 64, 4, 64, 80, 208, 3},
        TensorCoreCase{e4m3, e5m2, "sm_89", 0, 64, 32, 64, 4, 64, 64, 192, 3},
        TensorCoreCase{f32, f32, "sm_90a", 2, 32, 32, 16, 4, 32, 32, 64, 3},  // tf32: not staged
        // B stored (N, K): its rows go to ldmatrix untransposed, 8-bit B included.
        TensorCoreCase{bf16, bf16, "sm_80", 0, 64, 64, 32, 4, 100, 72, 70, 1, true},
        TensorCoreCase{i8, i8, "sm_80", 0, 64, 64, 64, 4, 80, 64, 150, 1, true},
        TensorCoreCase{e4m3, e5m2, "sm_89", 0, 64, 32, 32, 4, 70, 36, 100, 1, true},
        TensorCoreCase{f16, f16, "sm_90a", 0, 128, 64, 32, 8, 130, 80, 160, 3, true},
        TensorCoreCase{i8, i8, "sm_90a", 0, 32, 64, 64, 4, 48, 80, 208, 4, true},
        TensorCoreCase{e5m2, e4m3, "sm_89", 0, 64, 64, 64, 4, 64, 64, 192, 2, true},
        TensorCoreCase{f32, f32, "sm_80", 0, 64, 32, 16, 4, 70, 40, 50, 1, true},
        // A stored (K, M): ldmatrix.trans for 16-bit elements, registers for 8-bit ones.
        TensorCoreCase{bf16, bf16, "sm_80", 0, 64, 64, 32, 4, 100, 72, 70, 1, false, true},
        TensorCoreCase{f16, f16, "sm_90a", 0, 64, 128, 32, 8, 80, 144, 96, 3, true, true},
        TensorCoreCase{bf16, bf16, "sm_80", 0, 32, 64, 32, 4, 64, 64, 160, 4, false, true},
        TensorCoreCase{i8, i8, "sm_80", 0, 64, 64, 64, 4, 80, 64, 128, 3, true, true},
        TensorCoreCase{e4m3, e4m3, "sm_89", 0, 32, 32, 32, 4, 40, 36, 70, 1, false, true},
        // sm_90a's wgmma (M >= 64, warps in fours): 8-bit operands K-major (B stored (N, K)),
        // warpgroups along M and along N, two instructions per warpgroup along M, the
        // 32-byte swizzle (K = 16), rows of 256 and 512 bytes stored in 128-byte column
        // blocks (K-major A; MN-major B whose m64n256 instruction spans four of them).
        TensorCoreCase{i8, i8, "sm_90a", 0, 128, 64, 64, 4, 130, 70, 130, 3, true},
        TensorCoreCase{e4m3, e5m2, "sm_90a", 0, 64, 128, 64, 8, 70, 140, 100, 1, true},
        TensorCoreCase{e5m2, e4m3, "sm_90a", 0, 128, 128, 128, 4, 128, 128, 256, 2, true},
        TensorCoreCase{bf16, bf16, "sm_90a", 0, 64, 64, 16, 4, 64, 64, 40},
        TensorCoreCase{bf16, bf16, "sm_90a", 0, 64, 256, 64, 4, 64, 256, 128, 2},
        TensorCoreCase{f16, f16, "sm_90a", 0, 128, 64, 128, 8, 130, 64, 200, 3},
        TensorCoreCase{f16, f16, "sm_90a", 0, 128, 128, 64, 8, 128, 130, 96, 2, false, true},
        // wgmma left in flight across iterations (3+ stages, both operands staged): int8 and
        // fp8, a partial last K step, and a single K step with more stages than steps.
        TensorCoreCase{i8, i8, "sm_90a", 0, 128, 64, 64, 4, 144, 80, 208, 3, true},
        TensorCoreCase{e4m3, e5m2, "sm_90a", 0, 64, 128, 32, 4, 80, 128, 112, 4, true},
        TensorCoreCase{bf16, bf16, "sm_90a", 0, 64, 64, 64, 4, 64, 64, 64, 4, false, true},
        // An 8-bit B given (K, N), stored transposed into its ring slot's own (N, K) tile, in
        // flight too: through cp.async, TMA and a producer warpgroup's TMA.
        TensorCoreCase{e4m3, e5m2, "sm_90a", 0, 64, 128, 64, 4, 80, 128, 336, 3},
        TensorCoreCase{e4m3, e4m3, "sm_90a", 0, 128, 64, 64, 8, 130, 80, 448, 3, false, false, true},
        TensorCoreCase{i8, i8, "sm_90a", 0, 128, 64, 64, 4, 130, 80, 528, 4, false, false, true, true},
        // Operands through tensor descriptors: TMA rings completing on mbarriers (wgmma in
        // flight with 3+ stages; rows of B in two or four 128-byte boxes, the latter gemm's
        // wide tile on sm_90; 8-bit B as (N, K)), TMA without a pipeline (one stage; tf32 operands, which the dot takes from registers),
        // and sm_80, where the blocks come from global loads.
        TensorCoreCase{bf16, bf16, "sm_90a", 0, 128, 128, 64, 8, 200, 136, 200, 4, false, false, true},
        TensorCoreCase{bf16, bf16, "sm_90a", 0, 128, 256, 64, 8, 200, 264, 136, 4, false, false, true},
        TensorCoreCase{f16, f16, "sm_90a", 0, 64, 64, 32, 4, 70, 72, 96, 3, true, false, true},
        TensorCoreCase{i8, i8, "sm_90a", 0, 128, 64, 64, 4, 130, 70, 144, 2, true, false, true},
        TensorCoreCase{e4m3, e5m2, "sm_90a", 0, 64, 128, 128, 8, 64, 128, 256, 3, true, false, true},
        TensorCoreCase{bf16, bf16, "sm_90a", 0, 64, 64, 16, 4, 64, 64, 48, 1, false, false, true},
        TensorCoreCase{f32, f32, "sm_90a", 1, 32, 32, 8, 4, 40, 40, 24, 3, false, false, true},
        TensorCoreCase{bf16, bf16, "sm_80", 0, 64, 64, 32, 4, 100, 72, 72, 3, false, false, true},
        // Warp-specialized: a producer warpgroup's thread issues the copies into slots the
        // consumers release on empty mbarriers (K steps several laps around the ring, so that
        // a slot released early is overwritten while read); wgmma in flight (3+ stages) or
        // not (2), one, two or four consumer warpgroups, more stages than K steps, gemm's wide
        // tile, 8-bit B as (N, K); and sm_80, which has no TMA and ignores the request.
        TensorCoreCase{bf16, bf16, "sm_90a", 0, 128, 128, 64, 8, 200, 136, 456, 4, false, false, true, true},
        TensorCoreCase{f16, f16, "sm_90a", 0, 64, 64, 32, 4, 70, 72, 160, 2, true, false, true, true},
        TensorCoreCase{i8, i8, "sm_90a", 0, 128, 64, 64, 4, 130, 70, 528, 3, true, false, true, true},
        TensorCoreCase{e4m3, e5m2, "sm_90a", 0, 64, 128, 128, 8, 64, 128, 1104, 4, true, false, true, true},
        TensorCoreCase{bf16, bf16, "sm_90a", 0, 128, 256, 64, 8, 130, 264, 520, 3, false, false, true, true},
        TensorCoreCase{f16, f16, "sm_90a", 0, 64, 64, 64, 4, 64, 64, 64, 4, false, false, true, true},
        TensorCoreCase{bf16, bf16, "sm_90a", 0, 256, 64, 64, 16, 260, 64, 328, 3, false, false, true, true},
        TensorCoreCase{bf16, bf16, "sm_80", 0, 64, 64, 32, 4, 100, 72, 72, 3, false, false, true, true},
        // Persistent: two programs loop over the output tiles, each computing a reduction
        // across its warps before the K loop; with a producer warpgroup running across the
        // tiles (wgmma in flight or not; fewer K steps than stages) and without.
        TensorCoreCase{bf16, bf16, "sm_90a", 0, 64, 64, 64, 4, 200, 136, 456, 4, false, false, true, true, true},
        TensorCoreCase{f16, f16, "sm_90a", 0, 64, 64, 32, 4, 130, 72, 160, 2, true, false, true, true, true},
        TensorCoreCase{bf16, bf16, "sm_90a", 0, 64, 64, 64, 4, 130, 136, 64, 3, false, false, true, true, true},
        TensorCoreCase{bf16, bf16, "sm_90a", 0, 64, 64, 64, 4, 130, 136, 200, 3, false, false, true, false, true},
        // Clusters of 2 x 2 CTAs with a producer: each multicasts its half of the A block to
        // its partner along y and of the B block to its partner along x (the diagonal CTA
        // shares neither), edge CTAs past M and N included; without a producer each CTA copies
        // both blocks whole, in halves.
        TensorCoreCase{bf16, bf16, "sm_90a", 0, 64, 64, 64, 4, 130, 136, 456, 4, false, false, true, true, false, 2},
        TensorCoreCase{e4m3, e5m2, "sm_90a", 0, 64, 128, 128, 4, 64, 200, 640, 3, true, false, true, true, false, 2},
        TensorCoreCase{f16, f16, "sm_90a", 0, 64, 64, 32, 4, 100, 72, 160, 2, true, false, true, true, false, 2},
        TensorCoreCase{bf16, bf16, "sm_90a", 0, 64, 64, 64, 4, 130, 136, 200, 3, false, false, true, false, false, 2},
        // A computed in registers: wgmma's register form on sm_90a (one warpgroup; two along
        // M; two along N, which hold the same rows of A; A given transposed; a pipelined B;
        // 8-bit operands with B as (N, K)), and mma.sync's fragments on sm_80.
        with_a_computed(TensorCoreCase{bf16, bf16, "sm_90a", 0, 64, 64, 32, 4, 100, 72, 70}),
        with_a_computed(TensorCoreCase{f16, f16, "sm_90a", 0, 128, 64, 32, 8, 130, 70, 96, 3, true}),
        with_a_computed(TensorCoreCase{bf16, bf16, "sm_90a", 0, 64, 128, 32, 8, 70, 140, 64}),
        with_a_computed(TensorCoreCase{f16, f16, "sm_90a", 0, 64, 64, 32, 4, 64, 80, 96, 1, false, true}),
        with_a_computed(TensorCoreCase{i8, i8, "sm_90a", 0, 64, 64, 64, 4, 80, 64, 150, 1, true}),
        with_a_computed(TensorCoreCase{e4m3, e5m2, "sm_90a", 0, 64, 64, 64, 4, 70, 72, 100, 2, true}),
        with_a_computed(TensorCoreCase{e5m2, e4m3, "sm_90a", 0, 128, 64, 32, 8, 128, 64, 96, 1, true}),
        with_a_computed(TensorCoreCase{bf16, bf16, "sm_80", 0, 64, 64, 32, 4, 100, 72, 70})),
    [](const auto& info) { return tensor_core_case_name(info.param); });

// The narrower accumulator of fp8 instructions (fp8_accumulator_probe.h), on both targets that
// multiply fp8 on the tensor cores: mma.sync on sm_89, wgmma on sm_90a. sm_80 multiplies fp8
// on the CUDA cores in f32, so its probe gives the exact sums.
TEST(TensorCoreNumerics, Fp8InstructionsCutEachAddendTo13FractionBitsOfTheLargest) {
  for (const char* arch : {"sm_89", "sm_90a"}) {
    SCOPED_TRACE(arch);
    expect_fp8_accumulator_model(fp8_accumulator_probe(arch, Device::by_name(std::string("emu:") + arch)));
  }
  std::vector<LD> on_cuda_cores = fp8_accumulator_probe("sm_80", Device::by_name("emu:sm_80"));
  EXPECT_EQ(on_cuda_cores[0], 1 + std::ldexp(1.0L, -13));                 // row 0, group 0
  EXPECT_EQ(on_cuda_cores[64 + 32], -(1 + 3 * std::ldexp(1.0L, -14)));    // row 1, group 2
  EXPECT_EQ(on_cuda_cores[48], 1 - std::ldexp(1.0L, -14));                // row 0, group 3
}

}  // namespace
}  // namespace tjops
