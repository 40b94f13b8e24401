// mx_quantize on the emulator, bit-exact against SEMANTICS.md's rule computed on the host: the
// scale rule itself on every edge of its f32 bits (fed directly, since exponent 0xfe and
// non-finite values are out of reach of amax / 448), then whole blocks: amax 0, exact powers of
// two, subnormal amax / 448 on both sides of mantissa 0x400000, subnormal and largest amax,
// ties of the e4m3 rounding, inf and NaN blocks, random magnitudes, every input dtype and rank.
#include <limits>

#include "dsl/kernel.h"
#include "ops/scaled_dot/mx_scale.h"
#include "tests/ops/scaled_dot_test_util.h"

namespace tjsdot {
namespace {

using tilejit::ops::scaled_dot_detail::mx_scale_byte;
using tilejit::ops::scaled_dot_detail::mx_scale_value;

// byte[i] = the rule's byte of s[i]; value[i] = that byte decoded.
Kernel scale_rule_kernel() {
  return define_kernel("mx_scale_rule", {"s", "byte", "value", "n"}, {{"BLOCK", 256}},
                       [](const Constants& c, Ptr<f32> s, Ptr<i32> byte, Ptr<f32> value, Scalar<i32> n) {
                         Tile i = program_id(0) * c["BLOCK"] + arange(0, c["BLOCK"]);  // (BLOCK)
                         Tile mask = i < n;
                         Tile b = mx_scale_byte(load(s + i, mask));
                         store(byte + i, b, mask);
                         store(value + i, mx_scale_value(b), mask);
                       });
}

TEST(MxScaleRule, EveryEdgeOfTheBits) {
  TJ_SEEDED_RNG(rng);
  std::vector<uint32_t> bits = {
      0x00000000, 0x00000001, 0x003fffff, 0x00400000, 0x00400001, 0x005fffff, 0x00600000, 0x007fffff,  // subnormal
      0x00800000, 0x00800001, 0x00c00000, 0x3f800000, 0x3f800001, 0x3fc00000, 0x3fffffff, 0x40000000,  // normal
      0x7e800000, 0x7e800001, 0x7effffff, 0x7f000000, 0x7f000001, 0x7f400000, 0x7f7fffff,              // top
      0x7f800000, 0x7fc00000, 0x7f800001};                                                                // inf, NaN
  for (int i = 0; i < 2000; ++i) bits.push_back(static_cast<uint32_t>(rng.bits()) & 0x7fffffff);
  Host s(DType::f32, bits.size());
  for (size_t i = 0; i < bits.size(); ++i) s.set_raw(i, bits[i]);
  static JitKernel kernel(scale_rule_kernel());
  Tensor byte = poisoned(DType::i32, {static_cast<int64_t>(bits.size())});
  Tensor value = poisoned(DType::f32, {static_cast<int64_t>(bits.size())});
  kernel.launch(stream(), grid1(static_cast<int64_t>(bits.size()), 256), upload(s), byte, value,
                static_cast<int32_t>(bits.size()));
  Host got_byte = download(byte), got_value = download(value);
  size_t bad = 0;
  for (size_t i = 0; i < bits.size(); ++i) {
    const uint8_t want = mx_scale_byte_reference(std::bit_cast<float>(bits[i]));
    const LD want_value = mx_scale_value_reference(want);
    if (got_byte.raw(i) == want && got_value.get(i) == want_value) continue;
    if (++bad <= 8)
      ADD_FAILURE() << fmt::format("s bits 0x{:08x}: byte 0x{:x} (want 0x{:x}), value {} (want {})", bits[i],
                                   got_byte.raw(i), want, fmt_ld(got_value.get(i)), fmt_ld(want_value));
  }
  // The rule's edges, spelled out.
  EXPECT_EQ(mx_scale_byte_reference(std::bit_cast<float>(0x7f000001u)), 0xfe);  // 0xfe does not round up
  EXPECT_EQ(mx_scale_byte_reference(std::bit_cast<float>(0x7effffffu)), 0xfe);
  EXPECT_EQ(mx_scale_byte_reference(std::bit_cast<float>(0x00400000u)), 0x00);  // 2^-127 exactly
  EXPECT_EQ(mx_scale_byte_reference(std::bit_cast<float>(0x00400001u)), 0x01);
  EXPECT_EQ(mx_scale_byte_reference(0.0f), 0x00);
  EXPECT_EQ(mx_scale_byte_reference(1.0f), 0x7f);
  EXPECT_EQ(mx_scale_byte_reference(std::bit_cast<float>(0x3f800001u)), 0x80);
}

// Blocks of 32 f32 values, each block given by a function of (block, element).
Host f32_blocks(size_t blocks, const std::function<float(size_t, size_t)>& value) {
  Host h(DType::f32, blocks * 32);
  for (size_t b = 0; b < blocks; ++b)
    for (size_t j = 0; j < 32; ++j) h.set(b * 32 + j, value(b, j));
  return h;
}

TEST(MxQuantize, EdgeBlocks) {
  TJ_SEEDED_RNG(rng);
  const float tiny = std::ldexp(1.0f, -127);  // 2^-127, s's subnormal threshold
  // The amax of each block (placed at a random element; the others random below it).
  const std::vector<float> amax = {
      0.0f,                                          // scale byte 0, data 0
      448.0f, 448.0f * 1024, 448.0f / 1024, 7.0f,   // exact powers of two for s, and one between
      448.0f * tiny * 0.75f,                         // s = 0.75 * 2^-127: mantissa 0x300000, byte 0
      448.0f * tiny,                                 // s = 2^-127: mantissa 0x400000, byte 0
      448.0f * tiny * 1.25f,                         // mantissa 0x500000: byte 1
      std::nextafter(448.0f * tiny, 1.0f),           // s rounds down onto 2^-127: x / scale clips to 448
      std::numeric_limits<float>::denorm_min() * 3,  // amax itself subnormal
      std::numeric_limits<float>::max(),             // the largest s reachable (exponent 0xf6)
      std::ldexp(1.0f, 100), std::ldexp(1.0f, -100),
  };
  Host x = f32_blocks(amax.size(), [&](size_t b, size_t j) {
    return j == 3 ? -amax[b] : static_cast<float>(rng.uniform(-1, 1)) * amax[b];
  });
  expect_mx_quantized("edge amax", x, {static_cast<int64_t>(amax.size()), 32});
}

TEST(MxQuantize, RoundsTiesToEvenAndClips) {
  // amax 448: scale 1, so data = x. Midpoints between e4m3 values, and e4m3 subnormals.
  const std::vector<float> values = {1.0625f, 1.1875f, -1.0625f, 2.125f, 2.375f, 448.0f, 432.0f, 440.0f,
                                     std::ldexp(1.0f, -10), std::ldexp(3.0f, -11), std::ldexp(5.0f, -11),
                                     std::ldexp(1.0f, -12), -0.0f, 0.0f, 240.0f, 232.0f};
  Host x = f32_blocks(1, [&](size_t, size_t j) { return values[j % values.size()]; });
  expect_mx_quantized("ties", x, {32});
  // amax 500: s = 500 / 448 rounds up to 2, so 500 / 2 = 250 and nothing clips; amax 448 * 2^127
  // is out of f32's reach, so clipping shows only through the rounding at the top (446 -> 448).
  Host y = f32_blocks(2, [&](size_t b, size_t j) { return b == 0 ? (j == 0 ? 500.0f : 1.0f) : (j == 0 ? 446.0f : -3.0f); });
  expect_mx_quantized("top of the range", y, {2, 32});
}

TEST(MxQuantize, NonFiniteBlocks) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  Host x = f32_blocks(4, [&](size_t b, size_t j) {
    if (j != 5) return 1.5f;
    return b == 0 ? inf : b == 1 ? -inf : b == 2 ? nan : 2.0f;
  });
  expect_mx_quantized("inf, -inf, NaN, finite", x, {4, 32});
  Host scales = download(mx_quantize(upload(x, {4, 32})).scales);
  EXPECT_EQ(scales.raw(0), 0xffu);
  EXPECT_EQ(scales.raw(2), 0xffu);
  EXPECT_NE(scales.raw(3), 0xffu);
}

TEST(MxQuantize, RandomMagnitudesEveryDTypeAndRank) {
  TJ_SEEDED_RNG(rng);
  const std::vector<Shape> shapes = {{64}, {3, 96}, {2, 3, 160}};
  for (DType d : {DType::f32, DType::bf16, DType::f16})
    for (const Shape& shape : shapes) {
      // f16 reaches 2^-24 to 65504: its magnitudes stay inside.
      Host x = random_mx_input(d, shape, d == DType::f16 ? 12 : 60, rng);
      expect_mx_quantized(name_of(d) + " " + shape_name(shape), x, shape);
    }
}

}  // namespace
}  // namespace tjsdot
