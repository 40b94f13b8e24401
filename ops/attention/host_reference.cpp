#include "ops/attention/host_reference.h"

#include <algorithm>
#include <cmath>

#include "autotune/parallel.h"
#include "ops/attention.h"

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

std::vector<int64_t> spread(int64_t n, int64_t count) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < std::min(n, count); ++i) out.push_back(i * n / std::min(n, count));
  if (n > count) out.back() = n - 1;
  return out;
}

SampledForward::SampledForward(const HostAttention& p)
    : T_(p.T), N_(p.N), H_(p.H), tolerance_(attention_tolerance(p.dtype)) {
  for (int64_t pair : spread(p.B * p.N, 4))
    for (int64_t t : spread(p.T, 32)) rows_.push_back({pair / p.N, pair % p.N, t, 0, {}, {}});
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

}  // namespace tilejit::ops::attention_detail
