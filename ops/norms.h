// LayerNorm and RMSNorm with Transformer Engine's semantics (SEMANTICS.md, "Normalization"),
// forward and backward, over the last dimension of x:
//
//   NormOptions options;
//   options.store_statistics = true;                    // mean and rsigma for the backward
//   NormOutput out = layer_norm(x, gamma, beta, options);   // x: bf16[batch, seq, hidden]
//   NormGradients g = layer_norm_backward(dy, x, *out.mean, *out.rsigma, gamma);
//
// x has rank >= 1 and any hidden size (the last dimension) >= 1; every other dimension is a
// row. Statistics and arithmetic are f32; y is in x's dtype.
//
// Dtypes: x (and dy) f32, f16 or bf16; gamma f32 or x's dtype, and beta gamma's dtype; y and
// dx x's dtype; dgamma and dbeta gamma's dtype; mean and rsigma f32 of x's leading shape
// (x's shape without its last dimension). All contiguous, on one device.
//
// Large hidden sizes: up to 8192 a row is held in registers (several rows per program when
// it is short); beyond, the kernels loop over the row in blocks of 4096.
//
// The backward's dgamma and dbeta are deterministic: each program sums its rows' terms into
// its own partial row (f32), and a second kernel adds the partial rows in a fixed order.
#pragma once

#include <optional>

#include "ops/fp8.h"
#include "runtime/device.h"
#include "runtime/tensor.h"

namespace tilejit::ops {

struct NormOptions {
  float eps = 1e-6f;  // added to the variance (LayerNorm) or to mean(x^2) (RMSNorm)
  // LayerNorm only: y = xhat * (1 + gamma) + beta. With RMSNorm it is an error.
  bool zero_centered_gamma = false;
  // Also return mean (LayerNorm) and rsigma, f32 of x's leading shape.
  bool store_statistics = false;
  // Not null: also quantize y (as stored, in x's dtype) through this state, exactly as
  // fp8_quantize(y, *fp8_state, fp8_options) does, in the same kernel. Transformer Engine
  // quantizes the f32 value before rounding to x's dtype; for f16 / bf16 x the two can differ
  // where that rounding lands on an fp8 tie, and the amax (so the next scale) by that
  // rounding (2^-9 relative for bf16).
  Fp8ScalingState* fp8_state = nullptr;
  Fp8QuantizeOptions fp8_options;
};

struct NormOutput {
  Tensor y;
  std::optional<Tensor> mean;      // LayerNorm with store_statistics
  std::optional<Tensor> rsigma;    // with store_statistics
  std::optional<Fp8Tensor> y_fp8;  // with an fp8_state
};

// y = (x - mean) * rsigma * gamma + beta, rsigma = 1 / sqrt(var + eps), var biased.
NormOutput layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, const NormOptions& options = {},
                      Stream* stream = nullptr);
// y = x * rsigma * gamma, rsigma = 1 / sqrt(mean(x^2) + eps).
NormOutput rms_norm(const Tensor& x, const Tensor& gamma, const NormOptions& options = {}, Stream* stream = nullptr);

struct NormBackwardOptions {
  bool zero_centered_gamma = false;  // as the forward had it (LayerNorm only)
};

struct NormGradients {
  Tensor dx;
  Tensor dgamma;
  std::optional<Tensor> dbeta;  // LayerNorm
};

// The gradients of layer_norm given dy and the forward's x, mean, rsigma and gamma:
// dx = rsigma * (dy*g - mean(dy*g) - xhat * mean(dy*g * xhat)) with g = gamma (or 1 + gamma),
// xhat = (x - mean) * rsigma; dgamma = sum over rows of dy * xhat; dbeta = sum of dy.
NormGradients layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rsigma,
                                  const Tensor& gamma, const NormBackwardOptions& options = {},
                                  Stream* stream = nullptr);
// The gradients of rms_norm: dx = rsigma * (dy*gamma - xhat * mean(dy*gamma * xhat)) with
// xhat = x * rsigma; dgamma = sum over rows of dy * xhat.
NormGradients rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& rsigma, const Tensor& gamma,
                                const NormBackwardOptions& options = {}, Stream* stream = nullptr);

}  // namespace tilejit::ops
