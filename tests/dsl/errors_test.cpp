// Misuse of the DSL throws tilejit::Error whose message starts with the user's
// "errors_test.cpp:<line>: " and names the op and the offending shapes / dtypes.
// `line = __LINE__;` sits on the same line as the failing call.
#include <fmt/format.h>

#include <limits>

#include "dsl_test_util.h"

namespace {

using namespace tjtest;

constexpr const char* kFile = "errors_test.cpp";

// --- broadcasting and dtypes --------------------------------------------------------------

TEST(DslErrors, BroadcastShapeMismatch) {
  int line = 0;
  std::string msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    Tile a = arange(0, 64), b = arange(0, 32);
    line = __LINE__; (void)(a + b);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "add: cannot broadcast shapes [64] and [32]");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    Tile m = load(x + expand_dims(arange(0, 64), 1) * 32 + expand_dims(arange(0, 32), 0));
    line = __LINE__; (void)(m * load(x + arange(0, 16)));
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "mul: cannot broadcast shapes [64x32] and [16]");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    line = __LINE__; (void)broadcast_to(arange(0, 32), {64, 16});
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "broadcast_to: cannot broadcast");
  EXPECT_CONTAINS(msg, "[64x16]");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    line = __LINE__; (void)broadcast_to(reshape(arange(0, 64), {8, 8}), {8});
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "broadcast_to: cannot broadcast shape [8x8] to [8]");

  msg = trace_error({"x", "n"}, [&](const Constants&, Ptr<f32> x, Scalar<i32> n) {
    Tile offs = arange(0, 64);
    line = __LINE__; store(x + offs, load(x + offs), arange(0, 32) < n);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "store: cannot broadcast shapes [64] and [32]");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    line = __LINE__; (void)(x + arange(0, 64) + arange(0, 16));
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "addptr: cannot broadcast shapes [64] and [16]");
}

TEST(DslErrors, BroadcastingBeyondTheTileSizeLimit) {
  int line = 0;
  std::string msg = trace_error({}, [&](const Constants&) {
    Tile col = expand_dims(arange(0, 2048), 1);
    line = __LINE__; (void)(col + arange(0, 1024));
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "add: tile of shape 2048x1024 has 2097152 elements (at most 1048576)");

  msg = trace_error({}, [&](const Constants&) {
    line = __LINE__; (void)zeros({2048, 1024}, f32);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "full: tile of shape 2048x1024 has 2097152 elements");

  // Dims whose product wraps around 64 bits (to 0 here) are refused all the same.
  msg = trace_error({}, [&](const Constants&) {
    line = __LINE__; (void)zeros({int64_t{1} << 32, int64_t{1} << 32}, f32);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "full: tile of shape 4294967296x4294967296 has more than 2^63 elements");
}

TEST(DslErrors, DtypeMismatchBetweenTiles) {
  int line = 0;
  std::string msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    Tile a = load(x + arange(0, 64));
    Tile h = cast(a, f16);
    line = __LINE__; (void)(a + h);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "add: operand dtypes differ: tile<64xf32> and tile<64xf16>; cast one explicitly");

  msg = trace_error({"x", "n"}, [&](const Constants&, Ptr<f32> x, Scalar<i64> n) {
    line = __LINE__; (void)(arange(0, 64) < n);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "cmp: operand dtypes differ: tile<64xi32> and i64");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    Tile offs = arange(0, 64);
    line = __LINE__; (void)where(offs < 3, load(x + offs), offs);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "select: operand dtypes differ: tile<64xf32> and tile<64xi32>");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    Tile a = load(x + arange(0, 64));
    line = __LINE__; (void)fma(a, a, cast(a, bf16));
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "fma: operand dtypes differ: tile<64xf32> and tile<64xbf16>");

  msg = trace_error({"x", "y"}, [&](const Constants&, Ptr<f32> x, Ptr<f16> y) {
    line = __LINE__; (void)where(arange(0, 4) < 2, x, y);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "select: operand dtypes differ: ptr<f32> and ptr<f16>");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    Tile offs = arange(0, 64);
    line = __LINE__; store(x + offs, offs);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "store: value of type tile<64xi32> does not match pointer type tile<64xptr<f32>>");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    Tile offs = arange(0, 64);
    line = __LINE__; (void)load(x + offs, offs < 3, cast(load(x + offs), f16));
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "load: value of type tile<64xf16> does not match pointer type tile<64xptr<f32>>");
}

TEST(DslErrors, IntegerLiteralThatDoesNotFitItsDtype) {
  int line = 0;
  std::string msg = trace_error({}, [&](const Constants&) {
    Tile offs = arange(0, 64);
    line = __LINE__; (void)(offs < 3'000'000'000);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg,
                  "integer literal 3000000000 does not fit dtype i32 (-2147483648 to 2147483647); cast explicitly");

  msg = trace_error({}, [&](const Constants&) {
    Tile small = cast(arange(0, 64), i8);
    line = __LINE__; (void)(small & 0x1ff);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "integer literal 511 does not fit dtype i8 (-128 to 255)");

  // An unsigned literal above INT64_MAX would wrap to a negative one (x < -1, always false).
  msg = trace_error({}, [&](const Constants&) {
    Tile wide = cast(arange(0, 64), i64);
    line = __LINE__; (void)(wide < std::numeric_limits<uint64_t>::max());
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "unsigned literal 18446744073709551615 does not fit a signed 64-bit literal");
  auto k = define_kernel("k", {"x"}, {}, [](const Constants&, Ptr<i64> x) {
    store(x + arange(0, 16), cast(arange(0, 16), i64) & uint64_t{INT64_MAX});  // the largest that fits
  });
  EXPECT_NO_THROW(k.trace(k.constants()));
}

TEST(DslErrors, FloatLiteralWithAnIntegerTile) {
  int line = 0;
  std::string msg = trace_error({}, [&](const Constants&) {
    Tile offs = arange(0, 64);
    line = __LINE__; (void)(offs + 1.5);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "add: floating-point literal 1.5 used with an integer operand of dtype i32; cast explicitly");

  msg = trace_error({"n"}, [&](const Constants&, Scalar<i64> n) {
    line = __LINE__; (void)(0.25 * n);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "mul: floating-point literal 0.25 used with an integer operand of dtype i64");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    line = __LINE__; (void)(x + 0.5);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "addptr: floating-point literal 0.5 used with an integer operand of dtype i32");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<i32> x) {
    line = __LINE__; store(x, 2.5);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "store: floating-point literal 2.5 used with an integer operand of dtype i32");

  msg = trace_error({}, [&](const Constants&) {
    line = __LINE__; (void)full({4}, 1.5, i32);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "full: value 1.5 is not an integer for dtype i32");
}

TEST(DslErrors, NumbersAloneHaveNoDtype) {
  int line = 0;
  std::string msg = trace_error({}, [&](const Constants&) {
    Tile m = arange(0, 8) < 4;
    line = __LINE__; (void)where(m, 1.0, 0.0);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "select: cannot infer a dtype: at least one operand must be a tile");
}

// --- index tiles, constants, shapes -------------------------------------------------------

// cdiv is a ceiling of integers: (a + b - 1) / b in floating point is not one.
TEST(DslErrors, CdivOfFloats) {
  int line = 0;
  std::string msg = trace_error({}, [&](const Constants&) {
    line = __LINE__; (void)cdiv(cast(arange(0, 16), f32), 4.0);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "cdiv: operands must be integers, got tile<16xf32> and literal 4");
}

TEST(DslErrors, ArangeLengthNotAPowerOfTwo) {
  int line = 0;
  std::string msg = trace_error({}, [&](const Constants&) {
    line = __LINE__; (void)arange(0, 48);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "arange: length end - start = 48 - 0 = 48 must be a power of two");

  msg = trace_error({}, [&](const Constants&) {
    line = __LINE__; (void)arange(5, 5);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "arange: length end - start = 5 - 5 = 0 must be a power of two");

  msg = trace_error({}, [&](const Constants&) {
    line = __LINE__; (void)arange(16, 0);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "= -16 must be a power of two");
}

TEST(DslErrors, ProgramIdAxis) {
  int line = 0;
  std::string msg = trace_error({}, [&](const Constants&) {
    line = __LINE__; (void)program_id(3);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "program_id: axis must be 0, 1 or 2, got 3");

  msg = trace_error({}, [&](const Constants&) {
    line = __LINE__; (void)num_programs(-1);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "num_programs: axis must be 0, 1 or 2, got -1");
}

TEST(DslErrors, FullShapesAndDtypes) {
  int line = 0;
  std::string msg = trace_error({}, [&](const Constants&) {
    line = __LINE__; (void)zeros({3, 4}, f32);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "full: tile dims must be powers of two, got shape 3x4");

  for (DType d : {f8e4m3, f8e5m2, e8m0}) {
    msg = trace_error({}, [&](const Constants&) {
      line = __LINE__; (void)full({16}, 1.0, d);
    });
    EXPECT_ERROR_AT(msg, kFile, line);
    EXPECT_CONTAINS(msg, fmt::format("full: dtype {} cannot hold constants; build f32 and cast", dtype_name(d)));
  }

  // A float beyond int64 has no integer value to convert to (x86 would give INT64_MIN).
  for (double v : {1e19, -1e19, std::numeric_limits<double>::infinity()}) {
    msg = trace_error({}, [&](const Constants&) {
      line = __LINE__; (void)full({16}, v, i64);
    });
    EXPECT_ERROR_AT(msg, kFile, line);
    EXPECT_CONTAINS(msg, fmt::format("full: value {} does not fit dtype i64", v));
  }
  msg = trace_error({}, [&](const Constants&) {
    line = __LINE__; (void)scalar(1e30, i32);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "full: value 1e+30 does not fit dtype i32");
}

TEST(DslErrors, ReshapeElementCountMismatch) {
  int line = 0;
  std::string msg = trace_error({}, [&](const Constants&) {
    line = __LINE__; (void)reshape(arange(0, 64), {8, 16});
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "reshape: cannot reshape [64] (64 elements) to [8x16] (128 elements)");

  msg = trace_error({}, [&](const Constants&) {
    line = __LINE__; (void)reshape(arange(0, 64), {6, 8});
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "reshape: tile dims must be powers of two, got shape 6x8");

  msg = trace_error({}, [&](const Constants&) {
    line = __LINE__; (void)reshape(program_id(0), {1});
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "reshape: expects a tile, got scalar i32");
}

TEST(DslErrors, TransWithABadPermutation) {
  int line = 0;
  std::string msg = trace_error({}, [&](const Constants&) {
    Tile m = reshape(arange(0, 2048), {64, 32});
    line = __LINE__; (void)trans(m, {0, 0});
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "trans: permutation [0, 0] does not match a tile of shape [64x32]");

  msg = trace_error({}, [&](const Constants&) {
    Tile m = reshape(arange(0, 2048), {64, 32});
    line = __LINE__; (void)trans(m, {2, 0, 1});
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "trans: permutation [2, 0, 1] does not match a tile of shape [64x32]");

  msg = trace_error({}, [&](const Constants&) {
    line = __LINE__; (void)trans(arange(0, 64));
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "trans: permutation [1, 0] does not match a tile of shape [64]");

  msg = trace_error({}, [&](const Constants&) {
    Tile m = reshape(arange(0, 64), {8, 8});
    line = __LINE__; (void)trans(m, {1, 2});
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "trans: permutation [1, 2] does not match a tile of shape [8x8]");
}

TEST(DslErrors, ExpandDimsAxisOutOfRange) {
  int line = 0;
  std::string msg = trace_error({}, [&](const Constants&) {
    line = __LINE__; (void)expand_dims(arange(0, 64), 2);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "expand_dims: axis 2 is out of range for shape [64]");

  msg = trace_error({}, [&](const Constants&) {
    line = __LINE__; (void)expand_dims(arange(0, 64), -3);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "expand_dims: axis -3 is out of range for shape [64]");
}

// --- arithmetic domains ---------------------------------------------------------------------

TEST(DslErrors, ArithmeticOnFp8AndE8m0Tiles) {
  int line = 0;
  std::string msg = trace_error({"x"}, [&](const Constants&, Ptr<f8e4m3> x) {
    Tile a = load(x + arange(0, 64));
    line = __LINE__; (void)(a + a);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "add: expects integer or f16/bf16/f32 operands (cast fp8 / e8m0 first), got tile<64xf8e4m3>");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    Tile a = cast(load(x + arange(0, 64)), f8e4m3);
    Tile b = cast(load(x + arange(0, 64)), f8e4m3);
    line = __LINE__; (void)(a * b);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "mul: expects integer or f16/bf16/f32 operands (cast fp8 / e8m0 first), got tile<64xf8e4m3>");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f8e5m2> x) {
    Tile a = load(x + arange(0, 64));
    line = __LINE__; (void)maximum(a, a);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "maximum: expects integer or f16/bf16/f32 operands (cast fp8 / e8m0 first), got tile<64xf8e5m2>");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<e8m0> x) {
    Tile a = load(x + arange(0, 64));
    line = __LINE__; (void)(a - a);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "sub: expects integer or f16/bf16/f32 operands (cast fp8 / e8m0 first), got tile<64xe8m0>");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f8e4m3> x) {
    Tile a = load(x + arange(0, 64));
    line = __LINE__; (void)exp(a);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "exp: expects an f16, bf16 or f32 operand, got tile<64xf8e4m3>");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f8e4m3> x) {
    Tile a = load(x + arange(0, 64));
    line = __LINE__; (void)(-a);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "neg: expects an integer or float operand, got tile<64xf8e4m3>");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f8e4m3> x) {
    Tile a = load(x + arange(0, 64));
    line = __LINE__; (void)(a < a);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "cmp: expects integer or f16/bf16/f32 operands, got tile<64xf8e4m3>");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f8e4m3> x) {
    Tile a = load(x + arange(0, 64));
    line = __LINE__; (void)sum(a, 0);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "reduce(sum): expects an integer or f16/bf16/f32 tile, got tile<64xf8e4m3>");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f8e4m3> x) {
    Tile a = load(x + arange(0, 64));
    line = __LINE__; (void)abs(a);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "abs: expects an integer or float operand, got tile<64xf8e4m3>");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f8e4m3> x) {
    Tile a = load(x + arange(0, 64));
    line = __LINE__; (void)fma(a, a, a);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "fma: expects f16, bf16 or f32 operands, got tile<64xf8e4m3>");
}

TEST(DslErrors, OperatorDomains) {
  int line = 0;
  std::string msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    Tile a = load(x + arange(0, 64));
    line = __LINE__; (void)(a & a);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "and: expects integer or i1 operands, got tile<64xf32>");

  msg = trace_error({}, [&](const Constants&) {
    Tile m = arange(0, 64) < 4;
    line = __LINE__; (void)(m << 1);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "shl: expects integer operands, got tile<64xi1>");

  msg = trace_error({}, [&](const Constants&) {
    Tile offs = arange(0, 64);
    line = __LINE__; (void)(offs && offs);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "and: expects i1 operands, got tile<64xi32>");

  msg = trace_error({}, [&](const Constants&) {
    Tile offs = arange(0, 64);
    line = __LINE__; (void)(!offs);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "not: expects an i1 operand, got tile<64xi32>");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    Tile a = load(x + arange(0, 64));
    line = __LINE__; (void)(~a);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "not: expects an integer operand, got tile<64xf32>");

  msg = trace_error({}, [&](const Constants&) {
    Tile m = arange(0, 64) < 4;
    line = __LINE__; (void)(m + m);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "add: expects integer or f16/bf16/f32 operands (cast fp8 / e8m0 first), got tile<64xi1>");

  msg = trace_error({}, [&](const Constants&) {
    Tile m = arange(0, 64) < 4;
    line = __LINE__; (void)(m < m);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "cmp: expects integer or f16/bf16/f32 operands, got tile<64xi1>");

  msg = trace_error({}, [&](const Constants&) {
    Tile offs = arange(0, 64);
    line = __LINE__; (void)sqrt(offs);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "sqrt: expects an f16, bf16 or f32 operand, got tile<64xi32>");

  msg = trace_error({}, [&](const Constants&) {
    Tile offs = arange(0, 64);
    line = __LINE__; (void)fma(offs, offs, 1);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "fma: expects f16, bf16 or f32 operands, got tile<64xi32>");

  msg = trace_error({}, [&](const Constants&) {
    Tile m = arange(0, 64) < 4;
    line = __LINE__; (void)sum(m, 0);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "reduce(sum): expects an integer or f16/bf16/f32 tile, got tile<64xi1>");

  msg = trace_error({"x", "y"}, [&](const Constants&, Ptr<f32> x, Ptr<f32> y) {
    line = __LINE__; (void)(x < y);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "cmp: expects integer or f16/bf16/f32 operands, got ptr<f32>");
}

TEST(DslErrors, PointerArithmetic) {
  int line = 0;
  std::string msg = trace_error({"x", "y"}, [&](const Constants&, Ptr<f32> x, Ptr<f32> y) {
    line = __LINE__; (void)(x + y);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "addptr: cannot add two pointers");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    Tile offs = cast(arange(0, 64), f32);
    line = __LINE__; (void)(x + offs);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "addptr: pointer offsets must be i32 or i64, got tile<64xf32>");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    line = __LINE__; (void)(x * 2);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "mul: a number cannot stand for a pointer");
}

TEST(DslErrors, NumbersCannotStandForFp8OrE8m0Values) {
  // fp8 / e8m0 have no constants (full() refuses them too): a number meeting such a tile or
  // pointer is an error, never an fp8 constant the lowering cannot build.
  int line = 0;
  std::string msg = trace_error({"x"}, [&](const Constants&, Ptr<f8e4m3> x) {
    line = __LINE__; store(x + arange(0, 64), 0.0);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "store: a number cannot stand for a value of dtype f8e4m3");

  msg = trace_error({"x", "n"}, [&](const Constants&, Ptr<f8e5m2> x, Scalar<i32> n) {
    Tile offs = arange(0, 64);
    line = __LINE__; (void)load(x + offs, offs < n, 0.0);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "load: a number cannot stand for a value of dtype f8e5m2");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<e8m0> x) {
    Tile offs = arange(0, 64);
    Tile v = load(x + offs);
    line = __LINE__; (void)where(offs < 3, v, 1);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "select: a number cannot stand for a value of dtype e8m0");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f8e4m3> x) {
    Tile v = load(x + arange(0, 64));
    line = __LINE__; (void)(v * 2.0);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "mul: a number cannot stand for a value of dtype f8e4m3");
}

// --- conversions ----------------------------------------------------------------------------

TEST(DslErrors, CastAndBitcast) {
  int line = 0;
  std::string msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    line = __LINE__; (void)cast(x, i64);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "cast: cannot cast pointer type ptr<f32>");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    Tile a = load(x + arange(0, 64));
    line = __LINE__; (void)bitcast(a, f16);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "bitcast: cannot bitcast tile<64xf32> to f16");

  msg = trace_error({}, [&](const Constants&) {
    Tile m = arange(0, 64) < 3;
    line = __LINE__; (void)bitcast(m, i8);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "bitcast: cannot bitcast tile<64xi1> to i8");
}

// --- memory -----------------------------------------------------------------------------------

TEST(DslErrors, StoreThroughANonPointer) {
  int line = 0;
  std::string msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    Tile v = load(x + arange(0, 64));
    line = __LINE__; store(v, 1.0);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "store: expects a pointer or a tile of pointers, got tile<64xf32>");

  msg = trace_error({"n"}, [&](const Constants&, Scalar<i32> n) {
    line = __LINE__; store(n, n, n > 0);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "store: expects a pointer or a tile of pointers, got i32");
}

// A store writes each of the pointer's addresses once: a value or mask with more elements than
// the pointer would store several values to one address.
TEST(DslErrors, StoreThatWouldBroadcastThePointer) {
  int line = 0;
  std::string msg = trace_error({"y"}, [&](const Constants&, Ptr<f32> y) {
    line = __LINE__; store(y, cast(arange(0, 128), f32));
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "store: the value (tile<128xf32>) would broadcast the pointer (ptr<f32>) to 128, storing "
                       "several values to one address");
  msg = trace_error({"y"}, [&](const Constants&, Ptr<f32> y) {
    line = __LINE__; store(y + expand_dims(arange(0, 16), 1), 1.0, expand_dims(arange(0, 16), 0) < 8);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "or the mask (tile<1x16xi1>) would broadcast the pointer (tile<16x1xptr<f32>>) to 16x16");
  // Values and masks smaller than the pointer broadcast to it; dims of 1 may be added to it.
  auto k = define_kernel("k", {"y"}, {}, [](const Constants&, Ptr<f32> y) {
    Tile rows = expand_dims(arange(0, 16), 1), cols = expand_dims(arange(0, 16), 0);
    store(y + rows * 16 + cols, cast(rows, f32), cols < 8);
    store(y + arange(0, 16), cast(cols, f32));           // (16) pointers, (1, 16) values
    store(y, full({1}, 2.0, f32));                       // one pointer, one value
  });
  EXPECT_NO_THROW(k.trace(k.constants()));
}

TEST(DslErrors, LoadOfANonPointer) {
  int line = 0;
  std::string msg = trace_error({}, [&](const Constants&) {
    Tile offs = arange(0, 64);
    line = __LINE__; (void)load(offs);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "load: expects a pointer or a tile of pointers, got tile<64xi32>");

  msg = trace_error({}, [&](const Constants&) {
    Tile offs = arange(0, 64);
    line = __LINE__; (void)load(offs, offs < 8, 0);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "load: expects a pointer or a tile of pointers, got tile<64xi32>");
}

TEST(DslErrors, MaskThatIsNotI1) {
  int line = 0;
  std::string msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    Tile offs = arange(0, 64);
    line = __LINE__; (void)load(x + offs, offs);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "load: mask must be i1, got tile<64xi32>");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    Tile offs = arange(0, 64);
    Tile v = load(x + offs);
    line = __LINE__; store(x + offs, v, v);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "store: mask must be i1, got tile<64xf32>");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    Tile offs = arange(0, 64);
    line = __LINE__; (void)where(offs, offs, 0);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "select: mask must be i1, got tile<64xi32>");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<i32> x) {
    Tile offs = arange(0, 64);
    line = __LINE__; (void)atomic_add(x + offs, 1, offs);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "atomic_add: mask must be i1, got tile<64xi32>");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    line = __LINE__; (void)where(true, x, x);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "select: condition must be an i1 tile or scalar");
}

TEST(DslErrors, Atomics) {
  int line = 0;
  std::string msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    line = __LINE__; (void)atomic_cas(x, 0.0, 1.0);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "atomic_cas: is supported for i32 and i64, got ptr<f32>");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    Tile offs = arange(0, 64);
    line = __LINE__; (void)atomic_cas(x + offs, load(x + offs), load(x + offs));
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "atomic_cas: is supported for i32 and i64, got tile<64xptr<f32>>");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f16> x) {
    line = __LINE__; (void)atomic_max(x, cast(scalar(1.0, f32), f16));
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "atomic_max: is not supported for ptr<f16>");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<bf16> x) {
    line = __LINE__; (void)atomic_add(x, 1.0);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "atomic_add: is not supported for ptr<bf16>");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<i32> x) {
    line = __LINE__; (void)atomic_cas(x, cast(scalar(0, i32), i64), 1);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "atomic_cas: value of type i64 does not match pointer type ptr<i32>");
}

// --- reductions and dot ------------------------------------------------------------------------

TEST(DslErrors, ReduceAxisOutOfRange) {
  int line = 0;
  std::string msg = trace_error({}, [&](const Constants&) {
    Tile m = cast(reshape(arange(0, 2048), {64, 32}), f32);
    line = __LINE__; (void)sum(m, 2);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "reduce(sum): axis 2 is out of range for shape [64x32]");

  msg = trace_error({}, [&](const Constants&) {
    Tile m = cast(reshape(arange(0, 2048), {64, 32}), f32);
    line = __LINE__; (void)argmax(m, -3, true);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "reduce(argmax): axis -3 is out of range for shape [64x32]");

  msg = trace_error({}, [&](const Constants&) {
    line = __LINE__; (void)max(program_id(0), 0);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "reduce(max): expects a tile, got scalar i32");

  msg = trace_error({}, [&](const Constants&) {
    line = __LINE__; (void)argmin(arange(0, 8), 1);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "reduce(argmin): axis 1 is out of range for shape [8]");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    line = __LINE__; (void)min(x + arange(0, 8), 0);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "reduce(min): expects an integer or f16/bf16/f32 tile, got tile<8xptr<f32>>");
}

// A (rows x cols) tile of `d` loaded from x.
Tile matrix(const Tile& x, int64_t rows, int64_t cols, DType d) {
  return cast(load(x + expand_dims(arange(0, rows), 1) * cols + expand_dims(arange(0, cols), 0)), d);
}

TEST(DslErrors, DotShapes) {
  int line = 0;
  std::string msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    Tile a = matrix(x, 64, 32, f16), b = matrix(x, 16, 64, f16);
    line = __LINE__; (void)dot(a, b, zeros({64, 64}, f32));
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "dot: inner dims differ: a is [64x32], b is [16x64]");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    Tile a = matrix(x, 64, 32, f16), b = matrix(x, 16, 64, f16);
    line = __LINE__; (void)dot(a, b);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "dot: inner dims differ: a is [64x32], b is [16x64]");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    Tile a = matrix(x, 64, 32, f16), b = matrix(x, 32, 64, f16);
    line = __LINE__; (void)dot(a, b, zeros({32, 64}, f32));
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "dot: accumulator must be tile<64x64xf32> for a [64x32] x [32x64] product, got tile<32x64xf32>");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    Tile a = matrix(x, 64, 32, bf16), b = matrix(x, 32, 16, bf16);
    line = __LINE__; (void)dot(a, b, zeros({64, 16}, bf16));
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "dot: accumulator must be tile<64x16xf32> for a [64x32] x [32x16] product, got tile<64x16xbf16>");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    Tile a = matrix(x, 32, 32, i8), b = matrix(x, 32, 32, i8);
    line = __LINE__; (void)dot(a, b, zeros({32, 32}, f32));
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "dot: accumulator must be tile<32x32xi32> for a [32x32] x [32x32] product, got tile<32x32xf32>");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    Tile a = matrix(x, 16, 16, f32), b = matrix(x, 16, 16, f32);
    line = __LINE__; (void)dot(a, b, scalar(0.0, f32));
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "dot: accumulator must be tile<16x16xf32> for a [16x16] x [16x16] product, got f32");
}

TEST(DslErrors, DotRankNotTwo) {
  int line = 0;
  std::string msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    Tile a = cast(load(x + arange(0, 64)), f16), b = matrix(x, 64, 64, f16);
    line = __LINE__; (void)dot(a, b, zeros({64, 64}, f32));
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "dot: expects 2-D tiles, got tile<64xf16> and tile<64x64xf16>");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    Tile a = reshape(matrix(x, 64, 64, f16), {4, 16, 64}), b = matrix(x, 64, 64, f16);
    line = __LINE__; (void)dot(a, b);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "dot: expects 2-D tiles, got tile<4x16x64xf16> and tile<64x64xf16>");

  msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    Tile b = matrix(x, 16, 16, f32);
    line = __LINE__; (void)dot(scalar(1.0, f32), b);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "dot: expects 2-D tiles, got f32 and tile<16x16xf32>");
}

TEST(DslErrors, DotUnsupportedDtypePairs) {
  const std::pair<DType, DType> pairs[] = {{f16, bf16}, {f32, f16}, {i8, f16},   {i32, i32}, {i64, i64},
                                           {f8e4m3, f16}, {e8m0, e8m0}, {f8e5m2, e8m0}, {i8, f8e4m3}, {i1, i1}};
  for (auto [da, db] : pairs) {
    SCOPED_TRACE(fmt::format("{} x {}", dtype_name(da), dtype_name(db)));
    int line = 0;
    std::string msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
      Tile a = matrix(x, 32, 32, da), b = matrix(x, 32, 32, db);
      line = __LINE__; (void)dot(a, b, zeros({32, 32}, f32));
    });
    EXPECT_ERROR_AT(msg, kFile, line);
    EXPECT_CONTAINS(msg, fmt::format("dot: unsupported operand dtypes {} x {}", dtype_name(da), dtype_name(db)));
  }
}

TEST(DslErrors, OncePerElementTakesNoPointers) {
  int line = 0;
  std::string msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    line = __LINE__; (void)once_per_element(x + arange(0, 32));
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "once_per_element: expects a value, got tile<32xptr<f32>>");
}

TEST(DslErrors, WaitAfterTakesNoPointers) {
  int line = 0;
  std::string msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    Tile ptrs = x + arange(0, 32);
    line = __LINE__; (void)wait_after(ptrs, zeros({32}, f32));
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "wait_after: expects a product and a value, got tile<32xptr<f32>>");
}

// --- control flow ------------------------------------------------------------------------------

TEST(DslErrors, LoopCarriedTypeChange) {
  int line = 0;
  std::string msg = trace_error({}, [&](const Constants&) {
    line = __LINE__; (void)for_range(0, 8, 1, zeros({64}, f32), [&](Tile, Tile acc) { return cast(acc, f16); });
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "for: loop-carried values change type: enter as (tile<64xf32>) but the body returns (tile<64xf16>)");

  msg = trace_error({}, [&](const Constants&) {
    line = __LINE__; (void)for_range(0, 8, 1, zeros({64}, f32), [&](Tile, Tile acc) { return sum(acc, 0); });
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "enter as (tile<64xf32>) but the body returns (f32)");

  msg = trace_error({}, [&](const Constants&) {
    std::vector<Tile> init = {scalar(0, i32), zeros({8}, i64)};
    line = __LINE__; (void)for_range(0, 8, 1, init, [&](Tile i, std::vector<Tile> c) { return std::vector<Tile>{c[0] + i}; });
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "enter as (i32, tile<8xi64>) but the body returns (i32)");

  // The loop call spans several lines: the error points at the line the call starts on.
  msg = trace_error({}, [&](const Constants&) {
    line = __LINE__; (void)for_range(0, 8, 1, scalar(0, i32),
                                      [&](Tile i, Tile acc) {
                                        return cast(acc + i, i64);
                                      });
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "(i32) but the body returns (i64)");
}

TEST(DslErrors, LoopBoundsAndStep) {
  int line = 0;
  std::string msg = trace_error({}, [&](const Constants&) {
    line = __LINE__; for_range(0, 8, 0, [&](Tile) {});
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "for: step must be positive");

  msg = trace_error({}, [&](const Constants&) {
    line = __LINE__; for_range(0, 8, -2, [&](Tile) {});
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "for: step must be positive");

  msg = trace_error({}, [&](const Constants&) {
    line = __LINE__; for_range(0, arange(0, 8), 1, [&](Tile) {});
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "for: bounds and step must be i32 or i64 scalars, got tile<8xi32>");

  msg = trace_error({"s"}, [&](const Constants&, Scalar<f32> s) {
    line = __LINE__; for_range(0, s, 1, [&](Tile) {});
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "for: bounds and step must be i32 or i64 scalars, got f32");

  msg = trace_error({}, [&](const Constants&) {
    line = __LINE__; for_range(0.5, 8, 1, [&](Tile) {});
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "for: floating-point literal 0.5 used with an integer operand of dtype i32");

  // A floating-point step is a tilejit::Error like any other bad bound.
  msg = trace_error({}, [&](const Constants&) {
    line = __LINE__; for_range(0, 8, 0.5, [&](Tile) {});
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "for: floating-point literal 0.5 used with an integer operand of dtype i32");
}

TEST(DslErrors, ValueDefinedInALoopUsedAfterIt) {
  int line = 0;
  std::string msg = trace_error({"out"}, [&](const Constants&, Ptr<i32> out) {
    Tile inner;
    for_range(0, 8, 1, [&](Tile i) { inner = i * 2; });
    line = __LINE__; (void)(inner + 1);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "add: operand of type i32 is used outside the loop or branch that defines it");

  msg = trace_error({"out"}, [&](const Constants&, Ptr<f32> out) {
    Tile inner;
    (void)for_range(0, 8, 1, zeros({64}, f32), [&](Tile i, Tile acc) {
      inner = acc * 2.0;
      return acc + inner;
    });
    line = __LINE__; store(out + arange(0, 64), inner);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "store: operand of type tile<64xf32> is used outside the loop or branch that defines it");

  // The induction variable itself.
  msg = trace_error({"out"}, [&](const Constants&, Ptr<i32> out) {
    Tile iv;
    for_range(0, 8, 1, [&](Tile i) { iv = i; });
    line = __LINE__; store(out, iv);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "used outside the loop");

  // Used inside a later loop.
  msg = trace_error({"out"}, [&](const Constants&, Ptr<i32> out) {
    Tile inner;
    for_range(0, 8, 1, [&](Tile i) { inner = i + 1; });
    for_range(0, 8, 1, [&](Tile j) { line = __LINE__; store(out + j, inner); });
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "used outside the loop");

  // Broadcast to a tile first: still an error at the user's line.
  msg = trace_error({"out"}, [&](const Constants&, Ptr<i32> out) {
    Tile inner;
    for_range(0, 8, 1, [&](Tile i) { inner = i + 1; });
    line = __LINE__; (void)(arange(0, 64) * inner);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "operand of type i32 is used outside the loop");
}

TEST(DslErrors, ValueDefinedInABranchUsedOutsideIt) {
  int line = 0;
  std::string msg = trace_error({"out"}, [&](const Constants&, Ptr<i32> out) {
    Tile pid = program_id(0);
    Tile t;
    if_then(pid == 0, [&] { t = pid + 1; });
    line = __LINE__; store(out, t);
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "store: operand of type i32 is used outside the loop or branch that defines it");

  msg = trace_error({"out"}, [&](const Constants&, Ptr<i32> out) {
    Tile pid = program_id(0);
    Tile t;
    (void)if_else(pid == 0, [&] { t = pid + 1; return std::vector<Tile>{}; },
                  [&] { line = __LINE__; store(out, t); return std::vector<Tile>{}; });
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "used outside the loop or branch");
}

TEST(DslErrors, IfElseBranchesReturnDifferentTypes) {
  int line = 0;
  std::string msg = trace_error({}, [&](const Constants&) {
    Tile c = program_id(0) == 0;
    line = __LINE__; (void)if_else(c, [&] { return std::vector<Tile>{scalar(1.0, f32)}; }, [&] { return std::vector<Tile>{scalar(1, i32)}; });
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "if: branches return different types: (f32) and (i32)");

  msg = trace_error({}, [&](const Constants&) {
    Tile c = program_id(0) == 0;
    line = __LINE__; (void)if_else(c, [&] { return std::vector<Tile>{zeros({64}, f32)}; }, [&] { return std::vector<Tile>{zeros({32}, f32)}; });
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "if: branches return different types: (tile<64xf32>) and (tile<32xf32>)");

  msg = trace_error({}, [&](const Constants&) {
    Tile c = program_id(0) == 0;
    line = __LINE__; (void)if_else(c, [&] { return std::vector<Tile>{c}; }, [&] { return std::vector<Tile>{}; });
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "if: branches return different types: (i1) and ()");
}

TEST(DslErrors, IfConditionMustBeAnI1Scalar) {
  int line = 0;
  std::string msg = trace_error({}, [&](const Constants&) {
    Tile c = arange(0, 64) < 3;
    line = __LINE__; if_then(c, [&] {});
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "if: condition must be an i1 scalar, got tile<64xi1>");

  msg = trace_error({}, [&](const Constants&) {
    line = __LINE__; if_then(program_id(0), [&] {});
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "if: condition must be an i1 scalar, got i32");
}

// --- static_check, constants, kernels ----------------------------------------------------------

TEST(DslErrors, StaticCheckFails) {
  int line = 0;
  std::string msg = trace_error(
      {},
      [&](const Constants& c) {
        line = __LINE__; static_check(c["BLOCK"] % 3 == 0, fmt::format("BLOCK = {} must be a multiple of 3", c["BLOCK"]));
      },
      {{"BLOCK", 64}});
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_EQ(msg, at_line(kFile, line) + "static_check: BLOCK = 64 must be a multiple of 3");
}

TEST(DslErrors, UnknownConstantName) {
  auto k = define_kernel("k", {"x"}, {{"BLOCK", 64}}, [](const Constants& c, Ptr<f32> x) {
    store(x + arange(0, c["BLOCK"]), 0.0);
  });
  std::string msg = error_of([&] { (void)k.constants({{"NOPE", 1}}); });
  EXPECT_EQ(msg, "kernel k: unknown constant 'NOPE' (declared: BLOCK, num_warps, num_stages)");
  // A known override is fine.
  EXPECT_EQ(k.constants({{"BLOCK", 128}})["BLOCK"], 128);

  // Reading an undeclared constant inside the kernel body.
  msg = trace_error({}, [&](const Constants& c) { (void)arange(0, c["NOPE"]); });
  EXPECT_CONTAINS(msg, "kernel constant 'NOPE' is not declared");
}

TEST(DslErrors, NumWarpsAndNumStages) {
  auto k = define_kernel("k", {"x"}, {}, [](const Constants&, Ptr<f32> x) { store(x, 0.0); });
  for (int64_t warps : {0, 3, 6, 64, -4}) {
    SCOPED_TRACE(warps);
    std::string msg = error_of([&] { k.trace(k.constants({{"num_warps", warps}})); });
    EXPECT_EQ(msg, fmt::format("kernel k: num_warps must be a power of two in [1, 32], got {}", warps));
  }
  for (int64_t warps : {1, 2, 4, 8, 16, 32}) EXPECT_EQ(k.trace(k.constants({{"num_warps", warps}}))->num_warps, warps);
  // Checked as given, not as an int: 2^32 + 4 is not 4.
  std::string msg = error_of([&] { k.trace(k.constants({{"num_warps", (int64_t{1} << 32) + 4}})); });
  EXPECT_EQ(msg, "kernel k: num_warps must be a power of two in [1, 32], got 4294967300");
  for (int64_t stages : {int64_t{0}, int64_t{-1}, int64_t{17}, int64_t{1} << 32}) {
    SCOPED_TRACE(stages);
    msg = error_of([&] { k.trace(k.constants({{"num_stages", stages}})); });
    EXPECT_EQ(msg, fmt::format("kernel k: num_stages must be in [1, 16], got {}", stages));
  }
  EXPECT_EQ(k.trace(k.constants({{"num_stages", 16}}))->num_stages, 16);
  // The declared default counts too.
  auto k8 = define_kernel("k8", {"x"}, {{"num_warps", 12}}, [](const Constants&, Ptr<f32> x) { store(x, 0.0); });
  msg = error_of([&] { k8.trace(k8.constants()); });
  EXPECT_CONTAINS(msg, "kernel k8: num_warps must be a power of two in [1, 32], got 12");
}

TEST(DslErrors, KernelDefinitionAndFacts) {
  std::string msg = error_of([] {
    (void)define_kernel("k", {"x"}, {}, [](const Constants&, Ptr<f32> x, Scalar<i32> n) {});
  });
  EXPECT_EQ(msg, "define_kernel(k): 1 parameter names for 2 parameters");

  auto k = define_kernel("k", {"x", "n"}, {}, [](const Constants&, Ptr<f32> x, Scalar<i32> n) { store(x, 0.0); });
  msg = error_of([&] { k.trace(k.constants(), {ir::ArgFacts{}}); });
  EXPECT_EQ(msg, "kernel k: 1 specialization facts for 2 parameters");

  // The IR text, which the kernel caches key on, names parameters and constants: names that
  // collide there (copy(a, b) and copy(b, a) would both print %p) are refused.
  auto copy = [](const Constants&, Ptr<f32> from, Ptr<f32> to) { store(to, load(from)); };
  msg = error_of([&] { (void)define_kernel("copy", {"p", "p"}, {}, copy); });
  EXPECT_EQ(msg, "kernel copy: two parameters are named 'p'");
  for (const char* name : {"", "0", "1x", "a b", "a,b", "%p"}) {
    msg = error_of([&] { (void)define_kernel("copy", {"from", name}, {}, copy); });
    EXPECT_EQ(msg, fmt::format("kernel copy: parameter name '{}' is not an identifier", name));
  }
  msg = error_of([&] { (void)define_kernel("copy", {"from", "to"}, {{"BLOCK", 1}, {"BLOCK", 2}}, copy); });
  EXPECT_EQ(msg, "kernel copy: the constant 'BLOCK' is declared twice");
  msg = error_of([&] { (void)define_kernel("copy", {"from", "to"}, {{"BLOCK = 2, X", 1}}, copy); });
  EXPECT_EQ(msg, "kernel copy: constant name 'BLOCK = 2, X' is not an identifier");
  EXPECT_NO_THROW((void)define_kernel("copy", {"_from", "to2"}, {{"BLOCK_1", 1}}, copy));
}

// --- outside a trace --------------------------------------------------------------------------

TEST(DslErrors, OpCalledOutsideAnyTrace) {
  int line = 0;
  std::string msg = error_of([&] { line = __LINE__; (void)program_id(0); });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "program_id: DSL ops can only be used while a kernel is being traced");

  msg = error_of([&] { line = __LINE__; (void)arange(0, 16); });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "arange: DSL ops can only be used while a kernel is being traced");

  msg = error_of([&] { line = __LINE__; (void)zeros({16}, f32); });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "DSL ops can only be used while a kernel is being traced");

  // A tile kept from a finished trace cannot be used, nor even looked at: its value belongs to
  // a function that may be gone (here it is still alive).
  const std::string stale = "use of a Tile outside the kernel trace that made it";
  Tile kept;
  auto k = define_kernel("k", {"x"}, {}, [&](const Constants&, Ptr<f32> x) { kept = load(x + arange(0, 16)); });
  auto fn = k.trace(k.constants());
  ASSERT_TRUE(kept.valid());
  EXPECT_CONTAINS(error_of([&] { (void)kept.type(); }), stale);
  EXPECT_CONTAINS(error_of([&] { (void)exp(kept); }), stale);
  EXPECT_CONTAINS(error_of([&] { (void)(kept * kept); }), stale);

  // ... nor inside the trace of another kernel.
  EXPECT_CONTAINS(trace_error({"y"}, [&](const Constants&, Ptr<f32> y) { store(y + arange(0, 16), kept); }), stale);
}

// A tile kept in a static from one trace of a kernel, used by the next (another
// specialization): the first trace's function is freed by then.
TEST(DslErrors, TileKeptFromAFreedTrace) {
  auto k = define_kernel("k", {"x"}, {{"N", 16}}, [](const Constants& c, Ptr<f32> x) {
    static Tile offsets = arange(0, 16);
    store(x + offsets, c["N"]);
  });
  EXPECT_NO_THROW(k.trace(k.constants()));  // the function it returns is freed at once
  EXPECT_CONTAINS(error_of([&] { k.trace(k.constants({{"N", 32}})); }),
                  "use of a Tile outside the kernel trace that made it");
}

TEST(DslErrors, TraceStateIsRestoredAfterAnError) {
  // A failed trace leaves no trace installed: ops outside still fail, and a later trace works.
  (void)trace_error({}, [](const Constants&) { (void)arange(0, 3); });
  std::string msg = error_of([] { (void)program_id(0); });
  EXPECT_CONTAINS(msg, "DSL ops can only be used while a kernel is being traced");
  // An error inside a loop body leaves the builder in the right block for the next trace.
  (void)trace_error({}, [](const Constants&) {
    for_range(0, 4, 1, [](Tile i) { (void)(i + 0.5); });
  });
  auto fn = trace("ok", {"x"}, [](const Constants&, Ptr<f32> x) { store(x, 1.0); });
  EXPECT_EQ(fn->body.ops.size(), 2u);
}

TEST(DslErrors, EmptyTileHandle) {
  std::string msg = trace_error({}, [](const Constants&) {
    Tile t;
    EXPECT_FALSE(t.valid());
    (void)exp(t);
  });
  EXPECT_CONTAINS(msg, "use of an empty Tile handle");
}

TEST(DslErrors, NestedErrorPointsAtTheInnerLine) {
  int line = 0;
  std::string msg = trace_error({"x"}, [&](const Constants&, Ptr<f32> x) {
    for_range(0, 4, 1, [&](Tile i) {
      if_then(i < 2, [&] {
        Tile v = load(x + arange(0, 64));
        line = __LINE__; (void)(v + arange(0, 32));
      });
    });
  });
  EXPECT_ERROR_AT(msg, kFile, line);
  EXPECT_CONTAINS(msg, "add: operand dtypes differ: tile<64xf32> and tile<32xi32>");
}

}  // namespace
