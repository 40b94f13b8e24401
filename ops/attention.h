// Scaled dot-product attention, forward and backward, as SEMANTICS.md ("Attention") defines
// it: jax.nn.dot_product_attention's options plus Transformer Engine's training path.
//
//   AttentionOptions o;
//   o.is_causal = true;
//   o.return_logsumexp = true;
//   AttentionResult r = attention(q, k, v, o);            // r.out (B, T, N, H), r.logsumexp (B, N, T)
//   AttentionGradients g = attention_backward(q, k, v, r.out, dout, *r.logsumexp, o);
//
// Shapes: q (B, T, N, H), k and v (B, S, K, H), or all three of rank 3 ((T, N, H) and
// (S, K, H)), meaning B = 1. N % K == 0 and query head n reads kv head n / (N / K) (MHA,
// GQA, MQA). q, k and v share one dtype: f16, bf16 or f32. H is a multiple of 8 from 8 to
// 256. Any strides whose head dim (the last) has stride 1: BTNH tensors and BNTH ones
// (permuted views) are read in place.
//
// logits[b, n, t, s] = (q[b, t, n] · k[b, s, n / G]) * scale + bias[b, n, t, s], in f32.
// Key s is kept for query t when every given mask keeps it: mask[b, n, t, s] (True keeps),
// is_causal (s <= t), causal_bottom_right (s <= t + S - T), local_window (t - left <= s <=
// t + right), q_seqlens (t < q_seqlens[b]) and kv_seqlens (s < kv_seqlens[b]). The logits of
// the other keys are replaced by masked_logit(dtype) = -0.7 * (the dtype's largest finite
// value), rounded to f32, and the softmax over all S keys is then taken without special
// cases: a row with no kept key is the plain average of v over all S keys. Query rows
// t >= q_seqlens[b] are 0 in the output. out = softmax(logits) @ v, in q's dtype.
//
// The kernels are fused flash-attention kernels (online softmax over blocks of keys, f32
// running max and sum, never materialising (T, S)); every product runs on the tensor cores
// with f32 accumulation: f16 and bf16 operands (the softmax weights p, and in the backward
// pass their gradients ds, are rounded to the input dtype before their products), f32 ones
// in tf32x3 (a tf32 split into high and low parts, hi*hi + hi*lo + lo*hi: about f32 accuracy
// at a third of tf32's speed), so f32 results are within about 1e-5 of the magnitude of the
// terms they sum.
//
// The backward pass differentiates q, k and v only (bias and mask are constants; a masked
// logit is the constant masked_logit, so it passes no gradient to q and k, while v still
// receives its share of the softmax weight); rows t >= q_seqlens[b] have zero output and so
// no gradient. It takes the forward's out and logsumexp.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>

#include "runtime/device.h"
#include "runtime/tensor.h"

namespace tilejit::ops {

struct AttentionOptions {
  std::optional<double> scale;       // default 1 / sqrt(H)
  bool is_causal = false;            // keep s <= t (top-left aligned)
  // Keep s <= t + (S - T) (bottom-right aligned), S and T the tensors' lengths, not the padding
  // lengths (Transformer Engine's padded bottom-right mask aligns each batch's own lengths).
  bool causal_bottom_right = false;
  // (left, right): keep t - left <= s <= t + right; both >= 0.
  std::optional<std::pair<int64_t, int64_t>> local_window;
  std::optional<Tensor> q_seqlens;   // i32 (B): keep t < q_seqlens[b]
  std::optional<Tensor> kv_seqlens;  // i32 (B): keep s < kv_seqlens[b]
  // 4-D, broadcastable to (B, N, T, S) (every dim its size or 1); f16, bf16 or f32; any strides.
  std::optional<Tensor> bias;
  std::optional<Tensor> mask;        // bool (i1), 4-D, broadcastable likewise; True keeps
  bool return_logsumexp = false;
  // attention_backward only: whether dq must come out the same in every run. By default a
  // tuned config may sum dq's shares by atomic adds, whose order (and so the last bits of dq)
  // varies from run to run.
  bool deterministic = false;
};

struct AttentionResult {
  Tensor out;                        // q's dtype and shape, contiguous
  // f32 (B, N, T) ((N, T) for rank-3 inputs), contiguous: log(sum_s exp(logits[t, s])) over
  // the masked logits, so masked_logit(dtype) + log(S) for rows t >= q_seqlens[b].
  std::optional<Tensor> logsumexp;
};

struct AttentionGradients {
  Tensor dq, dk, dv;  // the dtypes and shapes of q, k and v, contiguous
};

AttentionResult attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& options = {},
                          Stream* stream = nullptr);

// The gradients of attention(q, k, v, options) for the output gradient `dout` (q's dtype and
// shape, any strides with a unit head stride), given the forward's `out` and `logsumexp`
// (which options.return_logsumexp asks for; options.return_logsumexp itself is ignored). For
// GQA and MQA, dk and dv sum over the query heads of each group, in one program per block of
// keys: dk and dv are deterministic (no atomic accumulation), and so is dq with
// options.deterministic (else see there).
AttentionGradients attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                      const Tensor& dout, const Tensor& logsumexp,
                                      const AttentionOptions& options = {}, Stream* stream = nullptr);

// The value masked logits take for inputs of `dtype`: -0.7 * its largest finite value, as
// an f32 (f16: -45852.8; bf16 and f32: about -2.38e38).
float masked_logit(DType dtype);

}  // namespace tilejit::ops
