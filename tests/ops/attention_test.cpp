// attention forward and backward on the emulator against the long-double reference of
// attention_test_util.h: every option alone and in combination on small shapes (T, S not
// multiples of the blocks, T != S), every dtype, GQA / MQA / MHA, head dims 8 to 128, both
// strided layouts and rank-3 inputs, fully masked rows. Every case writes into poisoned
// outputs and checks out, logsumexp, dq, dk and dv. Cases marked "small blocks" run kernels
// with blocks of 16 and 32 rows, so that problems of a few dozen rows reach several blocks
// per program (and the skipping of masked blocks); the others run the op's own configs.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "tests/codegen/ptx_text.h"
#include "tests/codegen/ptxas_check.h"
#include "tests/error_message.h"
#include "tests/ops/attention_test_util.h"
#include "tests/ptx_dump.h"

namespace tjops {
namespace {

using tilejit::ops::attention_detail::AttentionConfigs;
using tilejit::ops::attention_detail::KernelConfig;

// Forward, rows and dq: 32 queries by 16 keys; dk / dv: 32 keys by 16 queries; 2 warps.
AttentionConfigs small_blocks(int64_t head_chunk = 64, int num_stages = 1) {
  KernelConfig queries{32, 16, 2, head_chunk, num_stages}, keys{16, 32, 2, head_chunk, num_stages};
  return {queries, queries, keys, queries};
}

AttentionCase small(AttentionCase c, int64_t head_chunk = 64) {
  c.configs = small_blocks(head_chunk);
  return c;
}

// Every kernel with two pipeline stages: the next block's operands are copied (cp.async, or
// on sm_90a TMA for the blocks of the forward, dk / dv and dq) while a step computes; the
// block skipping, GQA sums, padding lengths and bias run through the pipelined loops. f32
// takes the setting and computes the same (there is nothing to pipeline).
TEST(Attention, PipelinedBlocks) {
  for (const char* device : {"emu:sm_90a", "emu:sm_80"})
    for (DType d : {DType::bf16, DType::f32}) {
      AttentionCase c;
      c.device = device, c.dtype = d;
      c.B = 2, c.T = 45, c.S = 70, c.N = 4, c.K = 2, c.H = 64;
      c.causal = true;
      c.kv_lens = {70, 51};
      c.configs = small_blocks(d == DType::f32 ? 32 : 64, 2);
      std::vector<std::string> ptx = tilejit::testing_util::ptx_built_by([&] { check_attention_case(c); });
      // The four kernels stream their blocks through rings (dq and dk / dv read each staged
      // block in two products): on sm_90a the forward's, dk / dv's and dq's arrive by TMA,
      // the rows kernel's by cp.async; f32 operands are split for tf32x3 in registers, so
      // their loads stay as they are.
      auto kernels_with = [&](const char* instruction) {
        return std::count_if(ptx.begin(), ptx.end(),
                             [&](const std::string& text) { return text.find(instruction) != std::string::npos; });
      };
      bool tma = std::string(device) == "emu:sm_90a" && d == DType::bf16;
      EXPECT_EQ(kernels_with("cp.async.c"), d == DType::f32 ? 0 : tma ? 1 : 4) << device << " " << dtype_name(d);
      EXPECT_EQ(kernels_with("cp.async.bulk.tensor.4d"), tma ? 3 : 0) << device << " " << dtype_name(d);
      AttentionCase biased = c;
      biased.causal = false, biased.kv_lens = {}, biased.bias_shape = {2, 1, 45, 70};
      check_attention_case(biased);
    }
}

// On sm_90a the forward reads its key and value blocks by TMA, as blocks of one (batch, kv
// head) of a (B, K, S, H) view (kernel_arguments.h), in either layout, for rank-3 operands,
// with GQA, a head dim the chunk overhangs (zeros past H) and padding lengths.
TEST(Attention, KeysAndValuesByTma) {
  for (Layout layout : {Layout::btnh, Layout::bnth})
    for (bool rank3 : {false, true}) {
      AttentionCase c;
      c.device = "emu:sm_90a", c.layout = layout, c.rank3 = rank3;
      c.B = rank3 ? 1 : 2, c.T = 45, c.S = 70, c.N = 4, c.K = 2, c.H = 40;
      if (!rank3) c.kv_lens = {70, 51};
      c.causal = true, c.backward = false;
      c.configs = small_blocks(64, 2);
      std::vector<std::string> ptx = tilejit::testing_util::ptx_built_by([&] { check_attention_case(c); });
      ASSERT_EQ(ptx.size(), 1u) << describe(c);
      EXPECT_NE(ptx[0].find("cp.async.bulk.tensor.4d"), std::string::npos) << describe(c);
      EXPECT_EQ(ptx[0].find("cp.async.ca"), std::string::npos) << describe(c);
      EXPECT_EQ(ptx[0].find("cp.async.cg"), std::string::npos) << describe(c);
    }
}

// On sm_90a dq reads its key and value blocks by TMA, and dk / dv its query blocks and, where
// there are no query lengths, its dout blocks (dout's rows past the lengths must read zero,
// which a descriptor cannot say: cp.async then), in either layout, with GQA and block
// skipping. (Each case builds kernels of its own, no other test's either: kernels built
// before dump no PTX.)
TEST(Attention, BackwardBlocksByTma) {
  for (bool q_lens : {false, true}) {
    AttentionCase c;
    c.device = "emu:sm_90a", c.layout = q_lens ? Layout::bnth : Layout::btnh;
    c.B = 2, c.T = 45, c.S = 70, c.N = 4, c.K = 2, c.H = 64;
    c.kv_lens = {70, 51};
    if (q_lens) c.q_lens = {45, 20};
    c.causal = true;
    c.configs = small_blocks(32, 2);  // two chunks of the head dim per block
    std::vector<std::string> ptx = tilejit::testing_util::ptx_built_by([&] { check_attention_case(c); });
    auto kernel = [&](const std::string& name) {
      auto it = std::find_if(ptx.begin(), ptx.end(), [&](const std::string& text) {
        return text.find(".entry " + name + "(") != std::string::npos;
      });
      return it == ptx.end() ? std::string() : *it;
    };
    auto copies_by_cp_async = [](const std::string& text) {
      return text.find("cp.async.ca.") != std::string::npos || text.find("cp.async.cg.") != std::string::npos;
    };
    std::string dq = kernel("attention_backward_dq"), dkdv = kernel("attention_backward_dkdv");
    ASSERT_FALSE(dq.empty() || dkdv.empty()) << describe(c);
    EXPECT_NE(dq.find("cp.async.bulk.tensor.4d"), std::string::npos) << describe(c);
    EXPECT_FALSE(copies_by_cp_async(dq)) << describe(c);
    EXPECT_NE(dkdv.find("cp.async.bulk.tensor.4d"), std::string::npos) << describe(c);
    EXPECT_EQ(copies_by_cp_async(dkdv), q_lens) << describe(c);
  }
}

// The forward's PTX with OVERLAP on sm_90a: in each loop, the wait for p · v (wait_group 0,
// after the wait for q · k alone) follows every exponential of the block's softmax, behind the
// store of the anchor word made of the row sums (wait_after), which ptxas does not move it above.
void expect_exponentials_before_the_wait(const std::string& ptx) {
  const std::string wait_one = "wgmma.wait_group.sync.aligned 1;", wait_all = "wgmma.wait_group.sync.aligned 0;";
  int loops = 0;
  for (size_t at = ptx.find(wait_one); at != std::string::npos; at = ptx.find(wait_one, at + 1), ++loops) {
    std::string softmax = ptx.substr(at, ptx.find(wait_all, at) - at);
    size_t anchor = softmax.rfind("st.shared.b32");
    ASSERT_NE(anchor, std::string::npos) << softmax;
    EXPECT_GT(tilejit::codegen::count(softmax, "ex2.approx"), 0u) << softmax;
    std::string after_anchor = softmax.substr(anchor);
    EXPECT_EQ(tilejit::codegen::count(after_anchor, "ex2.approx"), 0u) << after_anchor;
    // The anchor's line, then the inline assembly's opening comment, then the wait.
    EXPECT_EQ(std::count(after_anchor.begin(), after_anchor.end(), '\n'), 2) << after_anchor;
  }
  EXPECT_GE(loops, 1);
}

// OVERLAP (config.h): the forward finishes each block's p · v in the next iteration and the
// backward issues dout · v^T with q · k^T, through both passes of the block skipping (rows
// with no kept key send a program through every block), GQA sums and padding lengths. On
// sm_90a the products read their blocks from the rings and run on while the softmax runs: each
// of the three kernels waits for the first of its two running groups alone (wait_group 1);
// the emulator hands out an accumulator only at the wait that completes it, and ptxas keeps
// the overlap (it inserts no wait of its own).
TEST(Attention, OverlappedProducts) {
  for (const char* device : {"emu:sm_90a", "emu:sm_80"}) {
    AttentionCase c;
    c.device = device;
    c.B = 2, c.T = 45, c.S = 70, c.N = 4, c.K = 2, c.H = 32;
    c.bottom_right = true;  // with T < S every row keeps keys; batch 1 keeps none
    c.kv_lens = {70, 0};
    // A warpgroup's 64 rows (queries; keys for dk / dv) per program, so that sm_90a runs wgmma.
    KernelConfig queries{64, 16, 4, 32, 2, true}, keys{16, 64, 4, 32, 2, true};
    c.configs = AttentionConfigs{queries, queries, keys, queries};
    std::vector<std::string> ptx = tilejit::testing_util::ptx_built_by([&] { check_attention_case(c); });
    size_t waiting_for_one = std::count_if(ptx.begin(), ptx.end(), [](const std::string& text) {
      return text.find("wgmma.wait_group.sync.aligned 1;") != std::string::npos;
    });
    EXPECT_EQ(waiting_for_one, std::string(device) == "emu:sm_90a" ? 3u : 0u) << device;
    if (std::string(device) == "emu:sm_90a") {
      auto forward = std::find_if(ptx.begin(), ptx.end(), [](const std::string& text) {
        return text.find(".entry attention_forward") != std::string::npos;
      });
      ASSERT_NE(forward, ptx.end());
      expect_exponentials_before_the_wait(*forward);
    }
    if (std::string(device) == "emu:sm_90a" && tilejit::codegen::find_ptxas())
      for (const std::string& text : ptx) tilejit::codegen::expect_overlap_kept(tilejit::codegen::run_ptxas(text, "sm_90a"), device);
    AttentionCase windowed = c;
    windowed.bottom_right = false, windowed.kv_lens = {}, windowed.q_lens = {45, 30};
    windowed.window = std::pair<int64_t, int64_t>{20, 3};
    windowed.bias_shape = {2, 1, 45, 70};
    check_attention_case(windowed);
  }
}

// warp_specialize (config.h) on sm_90a: a producer warpgroup copies the forward's key and
// value blocks by TMA for one or two consumer warpgroups, which hand ring slots back on the
// empty mbarriers; with and without OVERLAP, with bias, mask, GQA and a head dim the chunk
// overhangs. With block skipping, the producer serves the loop over the blocks the rows can
// keep, and the consumers copy the rest's blocks themselves when it runs: logits pushed down
// to masked_logit by a bias send every program through both, and rows with no kept key
// (bottom-right, an empty batch) programs whose first loop is empty. On sm_80 the setting
// changes nothing but the two loops.
TEST(Attention, ForwardWarpSpecialized) {
  struct Variant {
    KernelConfig config;
    std::function<void(AttentionCase&)> options;
  };
  const Variant variants[] = {
      {{64, 32, 4, 64, 2, false, true},
       [](AttentionCase& c) { c.bias_shape = {2, 1, 45, 150}, c.mask_shape = {1, 4, 45, 150}; }},
      {{128, 32, 8, 64, 2, true, true},
       [](AttentionCase& c) { c.H = 40, c.bias_shape = {2, 1, 45, 150}, c.mask_shape = {1, 4, 45, 150}; }},
      {{64, 32, 4, 64, 2, true, true},
       [](AttentionCase& c) {
         c.dtype = DType::f16, c.causal = true, c.kv_lens = {150, 31};
         c.bias_shape = {1, 1, 1, 1}, c.bias_value = -45851.0L, c.logit_range = 0.5;
       }},
      {{64, 32, 4, 64, 2, false, true},
       [](AttentionCase& c) { c.T = 170, c.bottom_right = true, c.kv_lens = {150, 0}; }},
      {{64, 32, 4, 64, 2, false, true},
       [](AttentionCase& c) { c.device = "emu:sm_80", c.causal = true, c.kv_lens = {150, 31}; }}};
  for (const Variant& v : variants) {
    AttentionCase c;
    c.device = "emu:sm_90a";
    c.B = 2, c.T = 45, c.S = 150, c.N = 4, c.K = 2, c.H = 64;
    c.backward = false;
    v.options(c);
    c.configs = AttentionConfigs{v.config, v.config, v.config, v.config};
    std::vector<std::string> ptx = tilejit::testing_util::ptx_built_by([&] { check_attention_case(c); });
    ASSERT_EQ(ptx.size(), 1u) << describe(c);
    const bool producer = c.device == "emu:sm_90a";
    EXPECT_EQ(ptx[0].find("cp.async.bulk.tensor.4d") != std::string::npos, producer) << describe(c);
    EXPECT_EQ(ptx[0].find("setmaxnreg.inc") != std::string::npos, producer) << describe(c);
    EXPECT_NE(ptx[0].find(fmt::format(".maxntid {}", 32 * (v.config.num_warps + (producer ? 4 : 0)))),
              std::string::npos)
        << describe(c);
  }
}

// pingpong (config.h): the forward's two consumer warpgroups take turns issuing their products
// (named barriers 2 and 3, bar.arrive to hand the turn over), without and with block skipping
// (both loops: logits pushed down to masked_logit by a bias); a turn that is never handed over
// would leave a warpgroup waiting forever, which the emulator reports. Two warpgroups that
// share the rows of 64 queries would meet at a barrier inside a turn (p moves through shared
// memory for p · v): refused when the kernel is compiled.
TEST(Attention, ForwardPingpong) {
  for (bool skipping : {false, true}) {
    AttentionCase c;
    c.device = "emu:sm_90a";
    c.B = 2, c.T = 45, c.S = 150, c.N = 4, c.K = 2, c.H = 64;
    c.backward = false;
    if (skipping) {
      c.dtype = DType::f16, c.causal = true, c.kv_lens = {150, 31};
      c.bias_shape = {1, 1, 1, 1}, c.bias_value = -45851.0L, c.logit_range = 0.5;
    } else {
      c.bias_shape = {2, 1, 45, 150}, c.mask_shape = {1, 4, 45, 150};
    }
    KernelConfig queries{128, 32, 8, 64, 2, true, true, true};
    c.configs = AttentionConfigs{queries, queries, queries, queries};
    std::vector<std::string> ptx = tilejit::testing_util::ptx_built_by([&] { check_attention_case(c); });
    ASSERT_EQ(ptx.size(), 1u) << describe(c);
    EXPECT_NE(ptx[0].find("setmaxnreg.inc"), std::string::npos) << describe(c);
    EXPECT_NE(ptx[0].find("bar.arrive"), std::string::npos) << describe(c);
  }
  AttentionCase c;
  c.device = "emu:sm_90a";
  c.B = 1, c.T = 45, c.S = 150, c.N = 2, c.K = 1, c.H = 64;
  c.backward = false;
  KernelConfig shared_rows{64, 32, 8, 64, 2, true, true, true};
  c.configs = AttentionConfigs{shared_rows, shared_rows, shared_rows, shared_rows};
  EXPECT_NE(tilejit::testing_util::error_of([&] { check_attention_case(c); })
                .find("pingpong: the consumer warpgroups would meet at a barrier while one of them issues"),
            std::string::npos);
}

// dq streams its key and value blocks in one loop at its top (the key range its rows can
// keep, with block skipping): with warp_specialize a producer warpgroup copies them on sm_90a,
// with and without OVERLAP, block skipping, bias and mask.
TEST(Attention, DqWarpSpecialized) {
  for (bool skipping : {false, true}) {
    AttentionCase c;
    c.device = "emu:sm_90a";
    c.B = 2, c.T = 45, c.S = 150, c.N = 4, c.K = 2, c.H = 64;
    if (skipping) c.causal = true, c.kv_lens = {150, 31};
    else c.bias_shape = {2, 1, 45, 150}, c.mask_shape = {1, 4, 45, 150};
    KernelConfig queries{64, 32, 4, 64, 2, skipping}, keys{32, 64, 4, 64, 2, true};
    KernelConfig dq = queries;
    dq.warp_specialize = true;
    c.configs = AttentionConfigs{queries, queries, keys, dq};
    std::vector<std::string> ptx = tilejit::testing_util::ptx_built_by([&] { check_attention_case(c); });
    auto dq_ptx = std::find_if(ptx.begin(), ptx.end(), [](const std::string& text) {
      return text.find(".entry attention_backward_dq(") != std::string::npos;
    });
    ASSERT_NE(dq_ptx, ptx.end()) << describe(c);
    EXPECT_NE(dq_ptx->find("setmaxnreg.inc"), std::string::npos) << describe(c);
    EXPECT_NE(dq_ptx->find(".maxntid 256"), std::string::npos) << describe(c);
  }
}

// The head dim in two chunks on sm_90a: q · k^T is two dots, the second accumulating into the
// first's running group without waiting for it, so the forward's logits wait for that pair
// with both chunks of p · v still running (wait_group 2).
TEST(Attention, ChunkedProductsChainOnRunningGroups) {
  AttentionCase c;
  c.B = 1, c.T = 64, c.S = 70, c.N = 2, c.K = 1, c.H = 32;
  c.causal = true;
  KernelConfig queries{64, 16, 4, 16, 2, true}, keys{16, 64, 4, 16, 2, true};
  c.configs = AttentionConfigs{queries, queries, keys, queries};
  std::vector<std::string> ptx = tilejit::testing_util::ptx_built_by([&] { check_attention_case(c); });
  auto forward = std::find_if(ptx.begin(), ptx.end(), [](const std::string& text) {
    return text.find(".entry attention_forward") != std::string::npos;
  });
  ASSERT_NE(forward, ptx.end());
  // In the loop: 2 for the logits, then 1 and 0 as the rescale reads each chunk of p · v; no
  // wait between the two chunks of q · k^T.
  for (int pending : {2, 1, 0})
    EXPECT_EQ(tilejit::codegen::count(*forward, fmt::format("wgmma.wait_group.sync.aligned {};", pending)), 1u)
        << pending;
  if (tilejit::codegen::find_ptxas())
    for (const std::string& text : ptx) tilejit::codegen::expect_overlap_kept(tilejit::codegen::run_ptxas(text, "sm_90a"), "chunked");
}

TEST(Attention, EveryDtype) {
  for (DType d : {DType::f32, DType::bf16, DType::f16}) {
    AttentionCase c;
    c.dtype = d;
    c.B = 2, c.T = 37, c.S = 53, c.N = 2, c.K = 1, c.H = 64;
    check_attention_case(c);
  }
}

TEST(Attention, HeadDims) {
  AttentionCase c;
  c.T = 21, c.S = 45, c.N = 2, c.K = 2;
  for (int64_t h : {8, 40, 128}) {
    c.H = h;
    c.dtype = h == 40 ? DType::f16 : DType::bf16;
    check_attention_case(c);
  }
}

TEST(Attention, HeadDimInChunks) {
  // H = 40 in chunks of 16: three chunks, the last one half past H.
  AttentionCase c;
  c.dtype = DType::f32, c.T = 33, c.S = 40, c.N = 2, c.K = 1, c.H = 40;
  c.causal = true;
  check_attention_case(small(c, 16));
}

TEST(Attention, HeadGroups) {
  for (auto [n, k] : {std::pair{3, 3}, std::pair{4, 1}, std::pair{6, 2}}) {  // MHA, MQA, GQA
    AttentionCase c;
    c.T = 19, c.S = 27, c.N = n, c.K = k, c.H = 16;
    check_attention_case(c);
  }
}

TEST(Attention, Causal) {
  for (auto [t, s] : {std::pair{45, 70}, std::pair{70, 45}, std::pair{50, 50}}) {
    AttentionCase c;
    c.T = t, c.S = s, c.H = 16;
    c.causal = true;
    check_attention_case(small(c));
  }
}

TEST(Attention, CausalBottomRight) {
  // T > S leaves the first T - S rows with no key at all: the mean of v over all keys.
  for (auto [t, s] : {std::pair{45, 70}, std::pair{70, 45}}) {
    AttentionCase c;
    c.T = t, c.S = s, c.H = 16;
    c.bottom_right = true;
    check_attention_case(small(c));
  }
  AttentionCase both;  // both alignments: the stricter one wins
  both.T = 40, both.S = 60, both.H = 16;
  both.causal = both.bottom_right = true;
  check_attention_case(small(both));
}

TEST(Attention, LocalWindow) {
  AttentionCase c;
  c.T = 60, c.S = 75, c.H = 16;
  for (auto window : {std::pair<int64_t, int64_t>{5, 9}, std::pair<int64_t, int64_t>{0, 0},
                      std::pair<int64_t, int64_t>{40, 1000000}}) {
    c.window = window;
    check_attention_case(small(c));
  }
  c.window = std::pair<int64_t, int64_t>{20, 3};
  c.causal = true;
  check_attention_case(small(c));
  c.causal = false, c.bottom_right = true;  // s <= t + 15 and a window of 7 keys to the left
  c.window = std::pair<int64_t, int64_t>{7, 0};
  check_attention_case(small(c));
}

TEST(Attention, SequenceLengths) {
  AttentionCase c;
  c.B = 4, c.T = 40, c.S = 50, c.H = 16;
  c.q_lens = {40, 17, 0, 100};   // full, partial, none (a zero output), more than T
  c.kv_lens = {50, 0, 33, 9};    // full, none (every row fully masked), partial
  check_attention_case(small(c));
  AttentionCase q_only = c;
  q_only.kv_lens.clear();
  check_attention_case(small(q_only));
  AttentionCase kv_only = c;
  kv_only.q_lens.clear();
  check_attention_case(kv_only);  // the op's own blocks
}

TEST(Attention, Bias) {
  AttentionCase c;
  c.B = 2, c.T = 23, c.S = 37, c.N = 4, c.K = 2, c.H = 16;
  c.bias_shape = {1, 4, 23, 37};  // per head, shared by the batch
  check_attention_case(c);
  c.bias_shape = {2, 1, 1, 37}, c.bias_dtype = DType::bf16;  // per batch and key
  check_attention_case(c);
  c.bias_shape = {2, 4, 23, 37}, c.bias_dtype = DType::f16, c.bias_transposed = true;  // full, keys strided
  check_attention_case(c);
  c.bias_shape = {1, 1, 23, 1}, c.bias_dtype = DType::f32, c.bias_transposed = false;  // per query row
  check_attention_case(c);
}

TEST(Attention, Mask) {
  AttentionCase c;
  c.B = 2, c.T = 29, c.S = 41, c.N = 2, c.K = 1, c.H = 16;
  c.mask_shape = {2, 1, 29, 41};
  check_attention_case(c);
  c.mask_shape = {1, 2, 1, 41}, c.mask_keep = 0.3;
  check_attention_case(c);
  // Most rows keep no key at all.
  c.mask_shape = {2, 2, 29, 41}, c.mask_keep = 0.01;
  check_attention_case(c);
}

// A positive scale is folded into the softmax's exponentials (kernel_tiles.h, Logits::factor);
// zero and negative ones take the logits as they are.
TEST(Attention, ScaleAndLogits) {
  AttentionCase c;
  c.dtype = DType::f16, c.T = 30, c.S = 30, c.H = 32;
  c.logit_range = 3;
  for (double scale : {0.7, -0.45, 0.0}) {
    c.scale = scale;
    check_attention_case(c);
  }
}

TEST(Attention, Layouts) {
  AttentionCase c;
  c.B = 2, c.T = 25, c.S = 31, c.N = 4, c.K = 2, c.H = 24;
  c.causal = true;
  for (Layout layout : {Layout::bnth, Layout::padded}) {
    c.layout = layout;
    check_attention_case(small(c));
  }
  AttentionCase r = c;
  r.B = 1, r.rank3 = true;
  for (Layout layout : {Layout::btnh, Layout::bnth}) {
    r.layout = layout;
    check_attention_case(small(r));
  }
}

// Logits pushed down to masked_logit by a bias (f16: -45852.8): masked keys keep a weight of
// the same size as kept ones, so no block may be skipped and the backward pass must not
// take the statistics from the rounded logsumexp.
TEST(Attention, LogitsNearTheMaskedValue) {
  AttentionCase c;
  c.dtype = DType::f16, c.B = 2, c.T = 40, c.S = 50, c.N = 2, c.K = 1, c.H = 16;
  c.bias_shape = {1, 1, 1, 1}, c.bias_value = -45851.0L;
  c.logit_range = 0.5;
  c.causal = true;
  c.kv_lens = {50, 31};
  check_attention_case(small(c));
}

// Every logit far below zero (a bias of -300): the backward's loops over whole blocks take no
// bounds, and past S a partial block's keys would weigh exp(0 - logsumexp) = inf there; dq's
// last block keeps its key bound, and dk / dv's rows of those keys are never stored. On the
// default and the small blocks, sm_90a and sm_80.
TEST(Attention, LogitsFarBelowZeroPastTheLastKey) {
  for (const char* device : {"emu:sm_90a", "emu:sm_80"}) {
    AttentionCase c;
    c.B = 1, c.T = 40, c.S = 50, c.N = 2, c.K = 1, c.H = 32;
    c.bias_shape = {1, 1, 1, 1}, c.bias_value = -300.0L;
    c.device = device;
    check_attention_case(c);
    check_attention_case(small(c));
  }
}

// A bias of -inf, as a window or left padding is often written: a row whose first block of
// keys is all -inf still weighs its other keys by exp(logit - max) (-inf weighs 0), and the
// backward pass gives those keys no gradient; the online softmax must not compute
// exp(-inf - -inf) = NaN. Through the plain and the overlapped loops (sm_90a and sm_80).
TEST(Attention, MinusInfinityBias) {
  const LD inf = std::numeric_limits<LD>::infinity();
  KernelConfig queries{64, 16, 4, 32, 2, true}, keys{16, 64, 4, 32, 2, true};
  for (const char* device : {"emu:sm_90a", "emu:sm_80"})
    for (bool overlap : {false, true}) {
      AttentionCase c;
      c.device = device;
      c.B = 2, c.T = 70, c.S = 70, c.N = 2, c.K = 1, c.H = 32;
      c.bias_shape = {1, 1, 70, 70};  // a window of 21 keys: rows t >= 36 keep no key of the first 16
      c.bias_at = [inf](int64_t t, int64_t s) { return t - 20 <= s && s <= t ? 0 : -inf; };
      c = overlap ? c : small(c);
      if (overlap) c.configs = AttentionConfigs{queries, queries, keys, queries};
      check_attention_case(c);
      c.bias_shape = {2, 1, 1, 70};  // left padding: keys 0..39 of every row
      c.bias_at = [inf](int64_t, int64_t s) { return s < 40 ? -inf : 0; };
      check_attention_case(c);
    }
}

// Without block skipping the forward runs the key blocks below S / BLOCK_N, all of whose keys
// are below S, in a loop whose logits take no key bound, and a partial last block (and the
// iteration that finishes the overlapped products) in a second one (forward_kernel.cpp): S a
// whole number of key blocks, one key more, and under one block, through the plain and the
// overlapped loops and, on sm_90a, a producer warpgroup's with pingpong consumers, with and
// without a boolean mask.
TEST(Attention, KeyLengthsAroundTheKeyBlock) {
  KernelConfig queries{64, 16, 4, 32, 2, true}, keys{16, 64, 4, 32, 2, true};
  KernelConfig pingpong{128, 16, 8, 32, 2, true, true, true};
  for (const char* device : {"emu:sm_90a", "emu:sm_80"})
    for (int loop = 0; loop < 3; ++loop)
      for (int64_t s : {64, 65, 10}) {
        const bool overlap = loop > 0, producer = loop == 2;
        if (producer && std::string(device) != "emu:sm_90a") continue;
        SCOPED_TRACE(fmt::format("{} overlap={} producer={} S={}", device, overlap, producer, s));
        AttentionCase c;
        c.device = device;
        c.B = 1, c.T = 40, c.S = s, c.N = 2, c.K = 1, c.H = 32;
        c = overlap ? c : small(c);
        if (overlap) c.configs = AttentionConfigs{queries, queries, keys, queries};
        if (producer) c.configs = AttentionConfigs{pingpong, queries, keys, queries}, c.backward = false;
        check_attention_case(c);
        c.mask_shape = {1, 2, 40, s};
        check_attention_case(c);
      }
}

// dk / dv summing dq (fuse_dq): its program adds each block's k^T · ds^T into f32 sums by
// atomic adds and a last kernel casts them, in place of the dq kernel. Without block skipping
// (a bias of -300, S past the last whole key block, where the keys past S must not reach dq),
// with it (causal, GQA, key lengths, a batch whose rows keep nothing), and with bias, mask and
// query lengths; bf16 and f32, sm_90a (wgmma for the head dim of 64 in one chunk) and sm_80.
TEST(Attention, DqSummedByDkDv) {
  for (const char* device : {"emu:sm_90a", "emu:sm_80"})
    for (DType d : {DType::bf16, DType::f32})
      for (int64_t chunk : {32, 64}) {
        SCOPED_TRACE(fmt::format("{} {} HEAD_CHUNK={}", device, tilejit::dtype_name(d), chunk));
        const bool overlap = d != DType::f32;
        KernelConfig queries{32, 16, 4, chunk, 2, overlap}, keys{16, 64, 4, chunk, 2, overlap};
        keys.fuse_dq = true;
        AttentionCase c;
        c.device = device, c.dtype = d;
        c.configs = AttentionConfigs{queries, queries, keys, queries};
        c.B = 1, c.T = 40, c.S = 70, c.N = 2, c.K = 1, c.H = 64;
        c.bias_shape = {1, 1, 1, 1}, c.bias_value = -300.0L;
        std::vector<std::string> ptx = tilejit::testing_util::ptx_built_by([&] { check_attention_case(c); });
        EXPECT_TRUE(std::any_of(ptx.begin(), ptx.end(), [](const std::string& text) {
          return text.find(".entry attention_backward_dkdv_dq(") != std::string::npos;
        }));

        c.bias_shape = {}, c.bias_value.reset();
        c.B = 2, c.N = 4, c.K = 2;
        c.causal = true, c.bottom_right = true;  // rows t < 30 of batch 0 keep nothing
        c.kv_lens = {70, 0};
        check_attention_case(c);
        c.causal = false, c.bottom_right = false, c.kv_lens = {};
        c.q_lens = {40, 23};
        c.bias_shape = {2, 1, 40, 70}, c.mask_shape = {1, 4, 40, 70};
        check_attention_case(c);
      }
}

// Rows with no kept key in bf16 and f32: logsumexp is masked_logit + log(S), which f32
// rounds to masked_logit; the weights must still be 1 / S.
TEST(Attention, FullyMaskedRows) {
  for (DType d : {DType::bf16, DType::f32}) {
    AttentionCase c;
    c.dtype = d, c.B = 2, c.T = 36, c.S = 20, c.N = 2, c.K = 2, c.H = 16;
    c.bottom_right = true;        // rows t < 16 keep nothing
    c.kv_lens = {20, 0};          // nor does any row of batch 1
    check_attention_case(small(c));
  }
}

// The backward's row statistics are padded for query blocks up to 128 rows: a larger BLOCK_M is
// refused before any launch of its kernel, naming the kernel and the value.
TEST(Attention, BackwardQueryBlocksDivideTheStatisticsPadding) {
  AttentionCase c = small(AttentionCase{});
  c.configs->dq.block_m = 256;
  tilejit::testing_util::expect_error_naming([&] { check_attention_case(c); },
                                             {"attention_backward_dq", "BLOCK_M that divides 128, not 256"});
}

TEST(Attention, EverythingAtOnce) {
  AttentionCase c;
  c.B = 2, c.T = 41, c.S = 66, c.N = 6, c.K = 2, c.H = 40;
  c.layout = Layout::bnth;
  c.scale = 0.2;
  c.causal = true;
  c.window = std::pair<int64_t, int64_t>{30, 4};
  c.q_lens = {35, 41}, c.kv_lens = {60, 12};
  c.bias_shape = {2, 6, 1, 66};
  c.mask_shape = {1, 6, 41, 66}, c.mask_keep = 0.8;
  check_attention_case(small(c, 16));
  c.dtype = DType::f16;
  check_attention_case(c);  // the op's own blocks
}

TEST(Attention, PublicApi) {
  AttentionCase c;
  c.public_api = true;
  c.rank3 = true, c.T = 20, c.S = 24, c.N = 2, c.K = 1, c.H = 16;
  c.q_lens = {15};
  check_attention_case(c);
}

TEST(Attention, NoQueries) {
  TJ_SEEDED_RNG(rng);
  Tensor q = upload(random_host(DType::bf16, 0, rng, -1, 1), {2, 0, 2, 16});
  Tensor k = upload(random_host(DType::bf16, 2 * 5 * 16, rng, -1, 1), {2, 5, 1, 16});
  AttentionOptions options;
  options.return_logsumexp = true;
  auto r = tilejit::ops::attention(q, k, k, options);
  EXPECT_EQ(r.out.shape(), (std::vector<int64_t>{2, 0, 2, 16}));
  EXPECT_EQ(r.logsumexp->shape(), (std::vector<int64_t>{2, 2, 0}));
  auto g = tilejit::ops::attention_backward(q, k, k, r.out, r.out, *r.logsumexp);
  EXPECT_EQ(g.dq.shape(), q.shape());
  for (const Tensor* t : {&g.dk, &g.dv}) {
    EXPECT_EQ(t->shape(), k.shape());
    expect_values("dk / dv without queries", download(*t), std::vector<LD>(size_t(k.numel()), 0), exact());
  }
  // No query heads beside a kv head: nothing reads k and v, and their gradients are zero.
  Tensor headless = upload(random_host(DType::bf16, 0, rng, -1, 1), {2, 3, 0, 16});
  auto h = tilejit::ops::attention(headless, k, k, options);
  EXPECT_EQ(h.out.shape(), headless.shape());
  auto hg = tilejit::ops::attention_backward(headless, k, k, h.out, h.out, *h.logsumexp);
  for (const Tensor* t : {&hg.dk, &hg.dv}) {
    EXPECT_EQ(t->shape(), k.shape());
    expect_values("dk / dv without query heads", download(*t), std::vector<LD>(size_t(k.numel()), 0), exact());
  }
}

TEST(Attention, Sm80Target) {
  AttentionCase c;
  c.device = "emu:sm_80";
  c.T = 30, c.S = 35, c.N = 2, c.K = 1, c.H = 32;
  c.causal = true;
  check_attention_case(c);
}

}  // namespace
}  // namespace tjops
