// Tensor descriptors as PTX: on sm_90a the blocks a pipelined dot reads arrive by TMA
// (cp.async.bulk.tensor completing on one mbarrier per ring slot), the tensor maps are
// grid-constant parameters, and ptxas accepts the kernel without spills or serialized wgmma;
// on sm_80 the same kernel reads the blocks with global loads and has no TMA at all.
#include <gtest/gtest.h>

#include "ptx_text.h"
#include "ptxas_check.h"
#include "tests/tensor_core_gemm.h"

namespace tilejit::codegen {
namespace {

CompiledKernel compile_desc_gemm(const char* arch, int stages) {
  dsl::Kernel kernel = testing_kernels::tensor_core_gemm_desc<DType::bf16, DType::bf16>();
  std::vector<ir::ArgFacts> facts = kernel.aligned_facts();
  facts[0].block = {128, 64};   // A: 128-byte rows, one box
  facts[1].block = {64, 128};   // B (K, N): 256-byte rows, two boxes
  auto fn = kernel.trace(kernel.constants({{"num_warps", 8}, {"num_stages", stages}}), facts);
  return compile_to_ptx(*fn, find_target(arch));
}

TEST(TmaCompile, DescriptorBlocksArriveByTmaOnSm90a) {
  CompiledKernel k = compile_desc_gemm("sm_90a", 4);
  EXPECT_EQ(count(k.ptx, ".param .align 64 .b8"), 2u) << "one tensor map per descriptor";
  // wgmma stays in flight: the prologue issues 2 K steps, the loop one; 3 boxes per step.
  EXPECT_EQ(count(k.ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"), 9u);
  EXPECT_EQ(count(k.ptx, "mbarrier.arrive.expect_tx"), 3u);
  EXPECT_GE(count(k.ptx, "mbarrier.try_wait.parity"), 1u);
  EXPECT_EQ(count(k.ptx, "cp.async.cg"), 0u) << "no per-thread copies";
  EXPECT_EQ(count(k.ptx, "wgmma.wait_group.sync.aligned 1;"), 1u);
  EXPECT_GE(k.shared_bytes, 4 * (128 * 64 + 64 * 128) * 2);
  expect_ptxas_accepts(k, true);
}

TEST(TmaCompile, Sm80ReadsDescriptorBlocksWithoutTma) {
  CompiledKernel k = compile_desc_gemm("sm_80", 3);
  EXPECT_EQ(count(k.ptx, "cp.async.bulk"), 0u);
  EXPECT_EQ(count(k.ptx, "mbarrier"), 0u);
  EXPECT_GE(count(k.ptx, "ld.global"), 1u);
  expect_ptxas_accepts(k, false);
}

// An 8-bit B block given (K, N), which wgmma takes K-major only: both blocks arrive by TMA
// into their rings (one step in the prologue, one per iteration: 4 copies), and B's is read
// at each step in (4, 4) blocks per thread and stored transposed, 4 bytes at a time: 64 x 128
// bytes over 256 threads, 8 stores each, into its ring slot's own tile, so that with 3 stages
// the dot stays in flight.
TEST(TmaCompile, AnEightBitBGivenKByNIsStoredTransposedForWgmma) {
  dsl::Kernel kernel = testing_kernels::tensor_core_gemm_desc<DType::f8e4m3, DType::f8e4m3>();
  std::vector<ir::ArgFacts> facts = kernel.aligned_facts();
  facts[0].block = {128, 64};  // A: 64-byte rows
  facts[1].block = {64, 128};  // B (K, N): 128-byte rows
  for (int stages : {2, 3}) {
    SCOPED_TRACE(stages);
    auto fn = kernel.trace(kernel.constants({{"num_warps", 8}, {"num_stages", stages}}), facts);
    CompiledKernel k = compile_to_ptx(*fn, find_target("sm_90a"));
    EXPECT_EQ(count(k.ptx, "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 "), 2u);
    EXPECT_EQ(count(k.ptx, "mma.sync"), 0u);
    EXPECT_EQ(count(k.ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"), 4u);
    EXPECT_EQ(count(k.ptx, "st.shared.b8"), 0u);
    EXPECT_EQ(count(k.ptx, "st.shared.b32"), 8u);
    // With 3 stages the dot stays in flight: the tile it reads is its ring slot's own.
    EXPECT_EQ(count(k.ptx, "wgmma.wait_group.sync.aligned 1;"), stages == 3 ? 1u : 0u);
    expect_ptxas_accepts(k, true);
  }
}

// A block copied from one descriptor to another: in by TMA onto an mbarrier, out through the
// scratch space by a TMA store in a bulk async-group; in clusters of two sharing the source's
// blocks, in row slices. ptxas accepts both.
TEST(TmaCompile, BlocksLeaveByTmaStoresOnSm90a) {
  using namespace tilejit::dsl;
  for (int64_t cluster : {1, 2}) {
    SCOPED_TRACE(cluster);
    dsl::Kernel kernel = define_kernel(
        "desc_round_trip", {"src", "dst"}, {{"cluster_x", 1}},
        [](const Constants& c, TensorDesc<DType::bf16> src, TensorDesc<DType::bf16> dst) {
          Tile row = program_id(0) / c["cluster_x"] * 64;
          desc_store(dst, {program_id(0) * 64, 0}, desc_load(src, {row, 0}, ClusterShared{0}) * 2.0);
        });
    std::vector<ir::ArgFacts> facts = kernel.aligned_facts();
    facts[0].block = facts[1].block = {64, 128};  // 256-byte rows: two boxes a block
    auto fn = kernel.trace(kernel.constants({{"cluster_x", cluster}}), facts);
    CompiledKernel k = compile_to_ptx(*fn, find_target("sm_90a"));
    EXPECT_EQ(count(k.ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"),
              size_t(2 * cluster));
    EXPECT_EQ(count(k.ptx, "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group"), 2u);
    EXPECT_EQ(count(k.ptx, "cp.async.bulk.commit_group"), 1u);
    EXPECT_EQ(count(k.ptx, "cp.async.bulk.wait_group.read"), 1u);
    EXPECT_EQ(count(k.ptx, ".reqnctapercluster 2, 1, 1"), cluster == 2 ? 1u : 0u);
    expect_ptxas_accepts(k, false);
  }
}

}  // namespace
}  // namespace tilejit::codegen
