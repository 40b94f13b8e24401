// Helpers for the emulator op tests (ops_test.cpp): exact host encodings of every dtype
// (round to nearest even, fp8 saturation, e8m0), host arrays that travel to and from
// device tensors, seeded random inputs, tolerant comparisons that report the first
// mismatches with their inputs, and a dtype dispatch for kernels templated on a DType.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "dsl/kernel.h"
#include "runtime/device.h"
#include "runtime/jit.h"
#include "runtime/tensor.h"

namespace tjops {

using namespace tilejit;
using namespace tilejit::dsl;

using LD = long double;  // x86 extended precision: exact for every value of every dtype, i64 included

static_assert(std::numeric_limits<LD>::digits >= 64, "the references need a 64-bit mantissa long double");

inline std::string name_of(DType d) { return std::string(dtype_name(d)); }

inline constexpr DType kAllDTypes[] = {DType::i1,   DType::i8,  DType::i32,    DType::i64,    DType::f16,
                                       DType::bf16, DType::f32, DType::f8e4m3, DType::f8e5m2, DType::e8m0};

// --- float formats ------------------------------------------------------------------------

struct FloatFormat {
  int exp_bits, mant_bits;
  bool has_inf;  // IEEE-style inf / NaN at the top exponent; otherwise (e4m3fn) only S.1111.111 is NaN
  int bias() const { return (1 << (exp_bits - 1)) - 1; }
  int emin() const { return 1 - bias(); }
  LD max_finite() const {
    if (has_inf) return std::ldexp(2.0L - std::ldexp(1.0L, -mant_bits), (1 << exp_bits) - 2 - bias());
    return std::ldexp(2.0L - std::ldexp(2.0L, -mant_bits), (1 << exp_bits) - 1 - bias());  // 448 for e4m3
  }
  int bits() const { return 1 + exp_bits + mant_bits; }
};

inline bool is_ieee_like(DType d) {
  return d == DType::f32 || d == DType::f16 || d == DType::bf16 || d == DType::f8e4m3 || d == DType::f8e5m2;
}
// The relative error, against the sum of |products|, of a chain of `instructions` k32 fp8
// tensor-core instructions into one accumulator: each cuts its 33 addends (C and 32 products)
// to 13 fraction bits of the largest (runtime/emu/tensor_core_numerics.h), which is at most
// the sum of |products| so far (every cut is toward zero), so each instruction, the final cut
// of its sum included, loses less than 33 * 2^-13 of that sum.
inline double fp8_chain_error(int64_t instructions) {
  return static_cast<double>(instructions) * 33 * std::ldexp(1.0, -13);
}

inline FloatFormat format_of(DType d) {
  switch (d) {
    case DType::f32: return {8, 23, true};
    case DType::f16: return {5, 10, true};
    case DType::bf16: return {8, 7, true};
    case DType::f8e5m2: return {5, 2, true};
    case DType::f8e4m3: return {4, 3, false};
    default: ADD_FAILURE() << "no float format for " << name_of(d); return {8, 23, true};
  }
}

inline LD decode_float_bits(uint64_t bits, const FloatFormat& f) {
  int m = f.mant_bits, e = f.exp_bits;
  bool neg = (bits >> (m + e)) & 1;
  uint64_t exp = (bits >> m) & ((1u << e) - 1);
  uint64_t mant = bits & ((uint64_t{1} << m) - 1);
  LD v;
  if (f.has_inf && exp == (1u << e) - 1) {
    v = mant == 0 ? std::numeric_limits<LD>::infinity() : std::numeric_limits<LD>::quiet_NaN();
  } else if (!f.has_inf && exp == (1u << e) - 1 && mant == (uint64_t{1} << m) - 1) {
    v = std::numeric_limits<LD>::quiet_NaN();
  } else if (exp == 0) {
    v = std::ldexp(static_cast<LD>(mant), f.emin() - m);
  } else {
    v = std::ldexp(static_cast<LD>(mant + (uint64_t{1} << m)), static_cast<int>(exp) - f.bias() - m);
  }
  return neg ? -v : v;
}

// Round to nearest even into the format; with `saturate`, overflow (and inf) clamps to the
// largest finite value, otherwise it becomes inf, or NaN for formats without inf.
inline uint64_t encode_float_bits(LD v, const FloatFormat& f, bool saturate) {
  int m = f.mant_bits, e = f.exp_bits;
  uint64_t sign = std::signbit(v) ? uint64_t{1} << (m + e) : 0;
  uint64_t exp_all = (uint64_t{1} << e) - 1;
  uint64_t nan_code = f.has_inf ? (exp_all << m) | (uint64_t{1} << (m - 1)) : (exp_all << m) | ((uint64_t{1} << m) - 1);
  uint64_t inf_code = exp_all << m;
  uint64_t max_code =
      f.has_inf ? ((exp_all - 1) << m) | ((uint64_t{1} << m) - 1) : (exp_all << m) | ((uint64_t{1} << m) - 2);
  if (std::isnan(v)) return nan_code;  // the sign of NaN is not checked
  LD a = std::fabs(v);
  auto overflow = [&] { return sign | (saturate ? max_code : f.has_inf ? inf_code : nan_code); };
  if (std::isinf(a)) return overflow();
  if (a == 0) return sign;
  int ex = std::max(std::ilogb(a), f.emin());
  LD q = std::ldexp(1.0L, ex - m);
  LD r = std::nearbyint(a / q) * q;  // exact scaling; nearbyint rounds to nearest even
  if (r > f.max_finite()) return overflow();
  if (r < std::ldexp(1.0L, f.emin())) return sign | static_cast<uint64_t>(r / std::ldexp(1.0L, f.emin() - m));
  int er = std::ilogb(r);
  uint64_t mant = static_cast<uint64_t>(r / std::ldexp(1.0L, er - m)) - (uint64_t{1} << m);
  return sign | (static_cast<uint64_t>(er + f.bias()) << m) | mant;
}

// e8m0: 2^(byte-127), 0xff is NaN. Encoding takes the nearest power of two (ties to the even
// code), 0xff for zero, negatives, NaN and inf, and for values nearer 2^128 than 2^127.
inline LD decode_e8m0(uint8_t b) {
  return b == 0xff ? std::numeric_limits<LD>::quiet_NaN() : std::ldexp(1.0L, b - 127);
}
inline uint8_t encode_e8m0(LD v) {
  if (!(v > 0) || std::isinf(v)) return 0xff;
  int k = std::ilogb(v);
  if (k + 127 < 0) return 0;  // below 2^-127: the smallest code is the nearest
  LD lo = std::ldexp(1.0L, k), hi = std::ldexp(1.0L, k + 1);
  int code = k + 127;
  if (v - lo > hi - v || (v - lo == hi - v && code % 2 == 1)) ++code;
  return code > 254 ? 0xff : static_cast<uint8_t>(code);
}

// --- every dtype ------------------------------------------------------------------------------

inline LD decode(DType d, const uint8_t* p) {
  switch (d) {
    case DType::i1: return static_cast<LD>(*p);  // raw byte: anything but 0 / 1 is a failure
    case DType::i8: return static_cast<LD>(static_cast<int8_t>(*p));
    case DType::i32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::i64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return static_cast<LD>(v);
    }
    case DType::e8m0: return decode_e8m0(*p);
    default: {
      uint64_t bits = 0;
      std::memcpy(&bits, p, static_cast<size_t>(dtype_storage_bytes(d)));
      return decode_float_bits(bits, format_of(d));
    }
  }
}

// Integers: `v` must be integral; it wraps (two's complement) into the dtype; i1 is v != 0.
inline void encode(DType d, LD v, uint8_t* p, bool saturate = false) {
  switch (d) {
    case DType::i1: *p = v != 0; return;
    case DType::i8:
    case DType::i32:
    case DType::i64: {
      // Wrap through an unsigned 64-bit value: exact for integral |v| < 2^64.
      uint64_t u = v < 0 ? ~static_cast<uint64_t>(-v - 1) : static_cast<uint64_t>(v);
      std::memcpy(p, &u, static_cast<size_t>(dtype_storage_bytes(d)));  // little endian
      return;
    }
    case DType::e8m0: *p = encode_e8m0(v); return;
    default: {
      uint64_t bits = encode_float_bits(v, format_of(d), saturate && is_fp8(d));
      std::memcpy(p, &bits, static_cast<size_t>(dtype_storage_bytes(d)));
    }
  }
}

// The value `v` takes in dtype d (rounded, wrapped, saturated as encode does).
inline LD round_to(DType d, LD v, bool saturate = false) {
  uint8_t buf[8] = {};
  encode(d, v, buf, saturate);
  LD r = decode(d, buf);
  return d == DType::i1 ? (r != 0) : r;
}

inline LD int_min(DType d) {
  switch (d) {
    case DType::i1: return 0;
    case DType::i8: return -128;
    case DType::i32: return std::numeric_limits<int32_t>::min();
    default: return static_cast<LD>(std::numeric_limits<int64_t>::min());
  }
}
inline LD int_max(DType d) {
  switch (d) {
    case DType::i1: return 1;
    case DType::i8: return 127;
    case DType::i32: return std::numeric_limits<int32_t>::max();
    default: return static_cast<LD>(std::numeric_limits<int64_t>::max());
  }
}

// The C conversion float -> int as the DSL defines it: truncate, saturate, NaN -> 0;
// int -> int wraps; anything -> i1 is x != 0 (NaN is true, as numpy's astype(bool)).
// A cast to the dtype a tile already has is no op (builder.h returns the tile), saturate or not.
inline LD convert(DType from, LD v, DType to, bool saturate) {
  if (from == to) return v;
  if (to == DType::i1) return v != 0 || std::isnan(v);
  if (is_integer(to)) {
    if (std::isnan(v)) return 0;
    LD t = std::trunc(v) + 0.0L;  // integers have no -0
    if (is_float(from)) return std::min(std::max(t, int_min(to)), int_max(to));
    return round_to(to, t);  // wraps
  }
  return round_to(to, v, saturate);
}

// --- host arrays ------------------------------------------------------------------------------

struct Host {
  DType dtype = DType::f32;
  std::vector<uint8_t> bytes;

  Host() = default;
  Host(DType d, size_t n) : dtype(d), bytes(n * static_cast<size_t>(dtype_storage_bytes(d))) {}
  size_t size() const { return bytes.size() / static_cast<size_t>(dtype_storage_bytes(dtype)); }
  uint8_t* at(size_t i) { return bytes.data() + i * static_cast<size_t>(dtype_storage_bytes(dtype)); }
  const uint8_t* at(size_t i) const { return bytes.data() + i * static_cast<size_t>(dtype_storage_bytes(dtype)); }
  LD get(size_t i) const {
    LD v = decode(dtype, at(i));
    return v;
  }
  void set(size_t i, LD v, bool saturate = false) { encode(dtype, v, at(i), saturate); }
  uint64_t raw(size_t i) const {
    uint64_t b = 0;
    std::memcpy(&b, at(i), static_cast<size_t>(dtype_storage_bytes(dtype)));
    return b;
  }
  void set_raw(size_t i, uint64_t b) { std::memcpy(at(i), &b, static_cast<size_t>(dtype_storage_bytes(dtype))); }
  std::vector<LD> values() const {
    std::vector<LD> out(size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = get(i);
    return out;
  }
};

inline Device& emu() { return Device::emu(); }
inline Stream& stream() { return Device::emu().default_stream(); }

inline Tensor upload(const Host& h, std::vector<int64_t> shape = {}, Device& device = emu()) {
  if (shape.empty()) shape = {static_cast<int64_t>(h.size())};
  Tensor t = Tensor::empty(device, h.dtype, shape);
  t.copy_from_host(h.bytes.data(), h.bytes.size());
  return t;
}
// A tensor whose every byte is 0xff (NaN for floats, -1 for ints), to catch unwritten elements.
inline Tensor poisoned(DType d, std::vector<int64_t> shape, Device& device = emu()) {
  Tensor t = Tensor::empty(device, d, std::move(shape));
  t.fill_bytes(0xff);
  return t;
}
inline Host download(const Tensor& t) {
  Host h(t.dtype(), static_cast<size_t>(t.numel()));
  t.copy_to_host(h.bytes.data(), h.bytes.size());
  return h;
}

// --- random inputs --------------------------------------------------------------------------

// Seeded from std::random_device, or from TILEJIT_TEST_SEED to replay a failure.
class Rng {
 public:
  Rng() {
    const char* env = std::getenv("TILEJIT_TEST_SEED");
    seed_ = env && *env ? static_cast<uint32_t>(std::strtoul(env, nullptr, 0)) : std::random_device{}();
    gen_.seed(seed_);
  }
  uint32_t seed() const { return seed_; }
  std::string describe() const {
    return "random seed " + std::to_string(seed_) + " (replay: TILEJIT_TEST_SEED=" + std::to_string(seed_) + ")";
  }
  std::mt19937& gen() { return gen_; }
  int64_t integer(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(gen_); }
  uint64_t bits() { return (uint64_t{gen_()} << 32) | gen_(); }
  double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(gen_); }
  bool coin(double p = 0.5) { return std::bernoulli_distribution(p)(gen_); }

 private:
  uint32_t seed_;
  std::mt19937 gen_;
};

// Declares `rng` and names its seed in every failure of the enclosing test.
#define TJ_SEEDED_RNG(rng) \
  ::tjops::Rng rng;        \
  SCOPED_TRACE(rng.describe())

// Uniform values in [lo, hi], rounded to the dtype (integers: uniform integers).
inline Host random_host(DType d, size_t n, Rng& rng, double lo, double hi) {
  Host h(d, n);
  for (size_t i = 0; i < n; ++i) {
    if (is_integer(d))
      h.set(i, rng.integer(static_cast<int64_t>(lo), static_cast<int64_t>(hi)));
    else
      h.set(i, rng.uniform(lo, hi));
  }
  return h;
}
// Any value of an integer dtype, over its whole range.
inline Host random_full_range(DType d, size_t n, Rng& rng) {
  Host h(d, n);
  for (size_t i = 0; i < n; ++i) {
    if (d == DType::i1)
      h.set(i, rng.coin());
    else
      h.set_raw(i, rng.bits());
  }
  return h;
}

// --- comparisons ------------------------------------------------------------------------------

struct Tol {
  double rtol = 0, atol = 0;
  bool check_zero_sign = false;  // -0 and +0 differ (exact conversions)
};
inline Tol exact() { return {0, 0, false}; }
// Elementwise arithmetic tolerances by result dtype.
inline Tol arith_tol(DType d) {
  switch (d) {
    case DType::f32: return {1e-5, 1e-30};
    case DType::f16: return {1e-3, 1e-6};
    case DType::bf16: return {1e-2, 1e-30};
    default: return exact();
  }
}
// libm-style functions.
inline Tol math_tol(DType d) {
  switch (d) {
    case DType::f32: return {2e-6, 1e-6};
    case DType::f16: return {1e-3, 1e-5};
    default: return {1e-2, 1e-5};
  }
}

inline std::string fmt_ld(LD v) {
  std::ostringstream s;
  s.precision(10);
  s << static_cast<double>(v);
  if (v == 0 && std::signbit(v)) return "-0";
  return s.str();
}

inline bool close_enough(LD got, LD want, const Tol& tol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isnan(got)) return false;  // NaN never passes
  if (std::isinf(want) || std::isinf(got)) return got == want;
  if (tol.check_zero_sign && want == 0 && got == 0 && std::signbit(want) != std::signbit(got)) return false;
  return std::fabs(got - want) <= static_cast<LD>(tol.atol) + static_cast<LD>(tol.rtol) * std::fabs(want);
}

// Compares got[i] with want[i] (i < want.size()); one failure naming the count of mismatches
// and the first few with `context(i)` (the inputs), so a broken op does not print thousands.
inline bool expect_values(const std::string& what, const std::vector<LD>& got, const std::vector<LD>& want,
                          const Tol& tol, const std::function<std::string(size_t)>& context = {}) {
  size_t bad = 0;
  std::ostringstream msg;
  if (got.size() < want.size()) {
    ADD_FAILURE() << what << ": got " << got.size() << " values, want " << want.size();
    return false;
  }
  for (size_t i = 0; i < want.size(); ++i) {
    if (close_enough(got[i], want[i], tol)) continue;
    if (++bad <= 8) {
      msg << "\n  [" << i << "] got " << fmt_ld(got[i]) << ", want " << fmt_ld(want[i]);
      if (context) msg << "   (" << context(i) << ")";
    }
  }
  if (bad) {
    ADD_FAILURE() << what << ": " << bad << " of " << want.size() << " values wrong (rtol " << tol.rtol << ", atol "
                  << tol.atol << "):" << msg.str();
  }
  return bad == 0;
}
inline bool expect_values(const std::string& what, const Host& got, const std::vector<LD>& want, const Tol& tol,
                          const std::function<std::string(size_t)>& context = {}) {
  return expect_values(what + " [" + name_of(got.dtype) + "]", got.values(), want, tol, context);
}

// |got - want| <= rel * scale[i]: sums and products, where the error bound follows the
// magnitude of the terms (sum of |terms|), not of the (possibly cancelled) result.
inline bool expect_scaled(const std::string& what, const std::vector<LD>& got, const std::vector<LD>& want,
                          const std::vector<LD>& scale, double rel,
                          const std::function<std::string(size_t)>& context = {}) {
  size_t bad = 0;
  std::ostringstream msg;
  for (size_t i = 0; i < want.size(); ++i) {
    bool ok = std::isnan(want[i])   ? std::isnan(got[i])
              : std::isinf(want[i]) ? got[i] == want[i]
                                    : std::isfinite(got[i]) && std::fabs(got[i] - want[i]) <= static_cast<LD>(rel) * scale[i];
    if (ok) continue;
    if (++bad <= 8) {
      msg << "\n  [" << i << "] got " << fmt_ld(got[i]) << ", want " << fmt_ld(want[i]) << " (allowed error "
          << fmt_ld(static_cast<LD>(rel) * scale[i]) << ")";
      if (context) msg << "   (" << context(i) << ")";
    }
  }
  if (bad) ADD_FAILURE() << what << ": " << bad << " of " << want.size() << " values wrong:" << msg.str();
  return bad == 0;
}

// Raw bytes must be unchanged (the poison) at these indices.
inline void expect_untouched(const std::string& what, const Host& got, const std::vector<size_t>& indices) {
  size_t bad = 0;
  std::ostringstream msg;
  uint64_t poison = 0;
  std::memset(&poison, 0xff, static_cast<size_t>(dtype_storage_bytes(got.dtype)));
  for (size_t i : indices) {
    if (got.raw(i) == poison) continue;
    if (++bad <= 8) msg << "\n  [" << i << "] was written: 0x" << std::hex << got.raw(i) << std::dec;
  }
  if (bad) ADD_FAILURE() << what << ": " << bad << " masked-off elements were written:" << msg.str();
}

// --- matrix products ----------------------------------------------------------------------

// a (m, k) @ b (k, n), row-major, in long double: the sums and, for tolerances, the sums of
// |products|.
struct MatmulReference {
  std::vector<LD> sum, magnitude;
};
inline MatmulReference matmul_reference(const Host& a, const Host& b, int64_t m, int64_t n, int64_t k) {
  MatmulReference r{std::vector<LD>(size_t(m * n)), std::vector<LD>(size_t(m * n))};
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      LD s = 0, magnitude = 0;
      for (int64_t t = 0; t < k; ++t) {
        LD p = a.get(size_t(i * k + t)) * b.get(size_t(t * n + j));
        s += p, magnitude += std::fabs(p);
      }
      r.sum[size_t(i * n + j)] = s, r.magnitude[size_t(i * n + j)] = magnitude;
    }
  return r;
}

// --- dtype dispatch ---------------------------------------------------------------------------

template <DType D>
using DT = std::integral_constant<DType, D>;

// constexpr twins of dtype.h's predicates, for `if constexpr` in templated kernels.
constexpr bool int_dtype(DType d) { return d == DType::i1 || d == DType::i8 || d == DType::i32 || d == DType::i64; }
constexpr bool arith_dtype(DType d) { return int_dtype(d) || d == DType::f16 || d == DType::bf16 || d == DType::f32; }

// Calls f(DT<d>{}) for a runtime dtype d: kernels templated on their element type.
template <typename F>
decltype(auto) dispatch(DType d, F&& f) {
  switch (d) {
    case DType::i1: return f(DT<DType::i1>{});
    case DType::i8: return f(DT<DType::i8>{});
    case DType::i32: return f(DT<DType::i32>{});
    case DType::i64: return f(DT<DType::i64>{});
    case DType::f16: return f(DT<DType::f16>{});
    case DType::bf16: return f(DT<DType::bf16>{});
    case DType::f32: return f(DT<DType::f32>{});
    case DType::f8e4m3: return f(DT<DType::f8e4m3>{});
    case DType::f8e5m2: return f(DT<DType::f8e5m2>{});
    case DType::e8m0: return f(DT<DType::e8m0>{});
  }
  return f(DT<DType::f32>{});
}

// --- launches ---------------------------------------------------------------------------------

// Every configured kernel the suite launched, to report how many kernels it compiled.
inline std::vector<BoundKernel>& launched_kernels() {
  static std::vector<BoundKernel> all;
  return all;
}

// A kernel with its constants, remembered for the compile count.
inline BoundKernel bind(const JitKernel& k, const std::vector<std::pair<std::string, int64_t>>& constants = {}) {
  BoundKernel b = k.with(constants);
  launched_kernels().push_back(b);
  return b;
}

inline int total_builds() {
  // Copies share state: count each configuration once.
  std::vector<const dsl::Constants*> seen;
  int n = 0;
  for (auto& b : launched_kernels()) {
    const dsl::Constants* c = &b.constants();
    bool dup = false;
    for (auto* s : seen) dup = dup || s == c;
    if (dup) continue;
    seen.push_back(c);
    n += b.builds();
  }
  return n;
}

inline Dim3 grid1(int64_t n, int64_t block) { return Dim3{static_cast<uint32_t>((n + block - 1) / block), 1, 1}; }

}  // namespace tjops
