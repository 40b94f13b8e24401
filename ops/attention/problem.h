// An attention call checked and normalized, shared by the forward and the backward pass:
// the sizes, every tensor as element strides over (batch, sequence, head) with the head dim
// contiguous, bias and mask strides broadcast to (B, N, T, S) (0 along a broadcast dim), and
// the causal and window masks folded into one band of kept diagonals. Everything a call can
// get wrong is found here, before any device work.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ops/attention.h"
#include "ops/common/op_arguments.h"

namespace tilejit::ops::attention_detail {

// Element strides of a (batch, sequence, head) operand whose head dim has stride 1; batch 0
// for rank-3 tensors.
struct SequenceStrides {
  int64_t batch = 0, seq = 0, head = 0;
};

// Element strides of a bias or mask over (B, N, T, S); 0 where it is broadcast.
struct BroadcastStrides {
  int64_t batch = 0, head = 0, query = 0, key = 0;
};

struct AttentionProblem {
  int64_t batch = 0, q_len = 0, kv_len = 0, heads = 0, kv_heads = 0, head_dim = 0;
  bool rank3 = false;  // the inputs had no batch dim
  const Tensor* q_in = nullptr;  // the caller's q, k and v, alive for the call
  const Tensor* k_in = nullptr;
  const Tensor* v_in = nullptr;
  DType dtype = DType::f32;
  float scale = 1;
  // Kept keys satisfy -band_left <= s - t <= band_right (is_causal, causal_bottom_right and
  // local_window together), when `band`; left in [0, T], right in [-T, S].
  bool band = false;
  int64_t band_left = 0, band_right = 0;
  SequenceStrides q, k, v;
  std::optional<Tensor> bias, mask, q_seqlens, kv_seqlens;
  BroadcastStrides bias_strides, mask_strides;

  int64_t group() const { return heads / kv_heads; }
  // (B, T, N, H) or (T, N, H): the shape of out and dq; likewise for k (dk, dv).
  std::vector<int64_t> q_shape() const;
  std::vector<int64_t> kv_shape() const;
  std::vector<int64_t> logsumexp_shape() const;  // (B, N, T) or (N, T)
};

// Checks q, k, v and the options of `op` ("attention" or "attention_backward").
AttentionProblem check_attention(const OpArguments& args, const Tensor& q, const Tensor& k, const Tensor& v,
                                 const AttentionOptions& options);

// Checks a tensor of q's shape that the backward pass reads (out, dout): `dtype`, q's device
// and stride 1 along its head dim; returns its strides.
SequenceStrides check_like_q(const OpArguments& args, const AttentionProblem& p, const char* name,
                             const Tensor& t, DType dtype);

}  // namespace tilejit::ops::attention_detail
