#include "ops/attention/host_reference.h"

#include <algorithm>
#include <cmath>

#include "autotune/parallel.h"
#include "ops/attention.h"
#include "ops/common/sampled_indices.h"

namespace tilejit::ops::attention_detail {

double HostAttention::softmax_row(int64_t b, int64_t n, int64_t t, std::vector<double>& weights) const {
  weights.assign(size_t(S), 0);
  for (int64_t s = 0; s < S; ++s) {
    double dot = 0;
    for (int64_t h = 0; h < H; ++h) dot += q_at(b, t, n, h) * k_at(b, s, n, h);
    weights[size_t(s)] = causal && s > t ? double{masked_logit(dtype)} : dot * scale;
  }
  double m = *std::max_element(weights.begin(), weights.end()), z = 0;
  for (double& w : weights) z += w = std::exp(w - m);
  for (double& w : weights) w /= z;
  return m + std::log(z);
}

Tolerance attention_tolerance(DType dtype) {
  switch (dtype) {
    case DType::f32: return {1e-6, 3e-5};
    case DType::f16: return {1e-3, 5e-3};
    default: return {1e-3, 3e-2};
  }
}

void ErrorTally::add(double got, double want, double terms, const Tolerance& tolerance) {
  double e = std::isnan(got) ? INFINITY : std::fabs(got - want);
  max_abs_error = std::max(max_abs_error, e);
  ok = ok && e <= tolerance.atol + tolerance.rtol * terms;
}

void ErrorTally::merge(const ErrorTally& other) {
  ok = ok && other.ok;
  max_abs_error = std::max(max_abs_error, other.max_abs_error);
}

SampledForward::SampledForward(const HostAttention& p)
    : T_(p.T), N_(p.N), H_(p.H), tolerance_(attention_tolerance(p.dtype)) {
  for (int64_t pair : sampled_indices(p.B * p.N, 4))
    for (int64_t t : sampled_indices(p.T, 32)) rows_.push_back({pair / p.N, pair % p.N, t, 0, {}, {}});
  autotune::run_in_parallel(rows_.size(), 0, [&](size_t i) {
    Row& row = rows_[i];
    std::vector<double> weights;
    row.lse = p.softmax_row(row.b, row.n, row.t, weights);
    row.out.assign(size_t(p.H), 0);
    row.terms.assign(size_t(p.H), 0);
    for (int64_t s = 0; s < p.S; ++s)
      for (int64_t h = 0; h < p.H; ++h) {
        double x = weights[size_t(s)] * p.v_at(row.b, s, row.n, h);
        row.out[size_t(h)] += x, row.terms[size_t(h)] += std::fabs(x);
      }
  });
}

ErrorTally SampledForward::check(const std::vector<double>& out, const std::vector<double>& lse) const {
  ErrorTally tally;
  for (const Row& row : rows_) {
    // logsumexp: f32 arithmetic on values of the logits' magnitude.
    tally.add(lse[size_t((row.b * N_ + row.n) * T_ + row.t)], row.lse, std::fabs(row.lse) * 1e-4 / tolerance_.rtol,
              tolerance_);
    for (int64_t h = 0; h < H_; ++h)
      tally.add(out[size_t(((row.b * T_ + row.t) * N_ + row.n) * H_ + h)], row.out[size_t(h)], row.terms[size_t(h)],
                tolerance_);
  }
  return tally;
}

SampledBackward::SampledBackward(const HostAttention& p) : tolerance_(attention_tolerance(p.dtype)) {
  const int64_t G = p.N / p.K;
  const std::vector<int64_t> checked_rows = sampled_indices(p.T, 32), checked_keys = sampled_indices(p.S, 32);
  for (int64_t pair : sampled_indices(p.B * p.K, 2)) {
    const int64_t b = pair / p.K, kv_head = pair % p.K;
    // Every row of the group's heads: its weights at the checked keys, dp there, delta.
    struct Row {
      std::vector<double> p, dp;  // over the checked keys (every key for the checked rows)
      double delta = 0, delta_terms = 0;
    };
    std::vector<Row> all(size_t(G * p.T));
    autotune::run_in_parallel(all.size(), 0, [&](size_t i) {
      std::vector<double> weights;
      const int64_t n = kv_head * G + int64_t(i) / p.T, t = int64_t(i) % p.T;
      p.softmax_row(b, n, t, weights);
      Row& row = all[i];
      bool every_key = std::binary_search(checked_rows.begin(), checked_rows.end(), t);
      for (int64_t h = 0; h < p.H; ++h) {
        double o = 0;
        for (int64_t s = 0; s < p.S; ++s) o += weights[size_t(s)] * p.v_at(b, s, n, h);
        row.delta += p.dout_at(b, t, n, h) * o, row.delta_terms += std::fabs(p.dout_at(b, t, n, h) * o);
      }
      for (int64_t s = 0; s < p.S; ++s) {
        if (!every_key && !std::binary_search(checked_keys.begin(), checked_keys.end(), s)) continue;
        double dp = 0;
        for (int64_t h = 0; h < p.H; ++h) dp += p.dout_at(b, t, n, h) * p.v_at(b, s, n, h);
        row.p.push_back(weights[size_t(s)]), row.dp.push_back(dp);
      }
    });

    // ds = p (dp - delta) at kept keys; a causally masked logit passes no gradient.
    auto gradient = [&](const Row& row, size_t i, int64_t t, int64_t s, double& terms) {
      terms = row.p[i] * (std::fabs(row.dp[i]) + row.delta_terms) * p.scale;
      return p.causal && s > t ? 0.0 : row.p[i] * (row.dp[i] - row.delta) * p.scale;
    };
    for (int64_t g = 0; g < G; ++g)
      for (int64_t t : checked_rows) {
        const int64_t n = kv_head * G + g;
        const Row& row = all[size_t(g * p.T + t)];
        for (int64_t h = 0; h < p.H; ++h) {
          double sum = 0, terms = 0, ds_terms = 0;
          for (int64_t s = 0; s < p.S; ++s) {
            double ds = gradient(row, size_t(s), t, s, ds_terms);
            sum += ds * p.k_at(b, s, n, h), terms += ds_terms * std::fabs(p.k_at(b, s, n, h));
          }
          dq_.push_back({size_t(((b * p.T + t) * p.N + n) * p.H + h), sum, terms});
        }
      }
    for (size_t key = 0; key < checked_keys.size(); ++key) {
      const int64_t s = checked_keys[key];
      for (int64_t h = 0; h < p.H; ++h) {
        double dk_sum = 0, dk_terms = 0, dv_sum = 0, dv_terms = 0, ds_terms = 0;
        for (int64_t g = 0; g < G; ++g)
          for (int64_t t = 0; t < p.T; ++t) {
            const int64_t n = kv_head * G + g;
            const Row& row = all[size_t(g * p.T + t)];
            bool every_key = std::binary_search(checked_rows.begin(), checked_rows.end(), t);
            size_t i = every_key ? size_t(s) : key;
            double ds = gradient(row, i, t, s, ds_terms);
            dk_sum += ds * p.q_at(b, t, n, h), dk_terms += ds_terms * std::fabs(p.q_at(b, t, n, h));
            double x = row.p[i] * p.dout_at(b, t, n, h);
            dv_sum += x, dv_terms += std::fabs(x);
          }
        size_t at = size_t(((b * p.S + s) * p.K + kv_head) * p.H + h);
        dk_.push_back({at, dk_sum, dk_terms});
        dv_.push_back({at, dv_sum, dv_terms});
      }
    }
  }
}

ErrorTally SampledBackward::check(const std::vector<Expected>& expected, const std::vector<double>& got) const {
  ErrorTally tally;
  for (const Expected& e : expected) tally.add(got[e.at], e.want, e.terms, tolerance_);
  return tally;
}

ErrorTally SampledBackward::check_dq(const std::vector<double>& dq) const { return check(dq_, dq); }

ErrorTally SampledBackward::check_dkdv(const std::vector<double>& dk, const std::vector<double>& dv) const {
  ErrorTally tally = check(dk_, dk);
  tally.merge(check(dv_, dv));
  return tally;
}

}  // namespace tilejit::ops::attention_detail
