// Loop boundaries: a loop that carries an online softmax's running row max and row sum over
// a dot's logits keeps them in the rows of the dot's accumulator, and the row max broadcast
// back over the logits stays there too, so an iteration moves no data between threads but
// through the warp shuffles of its row reductions, nor does one that adds a bias tile, selects
// by a mask tile and subtracts a row offset (loaded in the logits' layout); a wgmma operand
// computed before the loop is stored to shared memory once, not at every iteration; a
// computed row statistic broadcast over a product moves as a column, not as the product's
// whole tile, and two loaded tiles added to a product are loaded in its layout; a product of
// two broadcasts is formed in the layout of the tile it meets, and an if / else's result stays
// in the layout its branch yields; a vector computed once per element moves to the layout of
// the product it scales; a loop carries a 16-bit tile two elements to a word; a load of
// broadcast pointers that feeds a dot, there or in the next iteration, loads in the operand's
// layout; an 8-bit B read transposed beside another product has its own tile per ring slot;
// no barrier guards the scratch space where one has passed since its last reader.
#include <gtest/gtest.h>

#include "codegen/compiler.h"
#include "ptx_text.h"
#include "ptxas_check.h"
#include "tests/loop_kernels.h"
#include "tests/tensor_core_gemm.h"

namespace tilejit::codegen {
namespace {

// The PTX of the kernel's one loop: from the label of the block that holds its first
// instruction `first` to the branch back to it.
std::string loop_body(const std::string& ptx, const std::string& first) {
  size_t at = ptx.find(first);
  size_t label = ptx.rfind("\n$L__", at);
  if (at == std::string::npos || label == std::string::npos) return "";
  std::string name = ptx.substr(label + 1, ptx.find(':', label) - label - 1);
  size_t back = ptx.find("bra \t" + name + ";", at);
  return back == std::string::npos ? "" : ptx.substr(label, back - label);
}

// `kernel` with its default constants and aligned arguments, compiled for `arch`; ptxas must
// assemble it without spills.
CompiledKernel compiled(const dsl::Kernel& kernel, const char* arch) {
  auto fn = kernel.trace(kernel.constants(), kernel.aligned_facts());
  CompiledKernel k = compile_to_ptx(*fn, find_target(arch));
  expect_ptxas_accepts(k, true);
  return k;
}

TEST(CarriedLayout, AnOnlineSoftmaxKeepsItsRowStatisticsInTheAccumulatorRows) {
  // 4 warps over 64 rows: each warp holds whole rows of the logits (mma.sync's warps along
  // M on sm_80, one warpgroup on sm_90a), so the row reductions need no shared memory. An
  // iteration's only barriers are the two around its dot's operand tiles in shared memory:
  // on sm_80 q's (two 16-byte stores per thread) and k's (one of 8 bytes); on sm_90a k's
  // only, as q, computed before the loop, is stored once before it for every iteration's
  // wgmma.
  dsl::Kernel kernel = testing_kernels::online_softmax_kernel();
  for (const char* arch : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(arch);
    CompiledKernel k = compiled(kernel, arch);
    const bool hopper = std::string(arch) == "sm_90a";
    std::string body = loop_body(k.ptx, hopper ? "wgmma.fence" : "mma.sync");
    ASSERT_FALSE(body.empty()) << k.ptx;
    EXPECT_EQ(count(body, "bar.sync"), 2u) << body;
    EXPECT_EQ(count(body, "st.shared"), hopper ? 1u : 3u) << body;
    // The max and the sum over the 4 lanes that share a row: 2 steps each, for each of a
    // thread's two rows.
    EXPECT_EQ(count(body, "shfl.sync.bfly"), 2u * 2u * 2u);
  }
}

TEST(CarriedLayout, ARescaleFromTheCarriedMaxAloneKeepsTheRowSumInTheAccumulatorRows) {
  // The row sum's factor exp2(m_before * c - m * c): the layout l is carried in is predicted
  // past its first operand, computed from the carried max alone, so l lives in the rows as in
  // the plain online softmax, and the loop moves nothing more through shared memory.
  dsl::Kernel plain = testing_kernels::online_softmax_kernel(), shifted = testing_kernels::online_softmax_kernel(true);
  for (const char* arch : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(arch);
    const char* first = std::string(arch) == "sm_90a" ? "wgmma.fence" : "mma.sync";
    std::string expected = loop_body(compiled(plain, arch).ptx, first);
    std::string body = loop_body(compiled(shifted, arch).ptx, first);
    ASSERT_FALSE(body.empty());
    EXPECT_EQ(count(body, "bar.sync"), count(expected, "bar.sync")) << body;
    EXPECT_EQ(count(body, "st.shared"), count(expected, "st.shared")) << body;
    EXPECT_EQ(count(body, "ld.shared"), count(expected, "ld.shared")) << body;
  }
}

TEST(LoadLayout, ABiasAMaskAndARowOffsetAreLoadedInTheLogitsLayout) {
  // The online softmax of the test above over where(mask, logits + bias, -10) - offset: the
  // bias and mask tiles (loaded each iteration) and the row offset (loaded before the loop,
  // broadcast over each iteration's logits) are loaded where the logits live, so the loop
  // has the plain online softmax's barriers and shared stores, and no others.
  dsl::Kernel plain = testing_kernels::online_softmax_kernel(), biased = testing_kernels::biased_softmax_kernel();
  for (const char* arch : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(arch);
    const bool hopper = std::string(arch) == "sm_90a";
    auto loop_of = [&](const dsl::Kernel& kernel) {
      return loop_body(compiled(kernel, arch).ptx, hopper ? "wgmma.fence" : "mma.sync");
    };
    std::string expected = loop_of(plain), body = loop_of(biased);
    ASSERT_FALSE(body.empty());
    EXPECT_EQ(count(body, "bar.sync"), count(expected, "bar.sync")) << body;
    EXPECT_EQ(count(body, "st.shared"), count(expected, "st.shared")) << body;
    EXPECT_EQ(count(body, "ld.shared"), count(expected, "ld.shared")) << body;
  }
}

TEST(BroadcastLayout, AComputedColumnMovesBeforeItIsBroadcast) {
  // y's row sums live in the rows of the blocked layout, the product in the tensor cores'
  // layout: the sums move to the product's rows (256 bytes through shared memory) and are
  // broadcast there, instead of being broadcast to a (64, 128) f32 tile that then moves
  // (32 KiB). The kernel's shared memory is then its dot operands' and reductions' only.
  dsl::Kernel kernel = testing_kernels::tiles_plus_product_kernel(false);
  for (const char* arch : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(arch);
    EXPECT_LT(compiled(kernel, arch).shared_bytes, 64 * 128 * 4);
  }
}

TEST(LoadLayout, TwoLoadedTilesThatMeetFirstAreLoadedInTheProductsLayout) {
  // y + z, added to the product: each load follows its users past the other (which would
  // answer the blocked layout) to the product, so no (64, 128) f32 tile moves (32 KiB).
  dsl::Kernel kernel = testing_kernels::tiles_plus_product_kernel(true);
  for (const char* arch : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(arch);
    EXPECT_LT(compiled(kernel, arch).shared_bytes, 64 * 128 * 4);
  }
}

TEST(BroadcastLayout, AProductOfTwoBroadcastsIsFormedInTheLayoutOfTheTileItMeets) {
  // product * (row_scale * col_scale): the (BLOCK_M, N) factor of two broadcasts is formed in
  // the product's layout (the scales loaded in its rows and columns), as product * row_scale *
  // col_scale is, instead of in the blocked layout and then moved (32 KiB through shared
  // memory). Both kernels use the same shared memory: the dot's operands and the output's
  // store.
  for (const char* arch : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(arch);
    CompiledKernel factor = compiled(testing_kernels::scaled_product_kernel(false), arch);
    CompiledKernel scales = compiled(testing_kernels::scaled_product_kernel(true), arch);
    EXPECT_EQ(factor.shared_bytes, scales.shared_bytes);
    EXPECT_EQ(count(factor.ptx, "bar.sync"), count(scales.ptx, "bar.sync"));
  }
}

TEST(BranchLayout, AnIfElsesResultStaysInTheLayoutItsBranchYields) {
  // A product through an if / else keeps the tensor cores' layout at the join: the kernel moves
  // no more through shared memory than the same product stored without the branch.
  for (const char* arch : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(arch);
    CompiledKernel branch = compiled(testing_kernels::branch_on_product_kernel(true), arch);
    CompiledKernel straight = compiled(testing_kernels::branch_on_product_kernel(false), arch);
    EXPECT_EQ(branch.shared_bytes, straight.shared_bytes);
    EXPECT_EQ(count(branch.ptx, "bar.sync"), count(straight.ptx, "bar.sync"));
  }
}

TEST(InvariantOperands, AWgmmaOperandComputedBeforeTheLoopIsStoredOnce) {
  // w, loaded before the loop and read by every iteration's dot as trans(w) (B held (N, K)):
  // on sm_90a the loop stores only its own x tile (two 16-byte stores per thread), between
  // the two barriers; w is stored once, before the loop.
  CompiledKernel k = compiled(testing_kernels::invariant_weight_kernel(), "sm_90a");
  std::string body = loop_body(k.ptx, "wgmma.fence");
  ASSERT_FALSE(body.empty()) << k.ptx;
  EXPECT_EQ(count(body, "bar.sync"), 2u) << body;
  EXPECT_EQ(count(body, "st.shared"), 2u) << body;
  std::string before = k.ptx.substr(0, k.ptx.find(body));
  EXPECT_EQ(count(before, "st.shared"), 1u) << "w's one store (16 x 32 bf16: 8 bytes per thread)\n" << before;
}

TEST(BroadcastLayout, AVectorComputedOncePerElementMovesToTheProductsLayout) {
  // Each of the 128 threads holds 32 of the product's 128 columns. Decoded where the product
  // lives, each thread shifts its 32 scale bytes; with once_per_element each thread decodes one
  // and the scales move to the product's layout through shared memory.
  CompiledKernel in_place = compiled(testing_kernels::column_scaled_product_kernel(false), "sm_90a");
  CompiledKernel once = compiled(testing_kernels::column_scaled_product_kernel(true), "sm_90a");
  EXPECT_EQ(count(once.ptx, ", 23;"), 1u) << once.ptx;
  EXPECT_GE(count(in_place.ptx, ", 23;"), 16u) << in_place.ptx;
  EXPECT_GT(count(once.ptx, "ld.shared"), count(in_place.ptx, "ld.shared"));
  // One move, straight to the product's layout (two barriers), not first to the default layout
  // where the broadcast would have been formed.
  EXPECT_EQ(count(once.ptx, "bar.sync"), count(in_place.ptx, "bar.sync") + 2) << once.ptx;
}

TEST(LoadLayout, BroadcastPointersFeedingADotLoadWhereTheInstructionsTakeTheOperand) {
  // Each thread loads the scale bytes of the rows (columns) its fragment registers hold: on
  // sm_80 neither operand passes through shared memory; on sm_90a A is read from registers
  // and only B is stored for the wgmma, nothing read back. (The product's store to `out`
  // passes through shared memory after the dot.)
  dsl::Kernel kernel = testing_kernels::rank_one_factor_kernel();
  CompiledKernel ampere = compiled(kernel, "sm_80");
  std::string operands = ampere.ptx.substr(0, ampere.ptx.find("mma.sync"));
  EXPECT_EQ(count(operands, "st.shared") + count(operands, "ld.shared"), 0u) << ampere.ptx;
  CompiledKernel hopper = compiled(kernel, "sm_90a");
  operands = hopper.ptx.substr(0, hopper.ptx.find("wgmma.mma_async"));
  EXPECT_EQ(count(operands, "ld.shared"), 0u) << hopper.ptx;
  EXPECT_GT(count(operands, "st.shared"), 0u) << hopper.ptx;
}

TEST(LoadLayout, ALoadCarriedIntoTheNextIterationsDotTakesTheOperandsLayout) {
  // The next step's bytes, loaded and carried across the back edge, are loaded where the next
  // iteration's mma.sync fragments hold them: the loop moves nothing through shared memory.
  CompiledKernel k = compiled(testing_kernels::prefetched_rank_one_factors_kernel(), "sm_80");
  std::string body = loop_body(k.ptx, "mma.sync");
  ASSERT_FALSE(body.empty()) << k.ptx;
  EXPECT_EQ(count(body, "st.shared") + count(body, "ld.shared"), 0u) << body;
}

TEST(TransposedTiles, AnEightBitBBesideAnotherProductGoesToItsRingSlotsOwnTile) {
  // The factor's B (stored by the threads) takes the scratch space; w, staged as given, is
  // stored transposed into its ring slot's own tile, with no wait for the factor's group
  // (which reads the scratch space) and no barrier before: both products run together and
  // complete at one wait.
  CompiledKernel k = compiled(testing_kernels::two_products_kernel(), "sm_90a");
  std::string body = loop_body(k.ptx, "wgmma.fence");
  ASSERT_FALSE(body.empty()) << k.ptx;
  ASSERT_EQ(count(body, "wgmma.mma_async"), 2u) << body;
  size_t second = body.find("wgmma.mma_async", body.find("wgmma.mma_async") + 1);
  EXPECT_EQ(count(body.substr(0, second), "wgmma.wait_group"), 0u) << body;
  EXPECT_EQ(count(body, "wgmma.wait_group"), 1u) << body;
}

TEST(ScratchBarriers, NoneBeforeAStoreWhenTheRingsBarrierHasPassedSinceTheLastReader) {
  // An 8-bit B given (K, N) read by a wgmma that does not stay in flight (2 stages) is stored
  // transposed into the scratch space at each step. The last reader of that space, the previous
  // step's wgmma, completed before the step's ring barrier, and nothing used the space since:
  // the loop's barriers are the ring's and the one that publishes the store.
  dsl::Kernel kernel = testing_kernels::tensor_core_gemm<DType::f8e4m3, DType::f8e4m3>();
  auto fn = kernel.trace(kernel.constants({{"num_stages", 2}}), kernel.aligned_facts());
  CompiledKernel k = compile_to_ptx(*fn, find_target("sm_90a"));
  std::string body = loop_body(k.ptx, "wgmma.fence");
  ASSERT_FALSE(body.empty()) << k.ptx;
  EXPECT_EQ(count(body, "wgmma.wait_group.sync.aligned 0;"), 1u) << body;
  EXPECT_EQ(count(body, "bar.sync"), 2u) << body;
  expect_ptxas_accepts(k, true);
}

TEST(ProxyFences, AStepFencesItsCopiesOnceWithTheFirstOperandStoredForItsDot) {
  // A step's cp.async copies reach wgmma (the async proxy) after each copying thread's
  // fence.proxy.async and a barrier. With an 8-bit B given (K, N), stored transposed into the
  // scratch space before the step's wgmma with a fence and a barrier, that fence covers the
  // copies of A as well: one fence a step, after the ring's barrier. A bf16 product reads both
  // operands from the ring as they lie: its fence comes before the ring's barrier. (The
  // emulator's wgmma faults on an operand word written through the generic proxy and not
  // fenced since; the tensor-core tests run both kernels there.)
  auto step_of = [](dsl::Kernel kernel) {
    auto fn = kernel.trace(kernel.constants({{"num_stages", 2}}), kernel.aligned_facts());
    CompiledKernel k = compile_to_ptx(*fn, find_target("sm_90a"));
    expect_ptxas_accepts(k, true);
    return loop_body(k.ptx, "wgmma.fence");
  };
  const std::string fp8 = step_of(testing_kernels::tensor_core_gemm<DType::f8e4m3, DType::f8e4m3>());
  ASSERT_FALSE(fp8.empty());
  EXPECT_EQ(count(fp8, "fence.proxy.async"), 1u) << fp8;
  EXPECT_LT(fp8.find("bar.sync"), fp8.find("fence.proxy.async")) << fp8;
  const std::string bf16 = step_of(testing_kernels::tensor_core_gemm<DType::bf16, DType::bf16>());
  ASSERT_FALSE(bf16.empty());
  EXPECT_EQ(count(bf16, "fence.proxy.async"), 1u) << bf16;
  EXPECT_LT(bf16.find("fence.proxy.async"), bf16.find("bar.sync")) << bf16;
}

TEST(CarriedTiles, SixteenBitTilesCrossTheBackEdgeTwoToAWord) {
  // A (64, 64) bf16 tile on 4 warps, 32 elements per thread: 16 phis of i32 words, none of
  // bfloat (the loop's index is the 17th i32 phi).
  dsl::Kernel kernel = testing_kernels::doubled_in_a_loop_kernel();
  auto fn = kernel.trace(kernel.constants(), kernel.aligned_facts());
  for (const char* arch : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(arch);
    std::string ir = lower_to_llvm_text(*fn, find_target(arch));
    EXPECT_EQ(count(ir, "phi bfloat"), 0u) << ir;
    EXPECT_EQ(count(ir, "phi i32"), 17u) << ir;
  }
}

}  // namespace
}  // namespace tilejit::codegen
