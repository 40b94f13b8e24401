// The attention tests' inputs, reference and checks (attention_test_util.h).
#include "tests/ops/attention_test_util.h"

#include <algorithm>
#include <sstream>

#include "ops/attention/kernel_arguments.h"
#include "ops/common/op_arguments.h"

namespace tjops {

using namespace tilejit::ops::attention_detail;

namespace {

// Relative error allowed against the sum of the magnitudes of an element's terms: the
// operands' rounding when p and ds are cast to the input dtype for the tensor cores, and
// tf32x3's for f32.
double rtol_of(DType d) {
  switch (d) {
    case DType::f32: return 3e-5;
    case DType::f16: return 5e-3;
    default: return 3e-2;
  }
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// The flat index of (b, n, t, s) in a tensor of `shape` broadcast to (B, N, T, S).
size_t broadcast_index(const std::vector<int64_t>& shape, int64_t b, int64_t n, int64_t t, int64_t s) {
  int64_t i[4] = {b, n, t, s};
  size_t flat = 0;
  for (int d = 0; d < 4; ++d) flat = flat * size_t(shape[size_t(d)]) + size_t(shape[size_t(d)] == 1 ? 0 : i[d]);
  return flat;
}

Tensor upload_seqlens(const std::vector<int32_t>& lens, Device& device) {
  Tensor t = Tensor::empty(device, DType::i32, {static_cast<int64_t>(lens.size())});
  t.copy_from_host(std::span<const int32_t>(lens));
  return t;
}

std::string shape_text(const std::vector<int64_t>& s) { return tilejit::ops::shape_string(s); }

}  // namespace

std::string describe(const AttentionCase& c) {
  std::ostringstream o;
  o << name_of(c.dtype) << " B=" << c.B << " T=" << c.T << " S=" << c.S << " N=" << c.N << " K=" << c.K
    << " H=" << c.H;
  if (c.rank3) o << " rank3";
  if (c.layout == Layout::bnth) o << " bnth";
  if (c.layout == Layout::padded) o << " padded-rows";
  if (c.scale) o << " scale=" << *c.scale;
  if (c.causal) o << " causal";
  if (c.bottom_right) o << " causal_bottom_right";
  if (c.window) o << " window=(" << c.window->first << "," << c.window->second << ")";
  auto lens = [&](const char* name, const std::vector<int32_t>& v) {
    if (v.empty()) return;
    o << " " << name << "=[";
    for (size_t i = 0; i < v.size(); ++i) o << (i ? "," : "") << v[i];
    o << "]";
  };
  lens("q_seqlens", c.q_lens);
  lens("kv_seqlens", c.kv_lens);
  if (!c.bias_shape.empty())
    o << " bias " << name_of(c.bias_dtype) << shape_text(c.bias_shape) << (c.bias_transposed ? " transposed" : "");
  if (c.bias_value) o << " bias value " << fmt_ld(*c.bias_value);
  if (c.bias_at) o << " bias by position";
  if (!c.mask_shape.empty()) o << " mask" << shape_text(c.mask_shape) << " keep " << c.mask_keep;
  o << " on " << c.device;
  return o.str();
}

AttentionInputs random_inputs(const AttentionCase& c, Rng& rng) {
  AttentionInputs in;
  size_t nq = size_t(c.B * c.T * c.N * c.H), nk = size_t(c.B * c.S * c.K * c.H);
  in.q = random_host(c.dtype, nq, rng, -c.logit_range, c.logit_range);
  in.k = random_host(c.dtype, nk, rng, -c.logit_range, c.logit_range);
  in.v = random_host(c.dtype, nk, rng, -1, 1);
  in.dout = random_host(c.dtype, nq, rng, -1, 1);
  if (!c.bias_shape.empty()) {
    in.bias = random_host(c.bias_dtype, size_t(numel(c.bias_shape)), rng, -2, 2);
    if (c.bias_value)
      for (size_t i = 0; i < in.bias->size(); ++i) in.bias->set(i, *c.bias_value);
    if (c.bias_at) {
      const auto rows = size_t(c.bias_shape[2]), cols = size_t(c.bias_shape[3]);
      for (size_t i = 0; i < in.bias->size(); ++i)
        in.bias->set(i, c.bias_at(int64_t(i / cols % rows), int64_t(i % cols)));
    }
  }
  if (!c.mask_shape.empty()) {
    in.mask = Host(DType::i1, size_t(numel(c.mask_shape)));
    for (size_t i = 0; i < in.mask->size(); ++i) in.mask->set(i, rng.coin(c.mask_keep) ? 1 : 0);
  }
  return in;
}

AttentionReference attention_reference(const AttentionCase& c, const AttentionInputs& in) {
  const int64_t B = c.B, T = c.T, S = c.S, N = c.N, K = c.K, H = c.H, G = N / K;
  const LD scale = c.scale ? static_cast<LD>(*c.scale) : 1.0L / std::sqrt(static_cast<LD>(H));
  const LD masked = static_cast<float>(-0.7L * format_of(c.dtype).max_finite());
  auto qi = [&](int64_t b, int64_t t, int64_t n, int64_t h) { return size_t(((b * T + t) * N + n) * H + h); };
  auto ki = [&](int64_t b, int64_t s, int64_t kh, int64_t h) { return size_t(((b * S + s) * K + kh) * H + h); };

  AttentionReference r;
  size_t nq = size_t(B * T * N * H), nk = size_t(B * S * K * H);
  r.out.assign(nq, 0), r.out_terms.assign(nq, 0), r.lse.assign(size_t(B * N * T), 0);
  r.dq.assign(nq, 0), r.dq_terms.assign(nq, 0);
  r.dk.assign(nk, 0), r.dk_terms.assign(nk, 0), r.dv.assign(nk, 0), r.dv_terms.assign(nk, 0);
  const size_t keys = static_cast<size_t>(S);
  std::vector<LD> logits(keys), p(keys), dp(keys), o(static_cast<size_t>(H));
  std::vector<bool> keep(keys);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t n = 0; n < N; ++n) {
      const int64_t kh = n / G;
      for (int64_t t = 0; t < T; ++t) {
        const bool active = c.q_lens.empty() || t < c.q_lens[size_t(b)];
        for (int64_t s = 0; s < S; ++s) {
          LD dot = 0;
          for (int64_t h = 0; h < H; ++h) dot += in.q.get(qi(b, t, n, h)) * in.k.get(ki(b, s, kh, h));
          LD x = dot * scale;
          if (in.bias) x += in.bias->get(broadcast_index(c.bias_shape, b, n, t, s));
          bool kept = active && (c.kv_lens.empty() || s < c.kv_lens[size_t(b)]);
          if (c.causal) kept = kept && s <= t;
          if (c.bottom_right) kept = kept && s <= t + (S - T);
          if (c.window) kept = kept && t - c.window->first <= s && s <= t + c.window->second;
          if (in.mask) kept = kept && in.mask->get(broadcast_index(c.mask_shape, b, n, t, s)) != 0;
          keep[size_t(s)] = kept;
          logits[size_t(s)] = kept ? x : masked;
        }
        LD m = *std::max_element(logits.begin(), logits.end()), z = 0;
        for (int64_t s = 0; s < S; ++s) z += p[size_t(s)] = std::exp(logits[size_t(s)] - m);
        for (auto& x : p) x /= z;
        r.lse[size_t((b * N + n) * T + t)] = m + std::log(z);
        if (!active) continue;  // out and every gradient of the row stay 0
        for (int64_t h = 0; h < H; ++h) {
          LD sum = 0, terms = 0;
          for (int64_t s = 0; s < S; ++s) {
            LD x = p[size_t(s)] * in.v.get(ki(b, s, kh, h));
            sum += x, terms += std::fabs(x);
          }
          o[size_t(h)] = sum;
          r.out[qi(b, t, n, h)] = sum, r.out_terms[qi(b, t, n, h)] = terms;
        }
        // D = sum_s p dp = dout · o; |dout| · |o| bounds the rounding of the kernel's D.
        LD D = 0, D_terms = 0;
        for (int64_t h = 0; h < H; ++h) {
          LD g = in.dout.get(qi(b, t, n, h));
          D += g * o[size_t(h)], D_terms += std::fabs(g * o[size_t(h)]);
        }
        for (int64_t s = 0; s < S; ++s) {
          LD sum = 0;
          for (int64_t h = 0; h < H; ++h) sum += in.dout.get(qi(b, t, n, h)) * in.v.get(ki(b, s, kh, h));
          dp[size_t(s)] = sum;
        }
        for (int64_t s = 0; s < S; ++s) {
          const LD ps = p[size_t(s)];
          for (int64_t h = 0; h < H; ++h) {
            LD g = in.dout.get(qi(b, t, n, h));
            r.dv[ki(b, s, kh, h)] += ps * g, r.dv_terms[ki(b, s, kh, h)] += std::fabs(ps * g);
          }
          if (!keep[size_t(s)]) continue;  // a masked logit is a constant: no gradient to q and k
          const LD ds = ps * (dp[size_t(s)] - D), ds_terms = ps * (std::fabs(dp[size_t(s)]) + D_terms);
          for (int64_t h = 0; h < H; ++h) {
            LD kv = in.k.get(ki(b, s, kh, h)), qv = in.q.get(qi(b, t, n, h));
            r.dq[qi(b, t, n, h)] += ds * scale * kv, r.dq_terms[qi(b, t, n, h)] += ds_terms * std::fabs(scale * kv);
            r.dk[ki(b, s, kh, h)] += ds * scale * qv, r.dk_terms[ki(b, s, kh, h)] += ds_terms * std::fabs(scale * qv);
          }
        }
      }
    }
  return r;
}

Tensor upload_sequence(const AttentionCase& c, const Host& h, int64_t len, int64_t heads, Device& device) {
  const int64_t B = c.B, H = c.H;
  std::vector<int64_t> logical = {B, len, heads, H};
  Tensor t = [&] {
    switch (c.layout) {
      case Layout::bnth: {
        Host phys(h.dtype, h.size());
        for (int64_t b = 0; b < B; ++b)
          for (int64_t i = 0; i < len; ++i)
            for (int64_t n = 0; n < heads; ++n)
              for (int64_t x = 0; x < H; ++x)
                phys.set_raw(size_t(((b * heads + n) * len + i) * H + x),
                             h.raw(size_t(((b * len + i) * heads + n) * H + x)));
        return upload(phys, {B, heads, len, H}, device).permute({0, 2, 1, 3});
      }
      case Layout::padded: {
        Host phys(h.dtype, size_t(B * len * heads * (H + 8)));
        for (size_t i = 0; i < phys.size(); ++i) phys.set(i, 1e4);  // never read
        for (size_t row = 0; row < size_t(B * len * heads); ++row)
          for (int64_t x = 0; x < H; ++x)
            phys.set_raw(row * size_t(H + 8) + size_t(x), h.raw(row * size_t(H) + size_t(x)));
        return upload(phys, {B, len, heads, H + 8}, device).slice(3, 0, H);
      }
      default: return upload(h, logical, device);
    }
  }();
  return c.rank3 ? t.select(0, 0) : t;
}

AttentionOptions case_options(const AttentionCase& c, const AttentionInputs& in, Device& device) {
  AttentionOptions o;
  o.scale = c.scale;
  o.is_causal = c.causal;
  o.causal_bottom_right = c.bottom_right;
  o.local_window = c.window;
  if (!c.q_lens.empty()) o.q_seqlens = upload_seqlens(c.q_lens, device);
  if (!c.kv_lens.empty()) o.kv_seqlens = upload_seqlens(c.kv_lens, device);
  if (in.bias) {
    if (c.bias_transposed) {
      const auto& s = c.bias_shape;
      Host phys(in.bias->dtype, in.bias->size());
      for (int64_t i = 0; i < s[0] * s[1]; ++i)
        for (int64_t t = 0; t < s[2]; ++t)
          for (int64_t x = 0; x < s[3]; ++x)
            phys.set_raw(size_t((i * s[3] + x) * s[2] + t), in.bias->raw(size_t((i * s[2] + t) * s[3] + x)));
      o.bias = upload(phys, {s[0], s[1], s[3], s[2]}, device).permute({0, 1, 3, 2});
    } else {
      o.bias = upload(*in.bias, c.bias_shape, device);
    }
  }
  if (in.mask) o.mask = upload(*in.mask, c.mask_shape, device);
  o.return_logsumexp = true;
  o.deterministic = c.deterministic;
  return o;
}

namespace {

struct Results {
  Tensor out, lse;
  std::optional<AttentionGradients> grads;
};

// Through the internal launches into poisoned outputs: every element must be written.
Results run_launches(const AttentionCase& c, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& dout,
                     const AttentionOptions& options, Device& device) {
  AttentionProblem p = check_attention(tilejit::ops::OpArguments("attention"), q, k, v, options);
  AttentionConfigs configs = c.configs.value_or(choose_configs(c.dtype, c.H, device.info()));
  Results r{poisoned(c.dtype, p.q_shape(), device), poisoned(DType::f32, p.logsumexp_shape(), device), {}};
  Stream& stream = device.default_stream();
  launch_forward(p, configs.forward, r.out, &r.lse, stream);
  if (!c.backward) return r;
  BackwardBuffers buffers{r.out,
                          dout,
                          r.lse,
                          contiguous_sequence_strides(p.q_shape()),
                          check_like_q(tilejit::ops::OpArguments("attention_backward"), p, "dout", dout, c.dtype),
                          poisoned(DType::f32, row_stats_shape(p), device),
                          poisoned(DType::i32, {p.batch, p.heads}, device),
                          poisoned(c.dtype, p.q_shape(), device),
                          poisoned(c.dtype, p.kv_shape(), device),
                          poisoned(c.dtype, p.kv_shape(), device),
                          configs.dkdv.fuse_dq ? std::optional<Tensor>(poisoned(DType::f32, p.q_shape(), device))
                                               : std::nullopt};
  launch_backward(p, configs, buffers, stream);
  r.grads = AttentionGradients{buffers.dq, buffers.dk, buffers.dv};
  return r;
}

Results run_ops(const AttentionCase& c, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& dout,
                const AttentionOptions& options) {
  auto [out, lse] = tilejit::ops::attention(q, k, v, options);
  Results r{out, *lse, {}};
  if (c.backward) r.grads = tilejit::ops::attention_backward(q, k, v, out, dout, *lse, options);
  return r;
}

}  // namespace

void check_attention_case(const AttentionCase& c) {
  TJ_SEEDED_RNG(rng);
  SCOPED_TRACE(describe(c));
  Device& device = Device::by_name(c.device);
  AttentionInputs in = random_inputs(c, rng);
  AttentionReference ref = attention_reference(c, in);
  Tensor q = upload_sequence(c, in.q, c.T, c.N, device);
  Tensor k = upload_sequence(c, in.k, c.S, c.K, device);
  Tensor v = upload_sequence(c, in.v, c.S, c.K, device);
  Tensor dout = upload_sequence(c, in.dout, c.T, c.N, device);
  AttentionOptions options = case_options(c, in, device);
  Results r = c.public_api ? run_ops(c, q, k, v, dout, options) : run_launches(c, q, k, v, dout, options, device);
  device.default_stream().synchronize();

  std::vector<int64_t> q_shape = q.shape(), kv_shape = k.shape(), lse_shape = {c.N, c.T};
  if (!c.rank3) lse_shape.insert(lse_shape.begin(), c.B);
  EXPECT_EQ(r.out.shape(), q_shape);
  EXPECT_EQ(r.out.dtype(), c.dtype);
  EXPECT_EQ(r.lse.shape(), lse_shape);
  EXPECT_EQ(r.lse.dtype(), DType::f32);

  const double rtol = rtol_of(c.dtype);
  auto where = [&](size_t i) {
    size_t h = i % size_t(c.H), n = i / size_t(c.H) % size_t(c.N), t = i / size_t(c.H * c.N) % size_t(c.T);
    return "t=" + std::to_string(t) + " n=" + std::to_string(n) + " h=" + std::to_string(h);
  };
  auto kv_where = [&](size_t i) {
    size_t h = i % size_t(c.H), kh = i / size_t(c.H) % size_t(c.K), s = i / size_t(c.H * c.K) % size_t(c.S);
    return "s=" + std::to_string(s) + " kv head=" + std::to_string(kh) + " h=" + std::to_string(h);
  };
  auto bound = [&](const std::vector<LD>& terms) {  // rtol * terms + 1e-6
    std::vector<LD> s(terms.size());
    for (size_t i = 0; i < s.size(); ++i) s[i] = terms[i] + 1e-6L / rtol;
    return s;
  };
  expect_scaled("out", download(r.out).values(), ref.out, bound(ref.out_terms), rtol, where);
  // Logits are f32: logsumexp within f32's rounding of their size (masked ones included).
  std::vector<LD> lse_bound(ref.lse.size());
  for (size_t i = 0; i < lse_bound.size(); ++i) lse_bound[i] = std::fabs(ref.lse[i]) + 10;
  expect_scaled("logsumexp", download(r.lse).values(), ref.lse, lse_bound, 1e-5);
  if (!r.grads) return;
  EXPECT_EQ(r.grads->dq.shape(), q_shape);
  EXPECT_EQ(r.grads->dk.shape(), kv_shape);
  EXPECT_EQ(r.grads->dv.shape(), kv_shape);
  expect_scaled("dq", download(r.grads->dq).values(), ref.dq, bound(ref.dq_terms), rtol, where);
  expect_scaled("dk", download(r.grads->dk).values(), ref.dk, bound(ref.dk_terms), rtol, kv_where);
  expect_scaled("dv", download(r.grads->dv).values(), ref.dv, bound(ref.dv_terms), rtol, kv_where);
}

}  // namespace tjops
