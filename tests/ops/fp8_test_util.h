// Helpers for the fp8 and norm tests: the delayed-scaling recipe on the host, in long double
// straight from SEMANTICS.md ("FP8 with delayed scaling"), with the fp8 encodings of
// tests/emu/ops_test_util.h; checks of a device state and of fp8 data against it; and tensors
// the ops must refuse (another device, strides with gaps).
#pragma once

#include <dlpack/dlpack.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ops/fp8.h"
#include "tests/emu/ops_test_util.h"
#include "tests/error_message.h"

namespace tjfp8 {

using namespace tjops;
using namespace tilejit::ops;
using tilejit::testing_util::error_of;

inline LD fmax_of(DType fp8) { return format_of(fp8).max_finite(); }
inline LD round_f32(LD v) { return round_to(DType::f32, v); }

// clip(x * scale, -fmax, fmax) cast to the fp8 dtype: the f32 product, the clip, then round to
// nearest even. Returns the fp8 bits.
inline uint64_t quantize_reference(LD x, LD scale, DType fp8) {
  LD s = round_f32(x * scale);
  const LD fmax = fmax_of(fp8);
  if (s > fmax) s = fmax;
  if (s < -fmax) s = -fmax;
  return encode_float_bits(s, format_of(fp8), true);
}

// max |x|; NaN when x holds one.
inline LD amax_reference(const std::vector<LD>& x) {
  LD m = 0;
  for (LD v : x) {
    if (std::isnan(v)) return std::numeric_limits<LD>::quiet_NaN();
    m = std::max(m, std::fabs(v));
  }
  return m;
}

// The recipe's state and steps on the host.
struct HostScaling {
  DType fp8;
  DelayedScalingRecipe recipe;
  LD scale = 1, scale_inv = 1;
  std::vector<LD> history;

  HostScaling(const DelayedScalingRecipe& r, DType format)
      : fp8(format), recipe(r), history(static_cast<size_t>(r.amax_history_len), 0) {}

  // Quantizes with the current scale and records the amax; returns the fp8 bits.
  std::vector<uint64_t> quantize(const std::vector<LD>& x) {
    std::vector<uint64_t> q;
    for (LD v : x) q.push_back(quantize_reference(v, scale, fp8));
    scale_inv = round_f32(1 / scale);
    LD amax = amax_reference(x);
    if (std::isnan(amax) || std::isnan(history[0]))  // a NaN stays, as the device's max of bits keeps it
      history[0] = std::numeric_limits<LD>::quiet_NaN();
    else
      history[0] = std::max(history[0], amax);
    return q;
  }

  void update() {
    LD amax = history[0];
    if (recipe.amax_compute_algo == AmaxComputeAlgo::max) amax = amax_reference(history);
    if (amax > 0 && std::isfinite(amax))  // past f32's range: its largest value
      scale = std::min<LD>(round_f32(round_f32(fmax_of(fp8) / amax) / std::ldexp(1.0L, recipe.margin)),
                           std::numeric_limits<float>::max());
    std::vector<LD> rolled(history.size());
    for (size_t i = 0; i < history.size(); ++i) rolled[i] = history[(i + 1) % history.size()];
    rolled[0] = 0;
    history = rolled;
  }
};

// fp8 bits against the reference: equal bits, except that any NaN matches a NaN.
inline void expect_fp8_bits(const std::string& what, const Host& got, const std::vector<uint64_t>& want,
                            const std::function<std::string(size_t)>& context = {}) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const FloatFormat f = format_of(got.dtype);
  size_t bad = 0;
  std::string first;
  for (size_t i = 0; i < want.size(); ++i) {
    const bool want_nan = std::isnan(decode_float_bits(want[i], f));
    const bool ok = want_nan ? std::isnan(got.get(i)) : got.raw(i) == want[i];
    if (ok) continue;
    if (++bad <= 8)
      first += "\n  [" + std::to_string(i) + "] got 0x" + fmt::format("{:02x}", got.raw(i)) + ", want 0x" +
               fmt::format("{:02x}", want[i]) + (context ? "   (" + context(i) + ")" : "");
  }
  if (bad)
    ADD_FAILURE() << what << " [" << name_of(got.dtype) << "]: " << bad << " of " << want.size()
                  << " fp8 values wrong:" << first;
}

// Values equal, NaN matching NaN (exact state comparisons).
inline void expect_same(const std::string& what, const std::vector<LD>& got, const std::vector<LD>& want) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0;
  std::string first;
  for (size_t i = 0; i < want.size(); ++i) {
    if ((std::isnan(want[i]) && std::isnan(got[i])) || got[i] == want[i]) continue;
    if (++bad <= 8) first += "\n  [" + std::to_string(i) + "] got " + fmt_ld(got[i]) + ", want " + fmt_ld(want[i]);
  }
  if (bad) ADD_FAILURE() << what << ": " << bad << " of " << want.size() << " values differ:" << first;
}

// The device state equals the host model: scale, scale_inv and the whole history.
inline void expect_state(const std::string& what, const Fp8ScalingState& state, const HostScaling& host) {
  expect_same(what + ": scale", download(state.scale()).values(), {host.scale});
  expect_same(what + ": scale_inv", download(state.scale_inv()).values(), {host.scale_inv});
  expect_same(what + ": amax_history", download(state.amax_history()).values(), host.history);
}

// x for a quantization with `scale`: values past +-fmax, exact midpoints between fp8
// neighbours (ties), fp8 subnormals, zeros of both signs, and uniform values in between;
// rounded to `dtype`. With `specials`, +-inf and NaN too.
inline std::vector<LD> quantize_inputs(DType dtype, DType fp8, LD scale, size_t n, Rng& rng, bool specials) {
  const FloatFormat f = format_of(fp8);
  const LD fmax = fmax_of(fp8);
  const uint64_t max_code = encode_float_bits(fmax, f, true);
  std::vector<LD> x(n);
  for (LD& v : x) {
    const LD sign = rng.coin() ? -1 : 1;
    switch (rng.integer(0, specials ? 6 : 4)) {
      case 0:
        v = sign * rng.uniform(0.9, 1.6) * static_cast<double>(fmax / scale);
        break;   // around the clip
      case 1: {  // a midpoint between two neighbouring fp8 values
        const auto code = static_cast<uint64_t>(rng.integer(0, static_cast<int64_t>(max_code) - 1));
        v = sign * (decode_float_bits(code, f) + decode_float_bits(code + 1, f)) / 2 / scale;
        break;
      }
      case 2:
        v = sign * rng.uniform(0, 4) * static_cast<double>(std::ldexp(1.0L, f.emin()) / scale);
        break;  // subnormal
      case 3:
        v = rng.coin(0.2) ? sign * 0.0L : sign * rng.uniform(0, static_cast<double>(fmax / scale));
        break;
      case 4:
        v = sign * rng.uniform(0, 2) * static_cast<double>(fmax / scale);
        break;
      case 5:
        v = sign * std::numeric_limits<LD>::infinity();
        break;
      default:
        v = std::numeric_limits<LD>::quiet_NaN();
        break;
    }
    v = round_to(dtype, v);
  }
  return x;
}

inline Host host_of(DType dtype, const std::vector<LD>& values) {
  Host h(dtype, values.size());
  for (size_t i = 0; i < values.size(); ++i) h.set(i, values[i]);
  return h;
}

inline DelayedScalingRecipe recipe_of(Fp8Format format, AmaxComputeAlgo algo = AmaxComputeAlgo::max, int margin = 0,
                                      int64_t len = 1024) {
  DelayedScalingRecipe r;
  r.margin = margin;
  r.amax_history_len = len;
  r.amax_compute_algo = algo;
  r.fp8_format = format;
  return r;
}

inline Fp8QuantizeOptions quantize_only() {
  Fp8QuantizeOptions o;
  o.update_scale = false;
  return o;
}

// Sets a state's scale on the device (the tests start steps from chosen scales).
inline void set_scale(const Fp8ScalingState& state, float scale) {
  Tensor s = state.scale();
  s.copy_from_host(&scale, sizeof scale);
}

// A view of `t` (contiguous, rank 2, at least 2 rows) that takes every other row: strides
// with gaps, which the ops refuse.
inline Tensor every_other_row(const Tensor& t) {
  DLManagedTensor* m = t.to_dlpack();
  m->dl_tensor.shape[0] = t.dim(0) / 2;
  m->dl_tensor.strides[0] = 2 * t.dim(1);
  return Tensor::from_dlpack(m);
}

// The emulator of another architecture: a device other than emu().
inline Device& other_device() { return Device::by_name("emu:sm_80"); }

}  // namespace tjfp8
