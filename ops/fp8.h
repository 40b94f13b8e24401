// FP8 with delayed scaling, as Transformer Engine's DelayedScaling recipe does it
// (SEMANTICS.md, "FP8 with delayed scaling"). Each tensor that is cast to fp8 has a scaling
// state on the device: a scale (f32 [1], starting at 1) and a history of the tensor's amax
// (f32 [amax_history_len], zeros). One step quantizes with the *current* scale and records
// this step's max|x| in history[0]; the update then derives the next scale from the history
// and rolls it. Everything runs on the stream, with no host round trip:
//
//   Fp8ScalingState state(device);                 // HYBRID: forward tensors are e4m3
//   Fp8Tensor a = fp8_quantize(x, state);           // quantize, then update the scale
//   GemmOptions o;                                  // ops/gemm.h
//   o.a_scale_inv = a.scale_inv, o.b_scale_inv = b.scale_inv;
//   Tensor y = gemm(a.data, b.data, o);             // (a.data . b.data) * both scale_invs
//
// A tensor quantized several times in one step (its amax being the max over all of them)
// quantizes with update_scale = false and calls fp8_update_scale once at the end of the step.
//
// NaN in x: the quantized element is the format's NaN, and the step's amax is NaN (the f32
// quiet NaN 0x7fc00000, whatever else the tensor holds), so the update keeps the old scale.
// With the 'max' algorithm that NaN stays in the history, and the scale stays, until it is
// rolled out. An inf in x quantizes to +-fmax and makes the amax inf, which keeps the scale too.
#pragma once

#include <cstdint>

#include "runtime/device.h"
#include "runtime/tensor.h"

namespace tilejit::ops {

// E4M3: f8e4m3 (max 448). E5M2: f8e5m2 (max 57344). HYBRID: forward tensors (activations,
// weights) E4M3 and gradients E5M2.
enum class Fp8Format { E4M3, E5M2, HYBRID };
// Which tensors a state scales: HYBRID picks its format by the role.
enum class Fp8TensorRole { forward, gradient };
// 'max': the amax is the largest entry of the history; 'most_recent': history[0].
enum class AmaxComputeAlgo { max, most_recent };

struct DelayedScalingRecipe {
  int margin = 0;                   // the new scale is divided by 2^margin; -126 to 126
  int64_t amax_history_len = 1024;  // at least 1
  AmaxComputeAlgo amax_compute_algo = AmaxComputeAlgo::max;
  Fp8Format fp8_format = Fp8Format::HYBRID;
};

// The fp8 dtype a tensor of `role` takes under `format` (f8e4m3 or f8e5m2).
DType fp8_dtype(Fp8Format format, Fp8TensorRole role);
// The largest finite value of an fp8 dtype: 448 (f8e4m3) or 57344 (f8e5m2).
float fp8_max(DType fp8);

// One tensor's delayed-scaling state, on a device.
class Fp8ScalingState {
 public:
  // scale = scale_inv = 1 and a zero history; copies to the device before returning. A
  // recipe with an out-of-range margin or history length is a tilejit::Error.
  explicit Fp8ScalingState(Device& device, const DelayedScalingRecipe& recipe = {},
                           Fp8TensorRole role = Fp8TensorRole::forward);
  // One owner: the update swaps the history buffers, which a copy would not see.
  Fp8ScalingState(const Fp8ScalingState&) = delete;
  Fp8ScalingState& operator=(const Fp8ScalingState&) = delete;
  Fp8ScalingState(Fp8ScalingState&&) = default;
  Fp8ScalingState& operator=(Fp8ScalingState&&) = default;

  const DelayedScalingRecipe& recipe() const { return recipe_; }
  DType dtype() const { return dtype_; }  // the fp8 dtype the tensor is quantized to
  Device& device() const { return scale_.device(); }
  // f32 [1]: the scale the next quantization multiplies by.
  const Tensor& scale() const { return scale_; }
  // f32 [1]: 1 / scale of the latest quantization (1 before the first).
  const Tensor& scale_inv() const { return scale_inv_; }
  // f32 [amax_history_len]: history[0] is the amax recorded since the last update (the max
  // over the quantizations since), history[1..] the amaxes of earlier steps as the update's
  // roll leaves them. The update writes the rolled history into a second buffer and makes
  // that the history, so take this tensor anew after each update rather than keeping it.
  const Tensor& amax_history() const { return amax_history_; }

 private:
  friend void fp8_update_scale(Fp8ScalingState& state, Stream* stream);
  DelayedScalingRecipe recipe_;
  DType dtype_;
  Tensor scale_, scale_inv_, amax_history_, rolled_history_;
};

// An fp8 tensor with the scale it was quantized with: x ~= data * scale_inv.
struct Fp8Tensor {
  Tensor data;       // f8e4m3 or f8e5m2, x's shape
  Tensor scale_inv;  // f32 [1]: 1 / the scale used; this tensor's own, later steps leave it alone
  DType format() const { return data.dtype(); }
};

struct Fp8QuantizeOptions {
  // true: a whole delayed-scaling step, the quantization followed by fp8_update_scale.
  // false: only the quantization, its amax joining history[0] (max with what is there).
  bool update_scale = true;
};

// data = clip(x * scale, -fmax, fmax) cast to state.dtype() with round to nearest even;
// scale_inv = 1 / scale; history[0] = max(history[0], max|x|). x: f32, f16 or bf16, any
// shape, contiguous, on the state's device.
Fp8Tensor fp8_quantize(const Tensor& x, Fp8ScalingState& state, const Fp8QuantizeOptions& options = {},
                       Stream* stream = nullptr);

// The update that ends a step: amax = max(history) ('max') or history[0] ('most_recent');
// scale = (fmax / amax) / 2^margin unless amax <= 0 or is not finite (then the scale
// stays), and f32's largest where that is past it (a tiny amax, as Transformer Engine's
// update does: an inf scale would quantize 0 to NaN); the history rolls left by one (history[i] = history[i+1], the last entry takes
// the old history[0]) and history[0] becomes 0. One DSL kernel on the stream.
void fp8_update_scale(Fp8ScalingState& state, Stream* stream = nullptr);

}  // namespace tilejit::ops
