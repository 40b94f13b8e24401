// The attention tests' problems, inputs and long-double reference, shared by the emulator
// tests (attention_test.cpp) and the sweep (attention_sweep_test.cpp). The reference is
// written from SEMANTICS.md ("Attention") alone: logits in exact arithmetic, masked ones
// replaced by -0.7 * the dtype's largest finite value (as an f32), a plain softmax over all
// S keys, rows t >= q_seqlens[b] zeroed; the backward pass by the analytic softmax gradient.
//
// Each output element is compared within rtol * (the sum of the magnitudes of the terms it
// is made of) + atol, so the bound follows what rounding can do to that element rather than
// its (possibly cancelled) value; NaN never passes.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ops/attention.h"
#include "ops/attention/launch.h"
#include "tests/emu/ops_test_util.h"

namespace tjops {

using tilejit::ops::AttentionGradients;
using tilejit::ops::AttentionOptions;

// How q, k, v and dout lie in memory.
enum class Layout {
  btnh,    // contiguous (B, T, N, H)
  bnth,    // contiguous (B, N, T, H), passed as a permuted view
  padded,  // (B, T, N, H + 8) with the head dim sliced to H: rows with gaps
};

struct AttentionCase {
  DType dtype = DType::bf16;
  int64_t B = 1, T = 16, S = 16, N = 2, K = 1, H = 64;
  bool rank3 = false;
  Layout layout = Layout::btnh;
  std::optional<double> scale;
  bool causal = false, bottom_right = false;
  std::optional<std::pair<int64_t, int64_t>> window;
  std::vector<int32_t> q_lens, kv_lens;  // empty: none
  std::vector<int64_t> bias_shape;       // empty: no bias
  DType bias_dtype = DType::f32;
  bool bias_transposed = false;          // bias stored (B, N, S, T), passed as a permuted view
  std::vector<int64_t> mask_shape;       // empty: no mask
  double mask_keep = 0.7;                // probability of True
  double logit_range = 2;                // q and k uniform in [-range, range]
  std::optional<LD> bias_value;          // every bias element this value instead of random ones
  // Every bias element bias_at(t, s) at its own indices in the bias's last two dims (0 where one
  // is broadcast) instead of random ones.
  std::function<LD(int64_t t, int64_t s)> bias_at;
  bool backward = true;
  bool public_api = false;  // through attention() / attention_backward() instead of the launches
  bool deterministic = false;  // AttentionOptions::deterministic
  std::string device = "emu";
  // The kernels' blocks; unset: the op's heuristic (small blocks reach the multi-block paths,
  // skipping included, on small problems).
  std::optional<tilejit::ops::attention_detail::AttentionConfigs> configs;
};

std::string describe(const AttentionCase& c);

struct AttentionInputs {
  Host q, k, v, dout;               // logical (B, T, N, H) / (B, S, K, H), contiguous
  std::optional<Host> bias, mask;   // their own shapes, contiguous
};

AttentionInputs random_inputs(const AttentionCase& c, Rng& rng);

struct AttentionReference {
  std::vector<LD> out, out_terms;    // (B, T, N, H)
  std::vector<LD> lse;               // (B, N, T)
  std::vector<LD> dq, dq_terms;      // (B, T, N, H)
  std::vector<LD> dk, dk_terms, dv, dv_terms;  // (B, S, K, H)
};

AttentionReference attention_reference(const AttentionCase& c, const AttentionInputs& in);

// The options the case describes, with its tensors on `device`.
AttentionOptions case_options(const AttentionCase& c, const AttentionInputs& in, Device& device);

// Uploads a logical (B, T, N, H) array (or (T, N, H) for rank3) in the case's layout.
Tensor upload_sequence(const AttentionCase& c, const Host& h, int64_t len, int64_t heads, Device& device);

// Runs the forward (and, when asked, the backward) pass of the case on its device into
// poisoned outputs through the internal launches (or through the public ops, whose outputs
// cannot be poisoned), and checks every output element and the outputs' shapes.
void check_attention_case(const AttentionCase& c);

}  // namespace tjops
