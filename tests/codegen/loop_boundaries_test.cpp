// Loop boundaries: a loop that carries an online softmax's running row max and row sum over
// a dot's logits keeps them in the rows of the dot's accumulator, and the row max broadcast
// back over the logits stays there too, so an iteration moves no data between threads but
// through the warp shuffles of its row reductions; a wgmma operand computed before the loop
// is stored to shared memory once, not at every iteration.
#include <gtest/gtest.h>

#include "codegen/compiler.h"
#include "ptx_text.h"
#include "ptxas_check.h"
#include "tests/loop_kernels.h"

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
    auto fn = kernel.trace(kernel.constants(), kernel.aligned_facts());
    CompiledKernel k = compile_to_ptx(*fn, find_target(arch));
    const bool hopper = std::string(arch) == "sm_90a";
    std::string body = loop_body(k.ptx, hopper ? "wgmma.fence" : "mma.sync");
    ASSERT_FALSE(body.empty()) << k.ptx;
    EXPECT_EQ(count(body, "bar.sync"), 2u) << body;
    EXPECT_EQ(count(body, "st.shared"), hopper ? 1u : 3u) << body;
    // The max and the sum over the 4 lanes that share a row: 2 steps each, for each of a
    // thread's two rows.
    EXPECT_EQ(count(body, "shfl.sync.bfly"), 2u * 2u * 2u);
    expect_ptxas_accepts(k, true);
  }
}

TEST(InvariantOperands, AWgmmaOperandComputedBeforeTheLoopIsStoredOnce) {
  // w, loaded before the loop and read by every iteration's dot as trans(w) (B held (N, K)):
  // on sm_90a the loop stores only its own x tile (two 16-byte stores per thread), between
  // the two barriers; w is stored once, before the loop.
  dsl::Kernel kernel = testing_kernels::invariant_weight_kernel();
  auto fn = kernel.trace(kernel.constants(), kernel.aligned_facts());
  CompiledKernel k = compile_to_ptx(*fn, find_target("sm_90a"));
  std::string body = loop_body(k.ptx, "wgmma.fence");
  ASSERT_FALSE(body.empty()) << k.ptx;
  EXPECT_EQ(count(body, "bar.sync"), 2u) << body;
  EXPECT_EQ(count(body, "st.shared"), 2u) << body;
  std::string before = k.ptx.substr(0, k.ptx.find(body));
  EXPECT_EQ(count(before, "st.shared"), 1u) << "w's one store (16 x 32 bf16: 8 bytes per thread)\n" << before;
  expect_ptxas_accepts(k, true);
}

}  // namespace
}  // namespace tilejit::codegen
