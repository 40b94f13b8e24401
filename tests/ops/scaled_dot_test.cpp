// scaled_dot on the emulator against long-double references from SEMANTICS.md: every operand
// dtype pairing, both scale dtypes, block sizes 2, 3, 16, 32, 64 (and different ones on the two
// sides), missing scales, default and explicit dimension numbers (contracting dims not last,
// several batch, free and contracting dims, strided views), bf16 and f32 results, shapes that
// are not multiples of the tiles, other architectures, and an mx_quantize round trip. The kernel
// plan (how the scales are applied) is checked on its own. Argument errors are in
// scaled_dot_errors_test.cpp, bigger sweeps in scaled_dot_sweep_test.cpp (label slow).
#include <tuple>

#include "ops/scaled_dot/grouped_view.h"
#include "ops/scaled_dot/kernel.h"
#include "tests/ops/scaled_dot_test_util.h"

namespace tjsdot {
namespace {

using tilejit::ops::scaled_dot_detail::grouped_view;
using tilejit::ops::scaled_dot_detail::GroupedView;
using tilejit::ops::scaled_dot_detail::plan_scaled_dot;
using tilejit::ops::scaled_dot_detail::ScaleMode;

constexpr DType e4m3 = DType::f8e4m3, e5m2 = DType::f8e5m2, bf16 = DType::bf16, f16 = DType::f16, f32 = DType::f32,
                e8m0 = DType::e8m0;
constexpr DType kOperandDTypes[] = {e4m3, e5m2, bf16, f16, f32};

ScaledDotOptions options_of(std::optional<DotDimensionNumbers> numbers, DType out = bf16) {
  return ScaledDotOptions{std::move(numbers), out};
}

// lhs [M, K] x rhs [K, N] (jax's default dims) with blocks along K.
ScaledDotCall matrix_call(DType lhs, DType rhs, std::optional<DType> lhs_scale, std::optional<DType> rhs_scale,
                          int64_t m, int64_t n, int64_t k, int64_t lhs_block, int64_t rhs_block, DType out, Rng& rng) {
  ScaledDotCall c;
  make_operand(c.lhs, c.lhs_scale, lhs, lhs_scale, {m, k}, {1, lhs_block}, rng);
  make_operand(c.rhs, c.rhs_scale, rhs, rhs_scale, {k, n}, {rhs_block, 1}, rng);
  c.options = options_of(std::nullopt, out);
  return c;
}

class ScaledDotPairing : public ::testing::TestWithParam<std::tuple<DType, DType>> {};

TEST_P(ScaledDotPairing, MatchesTheReference) {
  TJ_SEEDED_RNG(rng);
  auto [lhs, rhs] = GetParam();
  expect_scaled_dot("block 32, f32 out", matrix_call(lhs, rhs, e8m0, e8m0, 19, 24, 64, 32, 32, f32, rng));
  expect_scaled_dot("block 2, bf16 out", matrix_call(lhs, rhs, e8m0, e8m0, 17, 9, 12, 2, 2, bf16, rng));
}

INSTANTIATE_TEST_SUITE_P(EveryPairing, ScaledDotPairing,
                         ::testing::Combine(::testing::ValuesIn(kOperandDTypes), ::testing::ValuesIn(kOperandDTypes)),
                         [](const auto& info) {
                           return name_of(std::get<0>(info.param)) + "_x_" + name_of(std::get<1>(info.param));
                         });

TEST(ScaledDot, BothScaleDTypes) {
  TJ_SEEDED_RNG(rng);
  for (DType operand : {e4m3, bf16, f16, f32})
    for (DType ls : {e8m0, bf16})
      for (DType rs : {e8m0, bf16})
        for (int64_t block : {2, 32}) {
          std::string what = name_of(operand) + " operands, scales " + name_of(ls) + " x " + name_of(rs) + ", block " +
                             std::to_string(block);
          expect_scaled_dot(what, matrix_call(operand, operand, ls, rs, 20, 18, 64, block, block, f32, rng));
        }
}

TEST(ScaledDot, BlockSizes) {
  TJ_SEEDED_RNG(rng);
  const std::pair<DType, DType> pairings[] = {{e4m3, e5m2}, {bf16, bf16}, {f16, f32}};
  for (auto [lhs, rhs] : pairings)
    for (int64_t block : {2, 3, 16, 32, 64})
      expect_scaled_dot(name_of(lhs) + " x " + name_of(rhs) + ", block " + std::to_string(block),
                        matrix_call(lhs, rhs, e8m0, e8m0, 21, 26, 192, block, block, f32, rng));
}

TEST(ScaledDot, DifferentBlocksOnEachSide) {
  TJ_SEEDED_RNG(rng);
  const std::pair<int64_t, int64_t> blocks[] = {{32, 64}, {64, 96}, {2, 3}, {16, 48}, {192, 32}};
  for (auto [lb, rb] : blocks)
    expect_scaled_dot("blocks " + std::to_string(lb) + " and " + std::to_string(rb),
                      matrix_call(e4m3, e4m3, e8m0, e8m0, 18, 20, 192, lb, rb, f32, rng));
}

TEST(ScaledDot, MissingScalesAreOnes) {
  TJ_SEEDED_RNG(rng);
  for (DType operand : {e4m3, bf16}) {
    expect_scaled_dot("no scales", matrix_call(operand, operand, std::nullopt, std::nullopt, 20, 30, 70, 1, 1, f32, rng));
    expect_scaled_dot("lhs scale only", matrix_call(operand, operand, e8m0, std::nullopt, 20, 30, 64, 32, 1, f32, rng));
    expect_scaled_dot("rhs scale only", matrix_call(operand, operand, std::nullopt, bf16, 20, 30, 64, 1, 4, f32, rng));
  }
}

TEST(ScaledDot, ShapesThatAreNotMultiplesOfTheTiles) {
  TJ_SEEDED_RNG(rng);
  ScaledDotCall c;
  make_operand(c.lhs, c.lhs_scale, e4m3, e8m0, {3, 37, 96}, {1, 1, 32}, rng);
  make_operand(c.rhs, c.rhs_scale, e4m3, e8m0, {3, 96, 45}, {1, 32, 1}, rng);
  expect_scaled_dot("batch 3, 37 x 45, K 96", c);
  c.options.preferred_element_type = f32;
  expect_scaled_dot("the same in f32", c);
  make_operand(c.lhs, c.lhs_scale, bf16, e8m0, {1, 130, 36}, {1, 1, 3}, rng);
  make_operand(c.rhs, c.rhs_scale, f16, bf16, {1, 36, 129}, {1, 2, 1}, rng);
  expect_scaled_dot("130 x 129, K 36, blocks 3 and 2", c);
}

TEST(ScaledDot, DefaultDimensionNumbersTakeLeadingBatchDims) {
  TJ_SEEDED_RNG(rng);
  ScaledDotCall c;
  make_operand(c.lhs, c.lhs_scale, e4m3, e8m0, {2, 3, 10, 64}, {1, 1, 1, 32}, rng);
  make_operand(c.rhs, c.rhs_scale, e5m2, e8m0, {2, 3, 64, 12}, {1, 1, 16, 1}, rng);
  expect_scaled_dot("rank 4", c);
}

TEST(ScaledDot, ContractingDimsNotLast) {
  TJ_SEEDED_RNG(rng);
  ScaledDotCall c;  // lhs [K, M] contracting 0, rhs [N, K] contracting 1
  make_operand(c.lhs, c.lhs_scale, e4m3, e8m0, {64, 20}, {32, 1}, rng);
  make_operand(c.rhs, c.rhs_scale, e4m3, e8m0, {24, 64}, {1, 16}, rng);
  c.options = options_of(DotDimensionNumbers{{0}, {1}, {}, {}});
  expect_scaled_dot("lhs [K, M], rhs [N, K]", c);
  make_operand(c.lhs, c.lhs_scale, bf16, bf16, {64, 20}, {2, 1}, rng);
  make_operand(c.rhs, c.rhs_scale, bf16, e8m0, {24, 64}, {1, 2}, rng);
  expect_scaled_dot("the same with blocks of 2", c);
}

// rhs stored (N, K), K contiguous: its tiles load along K and reach the dot transposed (on
// sm_90a straight into the 8-bit tensor cores, which read B that way), in every scale mode.
TEST(ScaledDot, RhsStoredAlongK) {
  TJ_SEEDED_RNG(rng);
  for (const char* arch : {"emu:sm_90a", "emu:sm_80"})
    for (int64_t block : {32, 16}) {
      ScaledDotCall c;  // lhs [B, M, K], rhs [B, N, K], contracting the last dims
      make_operand(c.lhs, c.lhs_scale, e4m3, e8m0, {2, 100, 256}, {1, 1, block}, rng);
      make_operand(c.rhs, c.rhs_scale, e4m3, e8m0, {2, 72, 256}, {1, 1, block}, rng);
      c.options = options_of(DotDimensionNumbers{{2}, {2}, {0}, {0}});
      expect_scaled_dot(fmt::format("{}, blocks of {}", arch, block), c, Device::by_name(arch));
    }
}

TEST(ScaledDot, SeveralBatchDimsInAnyPlace) {
  TJ_SEEDED_RNG(rng);
  ScaledDotCall c;  // lhs [B1, M, B2, K], rhs [B2, K, B1, N]: out [B1, B2, M, N]
  make_operand(c.lhs, c.lhs_scale, e4m3, e8m0, {2, 9, 3, 64}, {1, 1, 1, 32}, rng);
  make_operand(c.rhs, c.rhs_scale, e4m3, e8m0, {3, 64, 2, 11}, {1, 32, 1, 1}, rng);
  c.options = options_of(DotDimensionNumbers{{3}, {1}, {0, 2}, {2, 0}}, f32);
  expect_scaled_dot("batch dims (0, 2) with (2, 0)", c);
}

TEST(ScaledDot, SeveralFreeDims) {
  TJ_SEEDED_RNG(rng);
  ScaledDotCall c;  // lhs [M1, K, M2], rhs [N1, N2, K]: out [M1, M2, N1, N2]
  make_operand(c.lhs, c.lhs_scale, e5m2, e8m0, {3, 64, 5}, {1, 32, 1}, rng);
  make_operand(c.rhs, c.rhs_scale, bf16, bf16, {4, 6, 64}, {1, 1, 2}, rng);
  c.options = options_of(DotDimensionNumbers{{1}, {2}, {}, {}});
  expect_scaled_dot("free dims (0, 2) and (0, 1)", c);
}

TEST(ScaledDot, SeveralContractingDims) {
  TJ_SEEDED_RNG(rng);
  ScaledDotCall c;  // lhs [M, K1, K2], rhs [K2, N, K1], contracting (1, 2) with (2, 0)
  make_operand(c.lhs, c.lhs_scale, e4m3, e8m0, {10, 4, 64}, {1, 2, 32}, rng);
  make_operand(c.rhs, c.rhs_scale, e4m3, e8m0, {64, 12, 4}, {16, 1, 4}, rng);
  c.options = options_of(DotDimensionNumbers{{1, 2}, {2, 0}, {}, {}}, f32);
  expect_scaled_dot("blocks (2, 32) and (4, 16)", c);
  // One scale element along the last contracting dim: the block spans it whole.
  make_operand(c.lhs, c.lhs_scale, bf16, e8m0, {10, 4, 16}, {1, 2, 16}, rng);
  make_operand(c.rhs, c.rhs_scale, f16, e8m0, {16, 12, 4}, {16, 1, 2}, rng);
  expect_scaled_dot("blocks (2, 16) with one scale along K2", c);
  // Negative dims count from the end.
  c.options = options_of(DotDimensionNumbers{{-2, -1}, {-1, 0}, {}, {}}, f32);
  expect_scaled_dot("negative dims", c);
}

TEST(ScaledDot, VectorsAndScalars) {
  TJ_SEEDED_RNG(rng);
  ScaledDotCall c;
  make_operand(c.lhs, c.lhs_scale, e4m3, e8m0, {96}, {3}, rng);
  make_operand(c.rhs, c.rhs_scale, bf16, e8m0, {96}, {32}, rng);
  c.options = options_of(DotDimensionNumbers{{0}, {0}, {}, {}}, f32);
  expect_scaled_dot("vector dot", c);
  make_operand(c.lhs, c.lhs_scale, e4m3, e8m0, {20}, {1}, rng);
  make_operand(c.rhs, c.rhs_scale, f16, e8m0, {7}, {1}, rng);
  c.options = options_of(DotDimensionNumbers{{}, {}, {}, {}}, f32);
  expect_scaled_dot("outer product", c);
  make_operand(c.lhs, c.lhs_scale, f32, bf16, {}, {}, rng);
  make_operand(c.rhs, c.rhs_scale, e5m2, e8m0, {}, {}, rng);
  expect_scaled_dot("scalars", c);
}

TEST(ScaledDot, StridedViews) {
  TJ_SEEDED_RNG(rng);
  // Stored [K, M] / [N, K], seen as [M, K] / [K, N]: the strides say where K is, no copy. (DLPack
  // has no fp8 or e8m0: the strided tensors are 16-bit.)
  HostTensor a = random_operand(bf16, {64, 20}, rng), b = random_operand(f16, {24, 64}, rng);
  HostTensor sa = random_scale(bf16, {2, 20}, rng), sb_view = random_scale(e8m0, {4, 24}, rng);
  HostTensor a_view = permuted_host(a, {1, 0}), b_view = permuted_host(b, {1, 0}), sa_view = permuted_host(sa, {1, 0});
  Reference ref = reference_scaled_dot(a_view, b_view, &sa_view, &sb_view, default_numbers(2));
  Tensor out = scaled_dot(permuted_view(a.upload(), {1, 0}), permuted_view(b.upload(), {1, 0}),
                          permuted_view(sa.upload(), {1, 0}), sb_view.upload(), options_of(std::nullopt, f32));
  expect_scaled("transposed views", download(out).values(), ref.sum, allowed_error(ref, f32, true, false), 1.0);

  // Batch dims stored in the other order: they cannot merge, the operand is copied.
  HostTensor c = random_operand(f32, {3, 2, 10, 32}, rng), d = random_operand(e4m3, {2, 3, 32, 6}, rng);
  HostTensor c_view = permuted_host(c, {1, 0, 2, 3});
  ref = reference_scaled_dot(c_view, d, nullptr, nullptr, default_numbers(4));
  out = scaled_dot(permuted_view(c.upload(), {1, 0, 2, 3}), d.upload(), std::nullopt, std::nullopt,
                   options_of(std::nullopt, f32));
  expect_scaled("batch dims in another order", download(out).values(), ref.sum, allowed_error(ref, f32, false, false), 1.0);
}

TEST(ScaledDotViews, MergeThroughStridesOrCopy) {
  Tensor t = Tensor::empty(emu(), bf16, {2, 3, 4, 5});
  GroupedView v = grouped_view(t, {{{0, 1}, {2}, {3}}}, {}, stream());  // nested: strides only
  EXPECT_FALSE(v.copied);
  EXPECT_EQ(v.size, (std::array<int64_t, 3>{6, 4, 5}));
  EXPECT_EQ(v.stride, (std::array<int64_t, 3>{20, 5, 1}));
  v = grouped_view(permuted_view(t, {3, 2, 1, 0}), {{{3, 2}, {1}, {0}}}, {}, stream());  // a transposed view
  EXPECT_FALSE(v.copied);
  EXPECT_EQ(v.size, (std::array<int64_t, 3>{6, 4, 5}));
  EXPECT_EQ(v.stride, (std::array<int64_t, 3>{20, 5, 1}));
  v = grouped_view(t, {{{1, 0}, {2}, {3}}}, {}, stream());  // batch dims against memory's order
  EXPECT_TRUE(v.copied);
  EXPECT_EQ(v.stride, (std::array<int64_t, 3>{20, 5, 1}));
  v = grouped_view(t, {{{0}, {1, 3}, {2}}}, {}, stream());  // free dims around a contracting dim
  EXPECT_TRUE(v.copied);
  EXPECT_EQ(v.size, (std::array<int64_t, 3>{2, 15, 4}));
  v = grouped_view(t, {{{0}, {1}, {2, 3}}}, {1, 1, 2, 1}, stream());  // a repeated dim
  EXPECT_TRUE(v.copied);
  EXPECT_EQ(v.size, (std::array<int64_t, 3>{2, 3, 40}));
  Tensor single = Tensor::empty(emu(), bf16, {1, 7, 1, 3});  // dims of size 1 do not count
  v = grouped_view(single, {{{2, 0}, {1}, {3}}}, {}, stream());
  EXPECT_FALSE(v.copied);
}

TEST(ScaledDot, EmptyResultsAndEmptySums) {
  TJ_SEEDED_RNG(rng);
  Tensor empty = scaled_dot(random_operand(e4m3, {0, 64}, rng).upload(), random_operand(e4m3, {64, 5}, rng).upload(),
                            random_scale(e8m0, {0, 2}, rng).upload(), random_scale(e8m0, {2, 5}, rng).upload());
  EXPECT_EQ(empty.shape(), (Shape{0, 5}));
  ScaledDotCall c;
  make_operand(c.lhs, c.lhs_scale, bf16, std::nullopt, {4, 0}, {1, 1}, rng);
  make_operand(c.rhs, c.rhs_scale, e4m3, std::nullopt, {0, 3}, {1, 1}, rng);
  expect_scaled_dot("K = 0 without scales: zeros", c);
  // With scales: an empty contracting dim takes an empty scale dim, and the sums are zeros.
  Tensor zeros = scaled_dot(random_operand(e4m3, {3, 0}, rng).upload(), random_operand(e4m3, {0, 2}, rng).upload(),
                            random_scale(e8m0, {3, 0}, rng).upload(), random_scale(e8m0, {0, 2}, rng).upload());
  ASSERT_EQ(zeros.shape(), (Shape{3, 2}));
  EXPECT_EQ(download(zeros).values(), std::vector<LD>(6, 0));
}

// Scales far from 1 that cancel: a huge lhs scale against a tiny rhs one (fp8 data, where the
// scales multiply the sums), bf16 values that only the scales bring back into f32's range, and
// scales whose product passes f32's range on tiny fp8 values. The result is inside f32's
// range, as the definition computes it.
TEST(ScaledDot, ScalesThatCancelStayInRange) {
  auto filled = [](DType d, const Shape& shape, LD value) {
    HostTensor t{Host(d, static_cast<size_t>(numel(shape))), shape};
    for (size_t i = 0; i < t.values.size(); ++i) t.values.set(i, value);
    return t;
  };
  const int64_t m = 4, n = 3, k = 64;
  for (auto [data, lhs_value, lhs_scale, rhs_value, rhs_scale] :
       {std::tuple{e4m3, 1.0L, std::ldexp(1.0L, 127), 1.0L, std::ldexp(1.0L, -100)},
        std::tuple{bf16, std::ldexp(1.0L, -80), std::ldexp(1.0L, 80), std::ldexp(1.0L, -80), std::ldexp(1.0L, 80)},
        std::tuple{bf16, std::ldexp(1.0L, 70), std::ldexp(1.0L, -70), std::ldexp(1.0L, 70), std::ldexp(1.0L, -70)},
        // Scales whose product leaves f32 (2^130) on elements small enough for a result inside it.
        std::tuple{e4m3, std::ldexp(1.0L, -9), std::ldexp(1.0L, 100), std::ldexp(1.0L, -9), std::ldexp(1.0L, 30)}}) {
    ScaledDotCall c;
    c.lhs = filled(data, {m, k}, lhs_value);
    c.rhs = filled(data, {k, n}, rhs_value);
    c.lhs_scale = filled(e8m0, {m, k / 32}, lhs_scale);
    c.rhs_scale = filled(e8m0, {k / 32, n}, rhs_scale);
    c.options.preferred_element_type = f32;
    expect_scaled_dot(std::string(dtype_name(data)) + " data", c);
  }
  // An unscaled bf16 operand beside a scaled fp8 one: 448 x 2^120 passes f32's range before the
  // scale 2^-20 brings the result back.
  ScaledDotCall mixed;
  mixed.lhs = filled(e4m3, {m, k}, 448);
  mixed.lhs_scale = filled(e8m0, {m, k / 32}, std::ldexp(1.0L, -20));
  mixed.rhs = filled(bf16, {k, n}, std::ldexp(1.0L, 120));
  mixed.options.preferred_element_type = f32;
  expect_scaled_dot("e4m3 x unscaled bf16", mixed);
}

// e8m0's end bytes through both ways of applying scales (blocks of 32 and 16, sm_90a and
// sm_80): 0x00, 2^-127 (an f32 subnormal), for all of row 1 against 2^110 on column 2's first
// block (the other rows' first blocks 2^-90), so that product is in range and makes row 1,
// column 2; 0xff, NaN, on row 3's second block, which makes row 3 NaN.
TEST(ScaledDot, E8m0EndBytes) {
  TJ_SEEDED_RNG(rng);
  const int64_t m = 8, k = 64, n = 8;
  for (const char* arch : {"emu:sm_90a", "emu:sm_80"})
    for (int64_t block : {32, 16}) {
      ScaledDotCall c;
      c.options.preferred_element_type = f32;
      make_operand(c.lhs, c.lhs_scale, e4m3, e8m0, {m, k}, {1, block}, rng);
      make_operand(c.rhs, c.rhs_scale, e4m3, e8m0, {k, n}, {block, 1}, rng);
      const int64_t blocks = k / block;
      for (int64_t row = 0; row < m; ++row) c.lhs_scale->values.set_raw(size_t(row * blocks), 127 - 90);
      for (int64_t b = 0; b < blocks; ++b) c.lhs_scale->values.set_raw(size_t(1 * blocks + b), 0x00);
      c.rhs_scale->values.set_raw(2, 127 + 110);
      c.lhs_scale->values.set_raw(size_t(3 * blocks + 1), 0xff);
      expect_scaled_dot(std::string(arch) + ", block " + std::to_string(block), c, Device::by_name(arch));
    }
}

// Infinities and NaNs in the operands, through both ways of applying scales (blocks of 32 and
// 16, sm_90a and sm_80) and with the two specials in one K block and in different blocks: they
// propagate as the definition's products and sums do (inf x 0 and inf - inf are NaN).
TEST(ScaledDot, InfinitiesAndNaNsInTheOperands) {
  TJ_SEEDED_RNG(rng);
  const LD inf = std::numeric_limits<LD>::infinity(), nan = std::numeric_limits<LD>::quiet_NaN();
  const int64_t m = 8, k = 64, n = 8;
  const std::pair<DType, DType> pairings[] = {{e5m2, e5m2}, {e4m3, e5m2}, {bf16, e4m3}};
  for (const char* arch : {"emu:sm_90a", "emu:sm_80"})
    for (int64_t block : {32, 16})
      for (auto [lhs, rhs] : pairings) {
        ScaledDotCall c;
        c.options.preferred_element_type = f32;
        make_operand(c.lhs, c.lhs_scale, lhs, e8m0, {m, k}, {1, block}, rng);
        make_operand(c.rhs, c.rhs_scale, rhs, e8m0, {k, n}, {block, 1}, rng);
        Host& a = c.lhs.values;
        Host& b = c.rhs.values;
        auto at_a = [&](int64_t row, int64_t kk) { return size_t(row * k + kk); };
        auto at_b = [&](int64_t kk, int64_t col) { return size_t(kk * n + col); };
        if (lhs != e4m3) {  // e4m3 has no infinity
          // Row 0: inf meets 1, -1 and 0 in columns 0, 1 and 2 (inf, -inf, NaN).
          a.set(at_a(0, 5), inf);
          b.set(at_b(5, 0), 1), b.set(at_b(5, 1), -1), b.set(at_b(5, 2), 0);
          // Column 3 sums inf and -inf in one K block (row 1: k 7 and 8) and in two (row 2: k 7 and 40).
          a.set(at_a(1, 7), inf), a.set(at_a(1, 8), -inf);
          a.set(at_a(2, 7), inf), a.set(at_a(2, 40), -inf);
          b.set(at_b(7, 3), 1), b.set(at_b(8, 3), 1), b.set(at_b(40, 3), 1);
        }
        if (rhs != e4m3) b.set(at_b(30, 5), -inf);  // column 5 takes -inf times row's k 30
        a.set(at_a(4, 50), nan);                      // row 4 is NaN
        b.set(at_b(60, 6), nan);                      // column 6 is NaN
        expect_scaled_dot(std::string(arch) + ", block " + std::to_string(block) + ", " + name_of(lhs) + " x " +
                              name_of(rhs),
                          c, Device::by_name(arch));
      }
}

// A bf16 scale of 0 makes its side's products 0, also where the other side's scale is huge
// (2^106: 448 x 448 x 2^106 x 32 passes f32 before a 0 would take it back): 0, not inf x 0.
// Each program bounds its own scales before its K loop and checks each factor's range only
// when they may leave f32's normal range. Nine programs of 128 x 128 (M = 288, N = 272, blocks
// of 32), e8m0 scales 2^-8 to 2^8 except: byte 0x00 (2^-127) in row 100 (the first row of
// programs), 2^90 in row 150's second block and 2^40 in column 21's first (their bound 2^130
// passes f32's range though no factor does), NaN in column 140's first block. Programs (1, 2),
// (2, 0) and (2, 2) take the unchecked loop, the others the checked one; all match.
TEST(ScaledDot, ProgramsWhoseScalesMayLeaveTheRangeCheckEachFactor) {
  TJ_SEEDED_RNG(rng);
  const int64_t m = 288, n = 272, k = 96, blocks = k / 32;
  ScaledDotCall c = matrix_call(e4m3, e4m3, e8m0, e8m0, m, n, k, 32, 32, f32, rng);
  c.lhs_scale->values.set_raw(size_t(100 * blocks + 2), 0x00);
  c.lhs_scale->values.set_raw(size_t(150 * blocks + 1), 127 + 90);
  c.rhs_scale->values.set_raw(size_t(0 * n + 21), 127 + 40);
  c.rhs_scale->values.set_raw(size_t(0 * n + 140), 0xff);
  expect_scaled_dot("e4m3, e8m0 scales", c, Device::by_name("emu:sm_90a"));
  // The bounds read 32 blocks of K a step: a NaN past the first step, in block 35 of one row,
  // then in block 33 of one column.
  const int64_t blocks_k = 40;
  for (bool in_lhs : {true, false}) {
    ScaledDotCall l = matrix_call(e4m3, e4m3, e8m0, e8m0, 40, 48, 32 * blocks_k, 32, 32, f32, rng);
    if (in_lhs) l.lhs_scale->values.set_raw(size_t(7 * blocks_k + 35), 0xff);
    else l.rhs_scale->values.set_raw(size_t(33 * 48 + 5), 0xff);
    expect_scaled_dot(in_lhs ? "a NaN lhs scale in block 35" : "a NaN rhs scale in block 33", l,
                      Device::by_name("emu:sm_90a"));
  }
}

TEST(ScaledDot, AZeroScaleMeetingAHugeOneGivesZero) {
  TJ_SEEDED_RNG(rng);
  const int64_t m = 4, k = 64, n = 4;
  for (const char* arch : {"emu:sm_90a", "emu:sm_80"})
    for (int64_t block : {32, 16}) {
      ScaledDotCall c;
      c.options.preferred_element_type = f32;
      make_operand(c.lhs, c.lhs_scale, e4m3, bf16, {m, k}, {1, block}, rng);
      make_operand(c.rhs, c.rhs_scale, e4m3, e8m0, {k, n}, {block, 1}, rng);
      for (Host* h : {&c.lhs.values, &c.rhs.values})
        for (size_t i = 0; i < h->size(); ++i) h->set(i, 448);
      for (size_t i = 0; i < c.rhs_scale->values.size(); ++i) c.rhs_scale->values.set(i, std::ldexp(LD{1}, 106));
      // Row 0's scales 0, the other rows' 2^-30 (their sums stay within f32).
      for (size_t i = 0; i < c.lhs_scale->values.size(); ++i)
        c.lhs_scale->values.set(i, i < size_t(k / block) ? 0 : std::ldexp(LD{1}, -30));
      Reference ref = reference_scaled_dot(c.lhs, c.rhs, &*c.lhs_scale, &*c.rhs_scale, DotDimensionNumbers{{1}, {0}, {}, {}});
      for (int64_t j = 0; j < n; ++j) ASSERT_EQ(ref.sum[size_t(j)], 0) << "the reference's own row 0";
      expect_scaled_dot(std::string(arch) + ", block " + std::to_string(block), c, Device::by_name(arch));
    }
}

TEST(ScaledDot, OtherArchitectures) {
  TJ_SEEDED_RNG(rng);
  for (const char* arch : {"emu:sm_80", "emu:sm_89"}) {
    Device& device = Device::by_name(arch);
    expect_scaled_dot(std::string(arch) + " e4m3 x e5m2, block 32",
                      matrix_call(e4m3, e5m2, e8m0, e8m0, 20, 24, 64, 32, 32, f32, rng), device);
    expect_scaled_dot(std::string(arch) + " e4m3 x e4m3, block 2",
                      matrix_call(e4m3, e4m3, e8m0, bf16, 20, 24, 64, 2, 2, bf16, rng), device);
  }
}

TEST(ScaledDot, MxQuantizeRoundTrip) {
  TJ_SEEDED_RNG(rng);
  const int64_t m = 24, n = 20, k = 128;
  HostTensor x = random_operand(f32, {m, k}, rng), w = random_operand(f32, {n, k}, rng);
  MxQuantized qx = mx_quantize(x.upload()), qw = mx_quantize(w.upload());
  HostTensor dx{download(qx.data), {m, k}}, sx{download(qx.scales), {m, k / 32}};
  HostTensor dw{download(qw.data), {n, k}}, sw{download(qw.scales), {n, k / 32}};
  const DotDimensionNumbers numbers{{1}, {1}, {}, {}};
  Tensor out = scaled_dot(qx.data, qw.data, qx.scales, qw.scales, options_of(numbers, f32));
  std::vector<LD> got = download(out).values();
  // Exact for the quantized values ...
  Reference ref = reference_scaled_dot(dx, dw, &sx, &sw, numbers);
  expect_scaled("quantized product", got, ref.sum, allowed_error(ref, f32, false, true), 1.0);
  // ... and x w^T within the quantization error (each factor within 2^-4 relative).
  Reference exact = reference_scaled_dot(x, w, nullptr, nullptr, numbers);
  expect_scaled("against the unquantized product", got, exact.sum, exact.magnitude, 0.13);
}

TEST(ScaledDotPlan, HowTheScalesAreApplied) {
  auto plan = [](DType lhs, DType rhs, int64_t lb, int64_t rb, int cc = 90) {
    return plan_scaled_dot(lhs, rhs, lb, rb, 128, 128, 256, cc);
  };
  auto p = plan(e4m3, e5m2, 32, 32);
  EXPECT_EQ(p.mode, ScaleMode::partial_products);
  EXPECT_FALSE(p.compute.has_value());  // fp8 tensor cores
  EXPECT_EQ(p.block_k, 32);
  EXPECT_EQ(p.group, 32);
  EXPECT_EQ(p.num_stages, 3);  // one dot per group: its operands staged
  p = plan(e4m3, e4m3, 64, 128);
  EXPECT_EQ(p.mode, ScaleMode::partial_products);
  EXPECT_EQ(p.group, 64);
  EXPECT_EQ(p.block_k, 64);
  p = plan(e4m3, e4m3, 96, 96);  // groups of three K tiles, an inner loop each
  EXPECT_EQ(p.mode, ScaleMode::partial_products);
  EXPECT_EQ(p.block_k, 32);
  EXPECT_EQ(p.num_stages, 1);
  p = plan(e4m3, e4m3, 32, 32, 80);  // no fp8 mma: widened to bf16
  EXPECT_EQ(p.compute, bf16);
  EXPECT_EQ(p.mode, ScaleMode::partial_products);
  p = plan(e4m3, e4m3, 16, 16);  // below fp8's K of 32: scaled in registers
  EXPECT_EQ(p.mode, ScaleMode::operand_tiles);
  EXPECT_EQ(p.compute, bf16);
  EXPECT_EQ(p.num_stages, 3);  // 128 x 32 tiles of bytes and their scales: 24 KiB a stage at most
  p = plan(f32, f32, 16, 16);  // 48 KiB a stage: not staged
  EXPECT_EQ(p.mode, ScaleMode::operand_tiles);
  EXPECT_EQ(p.num_stages, 1);
  p = plan(f16, e4m3, 16, 0);
  EXPECT_EQ(p.mode, ScaleMode::partial_products);
  EXPECT_EQ(p.compute, f16);
  EXPECT_EQ(p.group, 16);
  // Beside a bf16 operand, scaled or not, a product may leave f32's range where a scale brings
  // the result back.
  for (auto [lb, rb] : {std::pair{16, 0}, std::pair{0, 32}}) {
    p = plan(bf16, e4m3, lb, rb);
    EXPECT_EQ(p.mode, ScaleMode::operand_tiles) << lb << " " << rb;
    EXPECT_EQ(p.compute, bf16);
  }
  for (int64_t block : {2, 3, 6, 24}) {
    p = plan(e4m3, bf16, block, 32);
    EXPECT_EQ(p.mode, ScaleMode::operand_tiles) << block;
    EXPECT_EQ(p.compute, bf16) << block;
  }
  p = plan(f16, e4m3, 2, 2);
  EXPECT_EQ(p.mode, ScaleMode::operand_tiles);
  EXPECT_EQ(p.compute, f32);
  EXPECT_EQ(p.precision, tilejit::dsl::Precision::tf32x3);
  p = plan(f16, bf16, 0, 0);  // tf32 holds both exactly
  EXPECT_EQ(p.mode, ScaleMode::none);
  EXPECT_EQ(p.compute, f32);
  EXPECT_EQ(p.precision, tilejit::dsl::Precision::tf32);
  p = plan(f32, e4m3, 0, 0);
  EXPECT_EQ(p.mode, ScaleMode::none);
  EXPECT_EQ(p.precision, tilejit::dsl::Precision::tf32x3);
}

}  // namespace
}  // namespace tjsdot
