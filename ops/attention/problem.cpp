// Argument checks and normalization of attention calls (problem.h).
#include "ops/attention/problem.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tilejit::ops::attention_detail {
namespace {

constexpr int64_t kMaxHeadDim = 256;
// The kernels index rows in 32 bits, band arithmetic included: t + right and a block's end plus
// a band bound reach T + S, below 2^31 while T and S are below 2^30.
constexpr int64_t kMaxIndex = std::numeric_limits<int32_t>::max();
constexpr int64_t kMaxLength = (int64_t{1} << 30) - 1;

// The (batch, sequence, head) strides of a rank-3 or rank-4 tensor whose last dim must be
// contiguous.
SequenceStrides sequence_strides(const OpArguments& args, std::string_view name, const Tensor& t) {
  const auto& st = t.strides();
  int r = t.rank();
  if (t.dim(-1) > 1 && st[static_cast<size_t>(r - 1)] != 1)
    args.fail("{} ({}) must have stride 1 along its last (head) dim, but its strides are {}", name, t.describe(),
              shape_string(st));
  SequenceStrides s;
  s.batch = r == 4 ? st[0] : 0;
  s.seq = st[static_cast<size_t>(r - 3)];
  s.head = st[static_cast<size_t>(r - 2)];
  return s;
}

// A bias or mask: rank 4, every dim the size of (B, N, T, S) or 1.
BroadcastStrides broadcast_strides(const OpArguments& args, std::string_view name, const Tensor& t,
                                   const AttentionProblem& p) {
  args.rank(name, t, 4);
  const int64_t full[4] = {p.batch, p.heads, p.q_len, p.kv_len};
  const char* dims[4] = {"batch", "head", "query", "key"};
  int64_t strides[4];
  for (int i = 0; i < 4; ++i) {
    if (t.dim(i) != full[i] && t.dim(i) != 1)
      args.fail("{} ({}) must be broadcastable to (B, N, T, S) = {}: its {} dim {} is neither {} nor 1", name,
                t.describe(), shape_string({p.batch, p.heads, p.q_len, p.kv_len}), dims[i], t.dim(i), full[i]);
    strides[i] = t.dim(i) == 1 ? 0 : t.strides()[static_cast<size_t>(i)];
  }
  return {strides[0], strides[1], strides[2], strides[3]};
}

void check_seqlens(const OpArguments& args, std::string_view name, const Tensor& t, const AttentionProblem& p,
                   const Tensor& q) {
  args.same_device(name, t, "q", q);
  args.dtype(name, t, {DType::i32});
  args.shape(name, t, {p.batch});
  if (p.batch > 1 && t.strides()[0] != 1) args.contiguous(name, t);
}

}  // namespace

std::vector<int64_t> AttentionProblem::q_shape() const {
  if (rank3) return {q_len, heads, head_dim};
  return {batch, q_len, heads, head_dim};
}

std::vector<int64_t> AttentionProblem::kv_shape() const {
  if (rank3) return {kv_len, kv_heads, head_dim};
  return {batch, kv_len, kv_heads, head_dim};
}

std::vector<int64_t> AttentionProblem::logsumexp_shape() const {
  if (rank3) return {heads, q_len};
  return {batch, heads, q_len};
}

AttentionProblem check_attention(const OpArguments& args, const Tensor& q, const Tensor& k, const Tensor& v,
                                 const AttentionOptions& o) {
  args.rank_between("q", q, 3, 4);
  for (auto [name, t] : {std::pair{"k", &k}, std::pair{"v", &v}})
    if (t->rank() != q.rank())
      args.fail("{} must have q's rank {} ((B, S, K, H), or (S, K, H) for rank-3 inputs), but is {}", name, q.rank(),
                t->describe());
  args.same_device("q", q, "k", k);
  args.same_device("q", q, "v", v);
  args.dtype("q", q, {DType::f16, DType::bf16, DType::f32});
  args.same_dtype("q", q, "k", k);
  args.same_dtype("q", q, "v", v);
  if (k.shape() != v.shape())
    args.fail("k and v must have one shape, but k is {} and v is {}", k.describe(), v.describe());

  AttentionProblem p;
  p.q_in = &q;
  p.k_in = &k;
  p.v_in = &v;
  p.rank3 = q.rank() == 3;
  p.dtype = q.dtype();
  p.batch = p.rank3 ? 1 : q.dim(0);
  p.q_len = q.dim(-3);
  p.heads = q.dim(-2);
  p.head_dim = q.dim(-1);
  p.kv_len = k.dim(-3);
  p.kv_heads = k.dim(-2);
  if (!p.rank3 && k.dim(0) != p.batch)
    args.fail("q and k must have one batch size, but q is {} and k is {}", q.describe(), k.describe());
  if (k.dim(-1) != p.head_dim)
    args.fail("q and k must have one head dim H, but q is {} and k is {}", q.describe(), k.describe());
  if (p.head_dim % 8 != 0 || p.head_dim < 8 || p.head_dim > kMaxHeadDim)
    args.fail("the head dim H = {} (q is {}) must be a multiple of 8 from 8 to {}", p.head_dim, q.describe(),
              kMaxHeadDim);
  if (p.kv_heads < 1 || p.heads % p.kv_heads != 0)
    args.fail("q's head count N = {} must be a multiple of k's head count K = {} (q is {}, k is {})", p.heads,
              p.kv_heads, q.describe(), k.describe());
  if (p.kv_len < 1) args.fail("k and v must have at least one key (S = 0: k is {})", k.describe());
  if (p.q_len > kMaxLength || p.kv_len > kMaxLength || p.batch * p.heads > kMaxIndex)
    args.fail("T and S must be below 2^30 and B * N below 2^31 (B = {}, T = {}, S = {}, N = {})", p.batch, p.q_len,
              p.kv_len, p.heads);
  p.q = sequence_strides(args, "q", q);
  p.k = sequence_strides(args, "k", k);
  p.v = sequence_strides(args, "v", v);

  double scale = o.scale.value_or(1.0 / std::sqrt(static_cast<double>(p.head_dim)));
  p.scale = static_cast<float>(scale);  // the kernels scale in f32: a finite double may not be one
  if (!std::isfinite(p.scale)) args.fail("scale must be a finite f32, but is {}", scale);

  // The band of kept diagonals s - t: causal masks bound it above, the window on both sides.
  // Every diagonal lies in [-(T - 1), S - 1], so the bounds are clamped to [0, T] (left) and
  // [-T, S] (right) without changing what they keep.
  p.band = o.is_causal || o.causal_bottom_right || o.local_window.has_value();
  p.band_left = p.q_len;
  p.band_right = p.kv_len;
  if (o.local_window) {
    auto [left, right] = *o.local_window;
    if (left < 0 || right < 0)
      args.fail("local_window (left, right) = ({}, {}) must not be negative", left, right);
    p.band_left = std::min(left, p.q_len);
    p.band_right = std::min(right, p.kv_len);
  }
  if (o.is_causal) p.band_right = std::min<int64_t>(p.band_right, 0);
  if (o.causal_bottom_right) p.band_right = std::min(p.band_right, std::max(p.kv_len - p.q_len, -p.q_len));

  if (o.q_seqlens) check_seqlens(args, "q_seqlens", *o.q_seqlens, p, q);
  if (o.kv_seqlens) check_seqlens(args, "kv_seqlens", *o.kv_seqlens, p, q);
  p.q_seqlens = o.q_seqlens;
  p.kv_seqlens = o.kv_seqlens;
  if (o.bias) {
    args.same_device("bias", *o.bias, "q", q);
    args.dtype("bias", *o.bias, {DType::f16, DType::bf16, DType::f32});
    p.bias_strides = broadcast_strides(args, "bias", *o.bias, p);
    p.bias = o.bias;
  }
  if (o.mask) {
    args.same_device("mask", *o.mask, "q", q);
    args.dtype("mask", *o.mask, {DType::i1});
    p.mask_strides = broadcast_strides(args, "mask", *o.mask, p);
    p.mask = o.mask;
  }
  return p;
}

SequenceStrides check_like_q(const OpArguments& args, const AttentionProblem& p, const char* name, const Tensor& t,
                             DType dtype) {
  args.same_device(name, t, "q", *p.q_in);
  args.dtype(name, t, {dtype});
  args.shape(name, t, p.q_shape());
  return sequence_strides(args, name, t);
}

}  // namespace tilejit::ops::attention_detail

namespace tilejit::ops {

float masked_logit(DType dtype) {
  double largest = 0;
  switch (dtype) {
    case DType::f16: largest = 65504.0; break;
    case DType::bf16: largest = 0x1.fep127; break;
    default: largest = std::numeric_limits<float>::max(); break;
  }
  return static_cast<float>(-0.7 * std::min<double>(largest, std::numeric_limits<float>::max()));
}

}  // namespace tilejit::ops
