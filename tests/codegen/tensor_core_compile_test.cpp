// The tensor-core lowering as PTX: the GEMM of every operand pairing uses the instruction the
// target's tensor cores have for it: wgmma.mma_async on sm_90a (tf32 aside; an 8-bit B given
// (K, N) stored transposed), mma.sync with operands loaded by ldmatrix otherwise (or none: fp8 on sm_80, ieee
// f32); ptxas accepts it for sm_80, sm_89 and sm_90a, and the default tile spills nothing on
// the tensor cores.
#include <gtest/gtest.h>

#include "codegen/mma_layout.h"
#include "codegen/wgmma_layout.h"
#include "ptx_text.h"
#include "ptxas_check.h"
#include "tests/tensor_core_gemm.h"

namespace tilejit::codegen {
namespace {

struct Case {
  DType a, b;
  int precision;  // 0 tf32, 1 ieee, 2 tf32x3
  dsl::Kernel (*kernel)();
};

template <DType A, DType B>
dsl::Kernel gemm() {
  return testing_kernels::tensor_core_gemm<A, B>();
}

const Case kCases[] = {
    {DType::f16, DType::f16, 0, gemm<DType::f16, DType::f16>},
    {DType::bf16, DType::bf16, 0, gemm<DType::bf16, DType::bf16>},
    {DType::f32, DType::f32, 0, gemm<DType::f32, DType::f32>},
    {DType::f32, DType::f32, 1, gemm<DType::f32, DType::f32>},
    {DType::f32, DType::f32, 2, gemm<DType::f32, DType::f32>},
    {DType::i8, DType::i8, 0, gemm<DType::i8, DType::i8>},
    {DType::f8e4m3, DType::f8e4m3, 0, gemm<DType::f8e4m3, DType::f8e4m3>},
    {DType::f8e4m3, DType::f8e5m2, 0, gemm<DType::f8e4m3, DType::f8e5m2>},
    {DType::f8e5m2, DType::f8e4m3, 0, gemm<DType::f8e5m2, DType::f8e4m3>},
    {DType::f8e5m2, DType::f8e5m2, 0, gemm<DType::f8e5m2, DType::f8e5m2>},
};

TEST(TensorCoreCompile, EveryPairingUsesItsInstructionAndAssemblesWithoutSpills) {
  for (const Case& c : kCases)
    for (const char* arch : {"sm_80", "sm_89", "sm_90a"}) {
      dsl::Kernel kernel = c.kernel();
      SCOPED_TRACE(kernel.name() + " precision " + std::to_string(c.precision) + " " + arch);
      auto fn = kernel.trace(kernel.constants({{"PRECISION", c.precision}}), kernel.aligned_facts());
      CompiledKernel k = compile_to_ptx(*fn, find_target(arch));
      auto instr = select_mma(c.a, c.b, find_target(arch));
      bool tensor_cores = instr && c.precision != 1;
      // B is given (K, N): MN-major, which wgmma reads for 16-bit elements; an 8-bit B is
      // stored transposed, (N, K), K-major.
      bool eight_bit = instr && instr->element_bits == 8;
      auto warpgroup = wgmma_tiling(c.a, c.b, 64, 64, 32, 4, WgmmaA::k_major, !eight_bit, find_target(arch));
      EXPECT_EQ(warpgroup.has_value(), std::string(arch) == "sm_90a" && instr && instr->element_bits != 32);
      if (warpgroup) {
        // One m64n64k16 (k32 for 8-bit) per K step, both operands through descriptors: no
        // ldmatrix.
        EXPECT_EQ(count(k.ptx, warpgroup->instr.ptx_name() + " "), size_t(32 / warpgroup->instr.k));
        // The transposing store of an 8-bit B, loaded as a (4, 4) block per thread: 32 x 64
        // bytes over 128 threads, 4 bytes of a row of the (N, K) tile at a time.
        EXPECT_EQ(count(k.ptx, "st.shared.b8"), 0u);
        EXPECT_EQ(count(k.ptx, "st.shared.b32"), eight_bit ? 4u : 0u);
        EXPECT_EQ(count(k.ptx, "wgmma.fence.sync.aligned"), 1u);
        EXPECT_EQ(count(k.ptx, "wgmma.commit_group.sync.aligned"), 1u);
        EXPECT_EQ(count(k.ptx, "wgmma.wait_group.sync.aligned 0"), 1u);
        EXPECT_EQ(count(k.ptx, "fence.proxy.async.shared::cta"), 1u) << "stores made visible to the async proxy";
        EXPECT_EQ(count(k.ptx, "ldmatrix"), 0u);
        EXPECT_EQ(count(k.ptx, "mma.sync"), 0u);
      } else if (tensor_cores) {
        // 64x64x32 on 4 warps: each warp computes 32x32, 2 x 4 instructions per K step.
        size_t per_k_step = 2 * 4 * static_cast<size_t>(32 / instr->k) * (c.precision == 2 ? 3 : 1);
        EXPECT_EQ(count(k.ptx, instr->ptx_name()), per_k_step);
        // Operands staged in shared memory come back through ldmatrix: A as 2 x (32 / k)
        // x4 loads for 16- and 8-bit elements, B as (32 / k) x 2 transposing x4 loads for
        // 16-bit elements.
        size_t a_loads = instr->element_bits == 32 ? 0 : 2 * static_cast<size_t>(32 / instr->k);
        size_t b_loads = instr->element_bits == 16 ? 2 * static_cast<size_t>(32 / instr->k) : 0;
        EXPECT_EQ(count(k.ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"), a_loads);
        EXPECT_EQ(count(k.ptx, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"), b_loads);
      } else {
        EXPECT_EQ(count(k.ptx, "mma.sync"), 0u);
      }
      // The CUDA-core fallback holds whole K rows per thread: this tile is not its default.
      expect_ptxas_accepts(k, tensor_cores);
    }
}

TEST(TensorCoreCompile, PipelinedOperandsAreCopiedAsynchronously) {
  // 3 stages: the prologue issues two K steps, each iteration waits until one group is
  // pending and issues one more. 64x32 A and 32x64 B tiles of 16-bit elements are 256
  // 16-byte rows each, two per thread of 4 warps: 4 copies per K step. The loads that
  // qualify (pointer and mask from the induction variable, zero where masked) are tiles
  // whose rows are aligned: M, N, K multiples of 16. A wgmma dot stays in flight across
  // iterations, which holds one slot more: one prologue step, no copy group pending.
  for (const Case& c : kCases) {
    if (c.precision != 0 || c.a == DType::f32) continue;  // tf32 operands go through registers
    for (const char* arch : {"sm_80", "sm_89", "sm_90a"}) {
      dsl::Kernel kernel = c.kernel();
      SCOPED_TRACE(kernel.name() + " " + arch);
      auto fn = kernel.trace(kernel.constants({{"num_stages", 3}}), kernel.aligned_facts());
      CompiledKernel k = compile_to_ptx(*fn, find_target(arch));
      auto instr = select_mma(c.a, c.b, find_target(arch));
      if (!instr) {
        EXPECT_EQ(count(k.ptx, "cp.async"), 0u) << "no tensor cores, no pipeline";
        continue;
      }
      // 8-bit B operands given (K, N) reach mma.sync through registers: only A is staged; wgmma
      // stages them as given and stores them transposed at each step, into the ring slot's own
      // (N, K) tile.
      int64_t element_bytes = instr->element_bits / 8;
      bool sm90a = std::string(arch) == "sm_90a";
      int64_t staged_bytes = 64 * 32 * element_bytes * (element_bytes == 2 || sm90a ? 2 : 1);
      size_t copies_per_step = static_cast<size_t>(staged_bytes / 16 / 128);
      // A wgmma dot stays in flight when both operands are staged (an 8-bit B too: no other
      // iteration's group reads the tile it is stored transposed into).
      bool warpgroup = count(k.ptx, "wgmma.mma_async") > 0;
      EXPECT_EQ(warpgroup, sm90a);
      bool in_flight = warpgroup;
      size_t prologue_steps = in_flight ? 1 : 2;
      EXPECT_EQ(count(k.ptx, "cp.async.cg.shared.global"), (prologue_steps + 1) * copies_per_step)
          << "the prologue's steps, one in the loop";
      EXPECT_EQ(count(k.ptx, "cp.async.commit_group"), prologue_steps + 1);
      EXPECT_EQ(count(k.ptx, in_flight ? "cp.async.wait_group \t0;" : "cp.async.wait_group \t1;"), 1u);
      EXPECT_EQ(count(k.ptx, "cp.async.wait_all"), 1u);
      if (in_flight) {
        EXPECT_EQ(count(k.ptx, "wgmma.wait_group.sync.aligned 1;"), 1u) << "in the loop: the previous iteration's group";
        EXPECT_EQ(count(k.ptx, "wgmma.wait_group.sync.aligned 0;"), 1u) << "after the loop: the last group";
      }
      EXPECT_GE(k.shared_bytes, 3 * staged_bytes);
      expect_ptxas_accepts(k, true);
    }
  }
}

// The wgmma lines of `ptx` that take A from registers: D's list, then A's four words.
size_t register_a_wgmmas(const std::string& ptx) {
  size_t n = 0;
  for (size_t at = ptx.find("wgmma.mma_async"); at != std::string::npos; at = ptx.find("wgmma.mma_async", at + 1)) {
    std::string line = ptx.substr(at, ptx.find(';', at) - at);
    size_t a = line.find("}, {");
    if (a != std::string::npos && line.find("%r", a) == a + 4) ++n;
  }
  return n;
}

TEST(TensorCoreCompile, AnOperandComputedInRegistersIsReadFromThemByWgmma) {
  // A computed in registers (cast there and back) on sm_90a: wgmma's register form, one
  // m64n64 per K step (two of 16 for 16-bit elements, one of 32 for 8-bit ones), B alone
  // stored to shared memory; no mma.sync, no ldmatrix. B as (N, K): K-major, as 8-bit B
  // must be.
  for (const Case& c : kCases) {
    if (c.a == DType::f32) continue;  // tf32 stays with mma.sync
    dsl::Kernel kernel = c.kernel();
    SCOPED_TRACE(kernel.name());
    auto fn = kernel.trace(kernel.constants({{"A_COMPUTED", 1}, {"B_TRANSPOSED", 1}}), kernel.aligned_facts());
    CompiledKernel k = compile_to_ptx(*fn, find_target("sm_90a"));
    auto instr = select_mma(c.a, c.b, find_target("sm_90a"));
    ASSERT_TRUE(instr);
    size_t steps = static_cast<size_t>(32 / instr->k);
    EXPECT_EQ(count(k.ptx, "wgmma.mma_async"), steps);
    EXPECT_EQ(register_a_wgmmas(k.ptx), steps);
    EXPECT_EQ(count(k.ptx, "fence.proxy.async.shared::cta"), 1u) << "B's store made visible to the async proxy";
    EXPECT_EQ(count(k.ptx, "mma.sync"), 0u);
    EXPECT_EQ(count(k.ptx, "ldmatrix"), 0u);
    expect_ptxas_accepts(k, true);
  }
}

TEST(TensorCoreCompile, AnOperandConvertedOnItsWayToTheDotIsStagedAndReadBack) {
  // A cast there and back before the dot: its loop pipeline copies it by cp.async like B, and
  // each step reads the slot's tile into registers; no global load is left in the kernel.
  dsl::Kernel kernel = testing_kernels::tensor_core_gemm<DType::bf16, DType::bf16>();
  for (const char* arch : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(arch);
    auto fn = kernel.trace(kernel.constants({{"A_COMPUTED", 1}, {"num_stages", 3}}), kernel.aligned_facts());
    CompiledKernel k = compile_to_ptx(*fn, find_target(arch));
    EXPECT_EQ(count(k.ptx, "ld.global"), 0u) << k.ptx;
    EXPECT_GT(count(k.ptx, "cp.async.cg.shared.global"), 0u) << k.ptx;
    expect_ptxas_accepts(k, true);
  }
}

TEST(TensorCoreCompile, AConvertedOperandWithRowsNarrowerThanAChunkIsNotStaged) {
  // B (32, 8) int8 widened to bf16: 8-byte rows, which a staged tile's 16-byte swizzle chunks
  // cannot hold; A (16, 32) bf16 widened from int8 too, 32-byte rows: staged and read back.
  using namespace tilejit::dsl;
  dsl::Kernel kernel = define_kernel(
      "narrow_converted_b", {"a", "b", "c", "k"}, {{"num_warps", 1}, {"num_stages", 2}},
      [](const Constants&, Ptr<i8> a, Ptr<i8> b, Ptr<f32> c, Scalar<i32> k) {
        Tile rows = arange(0, 16), cols = arange(0, 8), ks = arange(0, 32);
        Tile acc = for_range(0, k, 32, zeros({16, 8}, DType::f32), [&](Tile kk, Tile acc) {
          Tile a_tile = cast(load(a + expand_dims(rows, 1) * k + expand_dims(ks + kk, 0)), DType::bf16);
          Tile b_tile = cast(load(b + expand_dims(ks + kk, 1) * 8 + expand_dims(cols, 0)), DType::bf16);
          return dot(a_tile, b_tile, acc);
        });
        store(c + expand_dims(rows, 1) * 8 + expand_dims(cols, 0), acc);
      });
  auto fn = kernel.trace(kernel.constants(), kernel.aligned_facts());
  CompiledKernel k = compile_to_ptx(*fn, find_target("sm_80"));
  // A's 512 bytes are one 16-byte copy per thread and step: the prologue's step and the loop's.
  EXPECT_EQ(count(k.ptx, "cp.async.cg.shared.global"), 2u) << k.ptx;
  EXPECT_EQ(count(k.ptx, "cp.async.ca.shared.global"), 0u) << k.ptx;
  EXPECT_GT(count(k.ptx, "ld.global"), 0u) << "B loaded in the loop" << k.ptx;
  expect_ptxas_accepts(k, true);
}

}  // namespace
}  // namespace tilejit::codegen
