// Helpers for the scaled_dot and mx_quantize tests: random operands and scales of every dtype,
// references computed in long double straight from SEMANTICS.md ("scaled_dot": one output
// multi-index at a time, dims placed by the dimension numbers, each scale element covering a
// block of consecutive indices; "MX quantization helper": the scale byte from the f32 bits of
// amax / 448), tolerances by output dtype, and strided views of device tensors.
#pragma once

#include <dlpack/dlpack.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ops/scaled_dot.h"
#include "tests/emu/ops_test_util.h"
#include "tests/error_message.h"

namespace tjsdot {

using namespace tjops;
using namespace tilejit::ops;
using tilejit::testing_util::error_of;
using ::testing::HasSubstr;

using Shape = std::vector<int64_t>;

inline int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

inline std::string shape_name(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Host values of one tensor, row-major.
struct HostTensor {
  Host values;
  Shape shape;

  Tensor upload(Device& device = emu()) const {  // (ops_test_util's upload makes rank 0 a [1])
    Tensor t = Tensor::empty(device, values.dtype, shape);
    t.copy_from_host(values.bytes.data(), values.bytes.size());
    return t;
  }
};

// Operands: fp8 of any finite code (e5m2 without inf), other dtypes uniform in [-2, 2].
inline HostTensor random_operand(DType d, const Shape& shape, Rng& rng) {
  HostTensor t{Host(d, static_cast<size_t>(numel(shape))), shape};
  for (size_t i = 0; i < t.values.size(); ++i) {
    if (is_fp8(d)) {
      do t.values.set_raw(i, rng.bits() & 0xff);
      while (!std::isfinite(t.values.get(i)));
    } else {
      t.values.set(i, rng.uniform(-2, 2));
    }
  }
  return t;
}

// Scales: e8m0 2^-8 to 2^8; bf16 of either sign, magnitudes 1/4 to 4.
inline HostTensor random_scale(DType d, const Shape& shape, Rng& rng) {
  HostTensor t{Host(d, static_cast<size_t>(numel(shape))), shape};
  for (size_t i = 0; i < t.values.size(); ++i) {
    if (d == DType::e8m0)
      t.values.set_raw(i, static_cast<uint64_t>(127 + rng.integer(-8, 8)));
    else
      t.values.set(i, (rng.coin() ? 1 : -1) * std::exp2(rng.uniform(-2, 2)));
  }
  return t;
}

// The shape of a scale for `operand` with `blocks[d]` elements per scale element along dim d
// (1 elsewhere).
inline Shape scale_shape(const Shape& operand, const std::vector<int64_t>& blocks) {
  Shape s = operand;
  for (size_t d = 0; d < s.size(); ++d) s[d] /= blocks[d];
  return s;
}

inline DotDimensionNumbers default_numbers(int rank) {
  DotDimensionNumbers n{{rank - 1}, {rank - 2}, {}, {}};
  for (int d = 0; d + 2 < rank; ++d) n.lhs_batch.push_back(d), n.rhs_batch.push_back(d);
  return n;
}

struct Reference {
  std::vector<LD> sum, magnitude;  // the result and the sum of |terms|, row-major
  // Per element, what JAX's rounding of scaled operands to bf16 may cost where operand x scale
  // falls below bf16's normal range (2^-126, 2^-127 being e8m0's 0x00): there the rounding is
  // absolute, up to half the subnormal step 2^-133, times the other side's scaled value.
  std::vector<LD> underflow;
  Shape shape;
  int64_t terms = 0;  // per output element
};

// SEMANTICS.md: result[batch..., lhs free..., rhs free...] = sum over the contracting indices of
// (lhs * expand(lhs_scale)) * (rhs * expand(rhs_scale)), where expand repeats each scale element
// over (operand size / scale size) consecutive indices of a contracting dim.
inline Reference reference_scaled_dot(const HostTensor& lhs, const HostTensor& rhs, const HostTensor* lhs_scale,
                                      const HostTensor* rhs_scale, DotDimensionNumbers n) {
  const size_t rank = lhs.shape.size();
  auto normalize = [&](std::vector<int>& dims) {
    for (int& d : dims) d = d < 0 ? d + static_cast<int>(rank) : d;
  };
  normalize(n.lhs_contracting), normalize(n.rhs_contracting), normalize(n.lhs_batch), normalize(n.rhs_batch);
  auto free_dims = [&](const std::vector<int>& contracting, const std::vector<int>& batch) {
    std::vector<int> free;
    for (int d = 0; d < static_cast<int>(rank); ++d)
      if (std::find(contracting.begin(), contracting.end(), d) == contracting.end() &&
          std::find(batch.begin(), batch.end(), d) == batch.end())
        free.push_back(d);
    return free;
  };
  const std::vector<int> lhs_free = free_dims(n.lhs_contracting, n.lhs_batch);
  const std::vector<int> rhs_free = free_dims(n.rhs_contracting, n.rhs_batch);
  Reference r;
  for (int d : n.lhs_batch) r.shape.push_back(lhs.shape[static_cast<size_t>(d)]);
  for (int d : lhs_free) r.shape.push_back(lhs.shape[static_cast<size_t>(d)]);
  for (int d : rhs_free) r.shape.push_back(rhs.shape[static_cast<size_t>(d)]);
  Shape k_shape;
  for (int d : n.lhs_contracting) k_shape.push_back(lhs.shape[static_cast<size_t>(d)]);
  r.terms = numel(k_shape);

  // An operand's value times its scale's at a multi-index: the scale's index along dim d is the
  // operand's divided by the block (operand size / scale size; 1 outside contracting dims).
  struct Scaled {
    std::vector<LD> values, scales;
    Shape shape, blocks, scale_shape;
    LD at(const Shape& index) const {
      size_t flat = 0, scale_flat = 0;
      for (size_t d = 0; d < shape.size(); ++d) {
        flat = flat * static_cast<size_t>(shape[d]) + static_cast<size_t>(index[d]);
        scale_flat = scale_flat * static_cast<size_t>(scale_shape[d]) + static_cast<size_t>(index[d] / blocks[d]);
      }
      return scales.empty() ? values[flat] : values[flat] * scales[scale_flat];
    }
    LD underflow_error(LD scaled_value) const {
      const bool subnormal = scaled_value != 0 && std::fabs(scaled_value) < std::ldexp(1.0L, -126);
      return !scales.empty() && subnormal ? std::ldexp(1.0L, -134) : 0;
    }
  };
  auto scaled = [&](const HostTensor& t, const HostTensor* scale) {
    Scaled s{t.values.values(), {}, t.shape, Shape(rank, 1), t.shape};
    if (scale) {
      s.scales = scale->values.values();
      s.scale_shape = scale->shape;
      for (size_t d = 0; d < rank; ++d) s.blocks[d] = t.shape[d] / scale->shape[d];
    }
    return s;
  };
  const Scaled a = scaled(lhs, lhs_scale), b = scaled(rhs, rhs_scale);

  // Steps `index` through `shape` in row-major order.
  auto next = [](Shape& index, const Shape& shape) {
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < shape[d]) return;
      index[d] = 0;
    }
  };
  const int64_t total = numel(r.shape);
  Shape out(r.shape.size(), 0), li(rank, 0), ri(rank, 0), k(k_shape.size(), 0);
  for (int64_t o = 0; o < total; ++o, next(out, r.shape)) {
    size_t pos = 0;
    for (size_t i = 0; i < n.lhs_batch.size(); ++i, ++pos)
      li[static_cast<size_t>(n.lhs_batch[i])] = ri[static_cast<size_t>(n.rhs_batch[i])] = out[pos];
    for (int d : lhs_free) li[static_cast<size_t>(d)] = out[pos++];
    for (int d : rhs_free) ri[static_cast<size_t>(d)] = out[pos++];
    LD sum = 0, magnitude = 0, underflow = 0;
    for (int64_t t = 0; t < r.terms; ++t, next(k, k_shape)) {
      for (size_t i = 0; i < k.size(); ++i)
        li[static_cast<size_t>(n.lhs_contracting[i])] = ri[static_cast<size_t>(n.rhs_contracting[i])] = k[i];
      const LD x = a.at(li), y = b.at(ri);
      const LD ex = a.underflow_error(x), ey = b.underflow_error(y);
      sum += x * y, magnitude += std::fabs(x * y);
      underflow += ex * std::fabs(y) + ey * std::fabs(x) + ex * ey;
    }
    r.sum.push_back(sum);
    r.magnitude.push_back(magnitude);
    r.underflow.push_back(underflow);
  }
  return r;
}

// The error allowed per element: f32 accumulation (relative to the sum of |terms|; tf32x3
// products of f32 operands fit in it), with fp8 operands on both sides the tensor cores' own
// sum within a K block (of at most two k32 instructions), the output's rounding (bf16: 2^-8
// relative), and, with bf16 scales, JAX's own rounding of operand * scale to bf16 on both
// sides, which the kernel may follow (2^-8 each); below bf16's normal range that rounding is
// absolute, and so is its allowance (Reference::underflow), whatever the scales' dtype.
inline std::vector<LD> allowed_error(const Reference& r, DType out, bool bf16_scales, bool fp8_operands) {
  LD accumulation = 1e-5L + static_cast<LD>(r.terms) * std::ldexp(1.0L, -24);
  if (fp8_operands) accumulation += static_cast<LD>(fp8_chain_error(2));
  if (bf16_scales) accumulation += std::ldexp(1.0L, -7);
  LD rounding = out == DType::bf16 ? std::ldexp(1.0L, -8) : std::ldexp(1.0L, -22);
  std::vector<LD> allowed(r.sum.size());
  for (size_t i = 0; i < allowed.size(); ++i)
    allowed[i] = accumulation * r.magnitude[i] + rounding * std::fabs(r.sum[i]) + r.underflow[i] + 1e-30L;
  return allowed;
}

// One call of scaled_dot on uploaded host tensors, checked against the reference. The output is
// a new tensor; the memory of a freed poisoned tensor of its size is offered to it first, so an
// element the kernel leaves unwritten most likely reads NaN.
struct ScaledDotCall {
  HostTensor lhs, rhs;
  std::optional<HostTensor> lhs_scale, rhs_scale;
  ScaledDotOptions options;
};

inline void expect_scaled_dot(const std::string& what, const ScaledDotCall& call, Device& device = emu()) {
  SCOPED_TRACE(what);
  const HostTensor* ls = call.lhs_scale ? &*call.lhs_scale : nullptr;
  const HostTensor* rs = call.rhs_scale ? &*call.rhs_scale : nullptr;
  Reference ref = reference_scaled_dot(
      call.lhs, call.rhs, ls, rs,
      call.options.dimension_numbers ? *call.options.dimension_numbers
                                     : default_numbers(static_cast<int>(call.lhs.shape.size())));
  std::optional<Tensor> lhs_scale, rhs_scale;
  if (ls) lhs_scale = ls->upload(device);
  if (rs) rhs_scale = rs->upload(device);
  Tensor lhs = call.lhs.upload(device), rhs = call.rhs.upload(device);
  const DType out_dtype = call.options.preferred_element_type;
  { Tensor poison = poisoned(out_dtype, ref.shape, device); }
  Tensor out = scaled_dot(lhs, rhs, lhs_scale, rhs_scale, call.options);
  device.default_stream().synchronize();
  ASSERT_EQ(out.shape(), ref.shape);
  ASSERT_EQ(out.dtype(), out_dtype);
  const bool bf16_scales = (ls && ls->values.dtype == DType::bf16) || (rs && rs->values.dtype == DType::bf16);
  const bool fp8_operands = is_fp8(call.lhs.values.dtype) && is_fp8(call.rhs.values.dtype);
  expect_scaled(what, download(out).values(), ref.sum, allowed_error(ref, out_dtype, bf16_scales, fp8_operands), 1.0,
                [&](size_t i) { return "element " + std::to_string(i) + " of " + shape_name(ref.shape); });
}

// A scaled operand of `shape` with scale blocks `blocks` (one per dim, 1 outside the
// contracting dims); no scale when scale_dtype is unset.
inline void make_operand(HostTensor& operand, std::optional<HostTensor>& scale, DType dtype,
                         std::optional<DType> scale_dtype, const Shape& shape, const std::vector<int64_t>& blocks,
                         Rng& rng) {
  operand = random_operand(dtype, shape, rng);
  if (scale_dtype) scale = random_scale(*scale_dtype, scale_shape(shape, blocks), rng);
}

// A view of contiguous `t` with its dims permuted: view dim i is t's dim perm[i] (strides
// included), the same memory.
inline Tensor permuted_view(const Tensor& t, const std::vector<int>& perm) {
  DLManagedTensor* m = t.to_dlpack();
  for (size_t i = 0; i < perm.size(); ++i) {
    m->dl_tensor.shape[i] = t.dim(perm[i]);
    m->dl_tensor.strides[i] = t.strides()[static_cast<size_t>(perm[i])];
  }
  return Tensor::from_dlpack(m);
}

// The host tensor of that view, row-major.
inline HostTensor permuted_host(const HostTensor& t, const std::vector<int>& perm) {
  Shape shape;
  for (int p : perm) shape.push_back(t.shape[static_cast<size_t>(p)]);
  HostTensor out{Host(t.values.dtype, t.values.size()), shape};
  Shape index(shape.size(), 0), source(shape.size(), 0);
  for (size_t i = 0; i < out.values.size(); ++i) {
    for (size_t d = 0; d < perm.size(); ++d) source[static_cast<size_t>(perm[d])] = index[d];
    size_t flat = 0;
    for (size_t d = 0; d < shape.size(); ++d) flat = flat * static_cast<size_t>(t.shape[d]) + static_cast<size_t>(source[d]);
    out.values.set_raw(i, t.values.raw(flat));
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

// --- MX quantization, from SEMANTICS.md ---------------------------------------------------

// The scale byte of s = amax / 448 (s >= 0): exponent + 1 iff mantissa > 0, exponent != 0xfe
// and not (exponent == 0 and mantissa <= 0x400000); past 0xff (a NaN s) it stays 0xff.
inline uint8_t mx_scale_byte_reference(float s) {
  const uint32_t bits = std::bit_cast<uint32_t>(s);
  uint32_t exponent = bits >> 23;
  const uint32_t mantissa = bits & 0x7fffff;
  if (mantissa > 0 && exponent != 0xfe && !(exponent == 0 && mantissa <= 0x400000)) ++exponent;
  return static_cast<uint8_t>(std::min<uint32_t>(exponent, 0xff));
}

// byte << 23 as f32, byte 0 as 2^-127.
inline LD mx_scale_value_reference(uint8_t byte) {
  return byte == 0 ? std::ldexp(1.0L, -127) : static_cast<LD>(std::bit_cast<float>(uint32_t{byte} << 23));
}

// One block of 32 values (as stored in x's dtype): its scale byte and data bytes. A block with
// inf or NaN gets scale 0xff and NaN data (the library's definition beyond SEMANTICS.md).
struct MxBlock {
  uint8_t scale;
  std::vector<uint8_t> data;
};
inline MxBlock mx_quantize_reference(const std::vector<LD>& x) {
  float amax = 0;
  bool finite = true;
  for (LD v : x) {
    finite = finite && std::isfinite(v);
    amax = std::max(amax, static_cast<float>(std::fabs(v)));  // exact: x is f32, bf16 or f16
  }
  MxBlock b{finite ? mx_scale_byte_reference(amax / 448.0f) : uint8_t{0xff}, {}};
  for (LD v : x) {
    LD q = std::clamp(v / mx_scale_value_reference(b.scale), -448.0L, 448.0L);
    if (!finite) q = std::numeric_limits<LD>::quiet_NaN();
    b.data.push_back(static_cast<uint8_t>(encode_float_bits(q, format_of(DType::f8e4m3), true)));
  }
  return b;
}

// x for mx_quantize: each block of 32 at its own magnitude 2^e, |e| <= spread, its values
// spread over 12 binades below it (so some land on e4m3 subnormals).
inline Host random_mx_input(DType d, const Shape& shape, int spread, Rng& rng) {
  Host x(d, static_cast<size_t>(numel(shape)));
  for (size_t b = 0; b < x.size() / 32; ++b) {
    const int exponent = static_cast<int>(rng.integer(-spread, spread));
    for (size_t j = 0; j < 32; ++j)
      x.set(b * 32 + j, std::ldexp(rng.uniform(-1, 1) * std::exp2(rng.uniform(-12, 0)), exponent));
  }
  return x;
}

// x (any dtype, `shape`) quantized by the op: every scale and data byte against the reference.
inline void expect_mx_quantized(const std::string& what, const Host& x, const Shape& shape) {
  SCOPED_TRACE(what);
  MxQuantized q = mx_quantize(upload(x, shape));
  Shape scale_shape = shape;
  scale_shape.back() /= 32;
  ASSERT_EQ(q.data.shape(), shape);
  ASSERT_EQ(q.scales.shape(), scale_shape);
  ASSERT_EQ(q.data.dtype(), DType::f8e4m3);
  ASSERT_EQ(q.scales.dtype(), DType::e8m0);
  Host data = download(q.data), scales = download(q.scales);
  size_t bad = 0;
  for (size_t b = 0; b < scales.size(); ++b) {
    std::vector<LD> block;
    for (size_t j = 0; j < 32; ++j) block.push_back(x.get(b * 32 + j));
    MxBlock want = mx_quantize_reference(block);
    if (scales.raw(b) != want.scale && ++bad <= 8)
      ADD_FAILURE() << fmt::format("block {}: scale 0x{:02x}, want 0x{:02x}", b, scales.raw(b), want.scale);
    for (size_t j = 0; j < 32; ++j)
      if (data.raw(b * 32 + j) != want.data[j] && ++bad <= 8)
        ADD_FAILURE() << fmt::format("block {} element {} (x = {}, scale 0x{:02x}): data 0x{:02x}, want 0x{:02x}", b, j,
                                     fmt_ld(block[j]), want.scale, data.raw(b * 32 + j), want.data[j]);
  }
}

}  // namespace tjsdot
