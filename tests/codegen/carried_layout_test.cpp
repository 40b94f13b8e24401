// Loop boundaries: a loop that carries an online softmax's running row max and row sum over
// a dot's logits keeps them in the rows of the dot's accumulator, and the row max broadcast
// back over the logits stays there too, so an iteration moves no data between threads but
// through the warp shuffles of its row reductions; a wgmma operand computed before the loop
// is stored to shared memory once, not at every iteration.
#include <gtest/gtest.h>

#include <limits>

#include "codegen/compiler.h"
#include "dsl/kernel.h"
#include "ptxas_check.h"

namespace tilejit::codegen {
namespace {

using namespace tilejit::dsl;

// For each of BLOCK_M query rows, the running max m and sum l of exp(q . k - m) over all
// S keys, BLOCK_N keys per iteration (S a multiple of BLOCK_N).
Kernel online_softmax_kernel() {
  return define_kernel(
      "online_softmax_rows", {"q", "k", "m_out", "l_out", "S"}, {{"BLOCK_M", 64}, {"BLOCK_N", 16}, {"HEAD", 32}},
      [](const Constants& c, Ptr<bf16> q, Ptr<bf16> k, Ptr<f32> m_out, Ptr<f32> l_out, Scalar<i32> S) {
        int64_t bm = c["BLOCK_M"], bn = c["BLOCK_N"], h = c["HEAD"];
        Tile rows = arange(0, bm), cols = arange(0, h);
        Tile q_tile = load(q + expand_dims(rows, 1) * h + expand_dims(cols, 0));  // (BLOCK_M, HEAD)
        std::vector<Tile> init = {full({bm}, -std::numeric_limits<double>::infinity(), DType::f32),
                                  zeros({bm}, DType::f32)};
        std::vector<Tile> r = for_range(0, S, bn, init, [&](Tile first, std::vector<Tile> carried) {
          Tile keys = first + arange(0, bn);
          Tile k_tile = load(k + expand_dims(keys, 1) * h + expand_dims(cols, 0));  // (BLOCK_N, HEAD)
          Tile logits = dot(q_tile, trans(k_tile), zeros({bm, bn}, DType::f32));   // (BLOCK_M, BLOCK_N)
          Tile m = maximum(carried[0], max(logits, 1));
          Tile p = exp(logits - expand_dims(m, 1));
          Tile l = carried[1] * exp(carried[0] - m) + sum(p, 1);
          return std::vector<Tile>{m, l};
        });
        store(m_out + rows, r[0]);
        store(l_out + rows, r[1]);
      });
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

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
  Kernel kernel = online_softmax_kernel();
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

}  // namespace
}  // namespace tilejit::codegen
