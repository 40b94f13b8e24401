// Attention on the host in double precision, for checking the kernels on sampled rows: the
// library runs (runs.h) and the tuning candidates (tuning.h) share it. Inputs are contiguous
// BTNH: q (B, T, N, H), k and v (B, S, K, H); the mask, when any, is the top-left causal one.
#pragma once

#include <cstdint>
#include <vector>

#include "dsl/dtype.h"

namespace tilejit::ops::attention_detail {

struct HostAttention {
  int64_t B = 0, T = 0, S = 0, N = 0, K = 0, H = 0;
  bool causal = false;
  double scale = 1;
  DType dtype = DType::bf16;     // of the inputs: masked logits are masked_logit(dtype)
  std::vector<double> q, k, v;   // the inputs' values
  std::vector<double> dout;      // the output's gradient (B, T, N, H), for the backward pass

  double q_at(int64_t b, int64_t t, int64_t n, int64_t h) const { return q[size_t(((b * T + t) * N + n) * H + h)]; }
  // Key and value s of query head n (read from kv head n / (N / K)).
  double k_at(int64_t b, int64_t s, int64_t n, int64_t h) const {
    return k[size_t(((b * S + s) * K + n / (N / K)) * H + h)];
  }
  double v_at(int64_t b, int64_t s, int64_t n, int64_t h) const {
    return v[size_t(((b * S + s) * K + n / (N / K)) * H + h)];
  }
  double dout_at(int64_t b, int64_t t, int64_t n, int64_t h) const {
    return dout[size_t(((b * T + t) * N + n) * H + h)];
  }
  // The softmax weights of row (b, n, t) over every key into `weights`; returns its logsumexp.
  double softmax_row(int64_t b, int64_t n, int64_t t, std::vector<double>& weights) const;
};

// How far a kernel's result may be from the reference: atol + rtol * (the sum of the
// magnitudes of the terms it adds up).
struct Tolerance {
  double atol = 0, rtol = 0;
};
// For inputs of `dtype`: 16-bit ones round the softmax weights before p · v, f32 runs tf32x3.
Tolerance attention_tolerance(DType dtype);

// The largest error seen over checked values, and whether all were within tolerance (never
// for NaN).
struct ErrorTally {
  bool ok = true;
  double max_abs_error = 0;
  void add(double got, double want, double terms, const Tolerance& tolerance);
  void merge(const ErrorTally& other);
};

// The forward's output and logsumexp on up to 32 query rows of up to 4 (batch, head) pairs,
// computed once (on every host thread) and checked against any number of results.
class SampledForward {
 public:
  explicit SampledForward(const HostAttention& p);
  // `out` (B, T, N, H) and `lse` (B, N, T) as values.
  ErrorTally check(const std::vector<double>& out, const std::vector<double>& lse) const;

 private:
  struct Row {
    int64_t b, n, t;
    double lse;
    std::vector<double> out, terms;  // (H): the output and the sum of its terms' magnitudes
  };
  int64_t T_, N_, H_;
  Tolerance tolerance_;
  std::vector<Row> rows_;
};

// The backward pass's gradients on sampled rows and keys, computed once (on every host
// thread) and checked against any number of results: dq on up to 32 query rows and dk, dv on
// up to 32 keys, of up to two (batch, kv head) pairs and every query head of their groups.
class SampledBackward {
 public:
  explicit SampledBackward(const HostAttention& p);
  // `dq` (B, T, N, H); `dk` and `dv` (B, S, K, H), as values.
  ErrorTally check_dq(const std::vector<double>& dq) const;
  ErrorTally check_dkdv(const std::vector<double>& dk, const std::vector<double>& dv) const;

 private:
  struct Expected {
    size_t at;           // the element's index in its tensor
    double want, terms;  // its value and the sum of its terms' magnitudes
  };
  ErrorTally check(const std::vector<Expected>& expected, const std::vector<double>& got) const;
  Tolerance tolerance_;
  std::vector<Expected> dq_, dk_, dv_;
};

}  // namespace tilejit::ops::attention_detail
