// Every argument error of scaled_dot (SEMANTICS.md, "scaled_dot"): the message starts with the
// op and names the offending tensor, dim and sizes.
#include "tests/ops/scaled_dot_test_util.h"

namespace tjsdot {
namespace {

constexpr DType e4m3 = DType::f8e4m3, bf16 = DType::bf16, e8m0 = DType::e8m0;

Tensor make(DType d, Shape shape, Device& device = emu()) { return Tensor::empty(device, d, std::move(shape)); }

std::string error_with(const Tensor& lhs, const Tensor& rhs, const std::optional<Tensor>& ls,
                       const std::optional<Tensor>& rs, std::optional<DotDimensionNumbers> numbers = std::nullopt,
                       DType out = bf16) {
  return error_of([&] { scaled_dot(lhs, rhs, ls, rs, ScaledDotOptions{std::move(numbers), out}); });
}

TEST(ScaledDotErrors, DTypes) {
  Tensor a = make(e4m3, {4, 64}), b = make(e4m3, {64, 8}), sa = make(e8m0, {4, 2}), sb = make(e8m0, {2, 8});
  EXPECT_THAT(error_with(make(DType::i8, {4, 64}), b, sa, sb),
              HasSubstr("scaled_dot: lhs must be f8e4m3, f8e5m2, bf16, f16 or f32, but is i8[4, 64] on emu"));
  EXPECT_THAT(error_with(a, make(DType::i32, {64, 8}), sa, sb),
              HasSubstr("scaled_dot: rhs must be f8e4m3, f8e5m2, bf16, f16 or f32, but is i32[64, 8] on emu"));
  EXPECT_THAT(error_with(a, b, make(DType::f32, {4, 2}), sb),
              HasSubstr("scaled_dot: lhs_scale must be e8m0 or bf16, but is f32[4, 2] on emu"));
  EXPECT_THAT(error_with(a, b, sa, make(e4m3, {2, 8})),
              HasSubstr("scaled_dot: rhs_scale must be e8m0 or bf16, but is f8e4m3[2, 8] on emu"));
  EXPECT_THAT(error_with(a, b, sa, sb, std::nullopt, DType::f16),
              HasSubstr("scaled_dot: preferred_element_type must be bf16 or f32, but is f16"));
}

TEST(ScaledDotErrors, Devices) {
  Device& other = Device::by_name("emu:sm_80");
  Tensor a = make(e4m3, {4, 64}), b = make(e4m3, {64, 8}), sa = make(e8m0, {4, 2}), sb = make(e8m0, {2, 8});
  EXPECT_THAT(error_with(a, make(e4m3, {64, 8}, other), sa, sb),
              HasSubstr("scaled_dot: lhs and rhs must be on one device"));
  EXPECT_THAT(error_with(a, b, make(e8m0, {4, 2}, other), sb),
              HasSubstr("scaled_dot: lhs and lhs_scale must be on one device"));
  EXPECT_THAT(error_with(a, b, sa, make(e8m0, {2, 8}, other)),
              HasSubstr("scaled_dot: lhs and rhs_scale must be on one device"));
}

TEST(ScaledDotErrors, Ranks) {
  Tensor a = make(e4m3, {4, 64}), b = make(e4m3, {64, 8}), sa = make(e8m0, {4, 2}), sb = make(e8m0, {2, 8});
  EXPECT_THAT(error_with(a, make(e4m3, {1, 64, 8}), sa, sb),
              HasSubstr("scaled_dot: rhs has rank 3 and lhs has rank 2, but all four tensors must have one rank"));
  EXPECT_THAT(error_with(a, b, make(e8m0, {8}), sb),
              HasSubstr("scaled_dot: lhs_scale has rank 1 and lhs has rank 2, but all four tensors must have one "
                        "rank (lhs_scale e8m0[8] on emu, lhs f8e4m3[4, 64] on emu)"));
  EXPECT_THAT(error_with(a, b, sa, make(e8m0, {1, 2, 8})),
              HasSubstr("scaled_dot: rhs_scale has rank 3 and lhs has rank 2"));
}

TEST(ScaledDotErrors, RankZeroOrOneNeedsDimensionNumbers) {
  EXPECT_THAT(error_with(make(e4m3, {64}), make(e4m3, {64}), std::nullopt, std::nullopt),
              HasSubstr("scaled_dot: lhs f8e4m3[64] on emu has rank 1: operands of rank 0 or 1 need explicit "
                        "dimension_numbers"));
  EXPECT_THAT(error_with(make(e4m3, {}), make(e4m3, {}), std::nullopt, std::nullopt),
              HasSubstr("scaled_dot: lhs f8e4m3[] on emu has rank 0: operands of rank 0 or 1 need explicit"));
}

TEST(ScaledDotErrors, DimensionNumbers) {
  Tensor a = make(e4m3, {2, 4, 64}), b = make(e4m3, {2, 64, 8});
  auto error = [&](DotDimensionNumbers n) { return error_with(a, b, std::nullopt, std::nullopt, n); };
  EXPECT_THAT(error({{2, 0}, {1}, {}, {}}),
              HasSubstr("scaled_dot: dimension_numbers pairs 2 lhs_contracting dims with 1 rhs_contracting dims"));
  EXPECT_THAT(error({{2}, {1}, {0}, {}}),
              HasSubstr("scaled_dot: dimension_numbers pairs 1 lhs_batch dims with 0 rhs_batch dims"));
  EXPECT_THAT(error({{3}, {1}, {0}, {0}}), HasSubstr("scaled_dot: lhs_contracting dim 3 is out of range for rank 3"));
  EXPECT_THAT(error({{2}, {-4}, {0}, {0}}), HasSubstr("scaled_dot: rhs_contracting dim -4 is out of range for rank 3"));
  EXPECT_THAT(error({{2}, {1}, {5}, {0}}), HasSubstr("scaled_dot: lhs_batch dim 5 is out of range for rank 3"));
  EXPECT_THAT(error({{2}, {1}, {-1}, {0}}),
              HasSubstr("scaled_dot: lhs dim 2 appears twice in dimension_numbers (lhs_contracting and lhs_batch)"));
  EXPECT_THAT(error({{2, 2}, {1, 2}, {}, {}}),
              HasSubstr("scaled_dot: lhs dim 2 appears twice in dimension_numbers (lhs_contracting and "
                        "lhs_contracting)"));
  EXPECT_THAT(error({{2}, {1}, {0}, {1}}),
              HasSubstr("scaled_dot: rhs dim 1 appears twice in dimension_numbers (rhs_contracting and rhs_batch)"));
}

TEST(ScaledDotErrors, PairedSizes) {
  EXPECT_THAT(error_with(make(e4m3, {3, 4, 64}), make(e4m3, {2, 64, 8}), std::nullopt, std::nullopt),
              HasSubstr("scaled_dot: lhs batch dim 0 has size 3 and rhs batch dim 0 has size 2, but paired batch "
                        "dims must have one size (lhs f8e4m3[3, 4, 64] on emu, rhs f8e4m3[2, 64, 8] on emu)"));
  EXPECT_THAT(error_with(make(e4m3, {4, 64}), make(e4m3, {32, 8}), std::nullopt, std::nullopt),
              HasSubstr("scaled_dot: lhs contracting dim 1 has size 64 and rhs contracting dim 0 has size 32, but "
                        "paired contracting dims must have one size"));
  EXPECT_THAT(error_with(make(e4m3, {64, 4}), make(e4m3, {8, 48}), std::nullopt, std::nullopt,
                         DotDimensionNumbers{{0}, {1}, {}, {}}),
              HasSubstr("lhs contracting dim 0 has size 64 and rhs contracting dim 1 has size 48"));
}

TEST(ScaledDotErrors, ScaleSizesAlongContractingDims) {
  Tensor a = make(e4m3, {4, 64}), b = make(e4m3, {64, 8}), sb = make(e8m0, {2, 8});
  EXPECT_THAT(error_with(a, b, make(e8m0, {4, 5}), sb),
              HasSubstr("scaled_dot: lhs_scale dim 1 has size 5, which does not divide lhs's contracting dim 1 of "
                        "size 64 (lhs_scale e8m0[4, 5] on emu, lhs f8e4m3[4, 64] on emu)"));
  EXPECT_THAT(error_with(a, b, make(e8m0, {4, 0}), sb),
              HasSubstr("lhs_scale dim 1 has size 0, which does not divide lhs's contracting dim 1 of size 64"));
  EXPECT_THAT(error_with(a, b, make(e8m0, {4, 64}), sb),
              HasSubstr("scaled_dot: lhs_scale dim 1 has size 64 for lhs's contracting dim 1 of size 64: 1 element(s) "
                        "per block, but a block must hold at least 2 (the scale's size at most 32)"));
  EXPECT_THAT(error_with(a, b, make(e8m0, {4, 2}), make(e8m0, {128, 8})),
              HasSubstr("scaled_dot: rhs_scale dim 0 has size 128, which does not divide rhs's contracting dim 0 of "
                        "size 64"));
  EXPECT_THAT(error_with(a, b, make(e8m0, {4, 2}), make(bf16, {64, 8})),
              HasSubstr("rhs_scale dim 0 has size 64 for rhs's contracting dim 0 of size 64: 1 element(s) per block"));
  // An empty contracting dim takes an empty scale dim.
  EXPECT_THAT(error_with(make(e4m3, {4, 0}), make(e4m3, {0, 8}), make(e8m0, {4, 1}), std::nullopt),
              HasSubstr("scaled_dot: lhs_scale dim 1 has size 1, but lhs's contracting dim 1 is empty, so the scale's "
                        "must be too (lhs_scale e8m0[4, 1] on emu, lhs f8e4m3[4, 0] on emu)"));
}

TEST(ScaledDotErrors, ScaleSizesElsewhere) {
  Tensor a = make(e4m3, {2, 4, 64}), b = make(e4m3, {2, 64, 8});
  EXPECT_THAT(error_with(a, b, make(e8m0, {2, 3, 2}), std::nullopt),
              HasSubstr("scaled_dot: lhs_scale dim 1 has size 3, but must equal lhs dim 1 (size 4): scales match "
                        "their operand outside the contracting dims (lhs_scale e8m0[2, 3, 2] on emu, lhs "
                        "f8e4m3[2, 4, 64] on emu)"));
  EXPECT_THAT(error_with(a, b, std::nullopt, make(e8m0, {1, 2, 8})),
              HasSubstr("scaled_dot: rhs_scale dim 0 has size 1, but must equal rhs dim 0 (size 2)"));
  EXPECT_THAT(error_with(a, b, std::nullopt, make(e8m0, {2, 2, 4})),
              HasSubstr("scaled_dot: rhs_scale dim 2 has size 4, but must equal rhs dim 2 (size 8)"));
}

TEST(MxQuantizeErrors, Arguments) {
  EXPECT_THAT(error_of([] { mx_quantize(make(DType::f8e4m3, {4, 32})); }),
              HasSubstr("mx_quantize: x must be f32, bf16 or f16, but is f8e4m3[4, 32] on emu"));
  EXPECT_THAT(error_of([] { mx_quantize(make(DType::f32, {})); }),
              HasSubstr("mx_quantize: x f32[] on emu is a scalar, but it is quantized along its last dim"));
  EXPECT_THAT(error_of([] { mx_quantize(make(DType::bf16, {4, 48})); }),
              HasSubstr("mx_quantize: x bf16[4, 48] on emu has last dim 48, which is not a multiple of the block "
                        "size 32"));
  EXPECT_THAT(error_of([] { mx_quantize(permuted_view(make(DType::f32, {64, 32}), {1, 0})); }),
              HasSubstr("mx_quantize: x must be contiguous (row-major), but f32[32, 64] on emu has strides [1, 32]"));
}

}  // namespace
}  // namespace tjsdot
