// The text form of the tile IR: exact output for small kernels, stability across traces,
// constants and specialization facts in the header, attribute and type formatting.
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <regex>

#include "dsl_test_util.h"

namespace {

using namespace tjtest;

// Each op on its own statement, so the text does not depend on the compiler's order of
// evaluating operator arguments.
Kernel vector_add() {
  return define_kernel("vector_add", {"x", "y", "out", "n"}, {{"BLOCK", 1024}},
                       [](const Constants& c, Ptr<f32> x, Ptr<f32> y, Ptr<f32> out, Scalar<i32> n) {
                         Tile pid = program_id(0);
                         Tile base = pid * c["BLOCK"];
                         Tile range = arange(0, c["BLOCK"]);
                         Tile offs = base + range;
                         Tile mask = offs < n;
                         Tile px = x + offs;
                         Tile a = load(px, mask);
                         Tile py = y + offs;
                         Tile b = load(py, mask);
                         Tile sum = a + b;
                         Tile po = out + offs;
                         store(po, sum, mask);
                       });
}

Kernel loop_if() {
  return define_kernel("loop_if", {"x", "n"}, {}, [](const Constants&, Ptr<f32> x, Scalar<i32> n) {
    Tile init = zeros({16}, f32);
    Tile acc = for_range(0, n, 16, init, [&](Tile i, Tile acc) {
      Tile p = x + i;
      Tile v = load(p);
      Tile next = acc + v;
      return next;
    });
    Tile c = n > 0;
    auto r = if_else(
        c,
        [&] {
          Tile s = sum(acc, 0);
          return std::vector<Tile>{s};
        },
        [&] {
          Tile z = scalar(0.0, f32);
          return std::vector<Tile>{z};
        });
    store(x, r[0]);
  });
}

Kernel gemm() {
  return define_kernel(
      "gemm", {"a", "b", "c", "M", "N", "K", "stride_am", "stride_bk", "stride_cm"},
      {{"BLOCK_M", 64}, {"BLOCK_N", 64}, {"BLOCK_K", 16}},
      [](const Constants& c, Ptr<f16> a, Ptr<f16> b, Ptr<f32> out, Scalar<i32> M, Scalar<i32> N, Scalar<i32> K,
         Scalar<i32> stride_am, Scalar<i32> stride_bk, Scalar<i32> stride_cm) {
        int64_t bm = c["BLOCK_M"], bn = c["BLOCK_N"], bk = c["BLOCK_K"];
        Tile rows = program_id(0) * bm + arange(0, bm);
        Tile cols = program_id(1) * bn + arange(0, bn);
        Tile ks = arange(0, bk);
        Tile a_ptrs = a + expand_dims(rows, 1) * stride_am + expand_dims(ks, 0);
        Tile b_ptrs = b + expand_dims(ks, 1) * stride_bk + expand_dims(cols, 0);
        Tile acc = for_range(0, K, bk, zeros({bm, bn}, f32), [&](Tile k, Tile acc) {
          Tile a_mask = expand_dims(rows < M, 1) && expand_dims(ks + k < K, 0);
          Tile b_mask = expand_dims(ks + k < K, 1) && expand_dims(cols < N, 0);
          Tile a_tile = load(a_ptrs + k, a_mask, 0.0);
          Tile b_tile = load(b_ptrs + k * stride_bk, b_mask, 0.0);
          return dot(a_tile, b_tile, acc);
        });
        if_then(program_id(2) == 0, [&] {
          Tile c_mask = expand_dims(rows < M, 1) && expand_dims(cols < N, 0);
          store(out + expand_dims(rows, 1) * stride_cm + expand_dims(cols, 0), acc, c_mask);
        });
      });
}

TEST(IrPrinter, VectorAddExactText) {
  Kernel k = vector_add();
  auto fn = k.trace(k.constants());
  EXPECT_EQ(fn->str(),
            "kernel @vector_add(%x: ptr<f32>, %y: ptr<f32>, %out: ptr<f32>, %n: i32) num_warps(4) num_stages(1) "
            "constants {BLOCK = 1024, num_warps = 4, num_stages = 1} {\n"
            "  %0 = program_id {axis = 0} : i32\n"
            "  %1 = constant {value = 1024} : i32\n"
            "  %2 = mul %0, %1 : i32\n"
            "  %3 = arange {start = 0, end = 1024} : tile<1024xi32>\n"
            "  %4 = splat %2 : tile<1024xi32>\n"
            "  %5 = add %4, %3 : tile<1024xi32>\n"
            "  %6 = splat %n : tile<1024xi32>\n"
            "  %7 = cmp %5, %6 {predicate = \"lt\"} : tile<1024xi1>\n"
            "  %8 = splat %x : tile<1024xptr<f32>>\n"
            "  %9 = addptr %8, %5 : tile<1024xptr<f32>>\n"
            "  %10 = constant {value = 0} : f32\n"
            "  %11 = splat %10 : tile<1024xf32>\n"
            "  %12 = load %9, %7, %11 : tile<1024xf32>\n"
            "  %13 = splat %y : tile<1024xptr<f32>>\n"
            "  %14 = addptr %13, %5 : tile<1024xptr<f32>>\n"
            "  %15 = constant {value = 0} : f32\n"
            "  %16 = splat %15 : tile<1024xf32>\n"
            "  %17 = load %14, %7, %16 : tile<1024xf32>\n"
            "  %18 = add %12, %17 : tile<1024xf32>\n"
            "  %19 = splat %out : tile<1024xptr<f32>>\n"
            "  %20 = addptr %19, %5 : tile<1024xptr<f32>>\n"
            "  store %20, %18, %7\n"
            "}\n");
}

TEST(IrPrinter, LoopAndBranchExactText) {
  Kernel k = loop_if();
  auto fn = k.trace(k.constants());
  EXPECT_EQ(fn->str(),
            "kernel @loop_if(%x: ptr<f32>, %n: i32) num_warps(4) num_stages(1) constants {num_warps = 4, num_stages = 1} {\n"
            "  %0 = constant {value = 0} : tile<16xf32>\n"
            "  %1 = constant {value = 0} : i32\n"
            "  %2 = constant {value = 16} : i32\n"
            "  %3 = for %1, %n, %2, %0 : tile<16xf32> {\n"
            "  ^bb0(%4: i32, %5: tile<16xf32>):\n"
            "    %6 = addptr %x, %4 : ptr<f32>\n"
            "    %7 = load %6 : f32\n"
            "    %8 = splat %7 : tile<16xf32>\n"
            "    %9 = add %5, %8 : tile<16xf32>\n"
            "    yield %9\n"
            "  }\n"
            "  %10 = constant {value = 0} : i32\n"
            "  %11 = cmp %n, %10 {predicate = \"gt\"} : i1\n"
            "  %12 = if %11 : f32 {\n"
            "  ^bb0():\n"
            "    %13 = reduce %3 {kind = \"sum\", axis = 0} : f32\n"
            "    yield %13\n"
            "  ^bb1():\n"
            "    %14 = constant {value = 0} : f32\n"
            "    yield %14\n"
            "  }\n"
            "  store %x, %12\n"
            "}\n");
}

TEST(IrPrinter, EmptyKernel) {
  auto fn = trace("empty", {}, [](const Constants&) {});
  EXPECT_EQ(fn->str(), "kernel @empty() num_warps(4) num_stages(1) constants {num_warps = 4, num_stages = 1} {\n}\n");
}

// --- stability ------------------------------------------------------------------------------

TEST(IrPrinter, TracingTwiceGivesIdenticalText) {
  for (Kernel k : {vector_add(), loop_if(), gemm()}) {
    SCOPED_TRACE(k.name());
    auto first = k.trace(k.constants());
    auto second = k.trace(k.constants());
    EXPECT_EQ(first->str(), second->str());
    EXPECT_EQ(first->str(), first->str());  // printing does not change the function
  }
}

TEST(IrPrinter, TextDoesNotDependOnOtherTraces) {
  Kernel a = gemm(), b = vector_add();
  std::string alone = a.trace(a.constants())->str();
  auto other = b.trace(b.constants());  // kept alive while `a` is traced again
  std::string after = a.trace(a.constants())->str();
  EXPECT_EQ(alone, after);
  // Two Kernel objects from the same definition print the same.
  Kernel a2 = gemm();
  EXPECT_EQ(a2.trace(a2.constants())->str(), alone);
  // Tracing inside another kernel's trace does not disturb either.
  std::string inner;
  auto outer_kernel = define_kernel("outer", {"x"}, {}, [&](const Constants&, Ptr<f32> x) {
    Tile v = load(x);
    inner = a.trace(a.constants())->str();
    store(x, v + 1.0);
  });
  auto outer = outer_kernel.trace(outer_kernel.constants());
  EXPECT_EQ(inner, alone);
  EXPECT_EQ(outer->str(), "kernel @outer(%x: ptr<f32>) num_warps(4) num_stages(1) constants {num_warps = 4, num_stages = 1} {\n"
                          "  %0 = load %x : f32\n"
                          "  %1 = constant {value = 1} : f32\n"
                          "  %2 = add %0, %1 : f32\n"
                          "  store %x, %2\n"
                          "}\n");
}

TEST(IrPrinter, ValuesAreNumberedInPrintOrder) {
  Kernel k = gemm();
  std::string text = k.trace(k.constants())->str();
  // Every "%N" is defined (as a result or a block argument) once, in increasing order.
  std::regex def(R"((?:^|\n) *(?:(%\d+(?:, %\d+)*) = |\^bb\d+\(([^)]*)\)))");
  std::regex id(R"(%(\d+))");
  int expected = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), def); it != std::sregex_iterator(); ++it) {
    std::string names = (*it)[1].matched ? (*it)[1].str() : (*it)[2].str();
    for (auto n = std::sregex_iterator(names.begin(), names.end(), id); n != std::sregex_iterator(); ++n)
      EXPECT_EQ(std::stoi((*n)[1].str()), expected++) << text;
  }
  EXPECT_GT(expected, 50);
  // Parameters print by name.
  EXPECT_CONTAINS(text, "= splat %stride_am : tile<64x1xi32>\n");
}

TEST(IrPrinter, ConstantsAndOverridesInTheHeader) {
  Kernel k = vector_add();
  std::string def = k.trace(k.constants())->str();
  auto fn = k.trace(k.constants({{"BLOCK", 256}, {"num_warps", 8}, {"num_stages", 3}}));
  EXPECT_EQ(fn->num_warps, 8);
  EXPECT_EQ(fn->num_stages, 3);
  std::string text = fn->str();
  EXPECT_NE(text, def);
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "kernel @vector_add(%x: ptr<f32>, %y: ptr<f32>, %out: ptr<f32>, %n: i32) num_warps(8) num_stages(3) "
            "constants {BLOCK = 256, num_warps = 8, num_stages = 3} {");
  EXPECT_CONTAINS(text, "= arange {start = 0, end = 256} : tile<256xi32>\n");
  EXPECT_NOT_CONTAINS(text, "1024");
  // Constants print in declaration order, user constants first.
  auto g = gemm();
  std::string gtext = g.trace(g.constants({{"BLOCK_K", 32}}))->str();
  EXPECT_CONTAINS(gtext, "constants {BLOCK_M = 64, BLOCK_N = 64, BLOCK_K = 32, num_warps = 4, num_stages = 1} {\n");
  EXPECT_CONTAINS(gtext, "tile<64x32xf16>");
}

// --- specialization facts ---------------------------------------------------------------------

Kernel spec_kernel() {
  return define_kernel("spec", {"x", "n", "m", "s"}, {},
                       [](const Constants&, Ptr<f16> x, Scalar<i32> n, Scalar<i64> m, Scalar<i32> s) {
                         Tile offs = arange(0, 16);
                         store(x + offs * n + m, cast(offs + s, f16));
                       });
}

std::string header(const ir::Function& fn) {
  std::string text = fn.str();
  return text.substr(0, text.find('\n'));
}

TEST(IrPrinter, SpecializationFactsOnParameters) {
  Kernel k = spec_kernel();
  std::vector<ir::ArgFacts> facts(4);
  facts[0].divisibility = 16;
  facts[1].divisibility = 16;
  facts[2].equals_one = true;
  auto fn = k.trace(k.constants(), facts);
  EXPECT_EQ(header(*fn),
            "kernel @spec(%x: ptr<f16> {aligned_16}, %n: i32 {divisible_by_16}, %m: i64 {equals_one}, %s: i32) "
            "num_warps(4) num_stages(1) constants {num_warps = 4, num_stages = 1} {");
  ASSERT_EQ(fn->params.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(fn->params[i].facts, facts[i]) << i;
  // The body still refers to the parameters by name.
  EXPECT_CONTAINS(fn->str(), "%n");
  EXPECT_CONTAINS(fn->str(), "%m");
  // The kernel itself is not changed by a specialized trace.
  for (auto& p : k.params()) EXPECT_EQ(p.facts, ir::ArgFacts{});
}

TEST(IrPrinter, FinerDivisibilityAndNone) {
  Kernel k = spec_kernel();
  std::vector<ir::ArgFacts> facts(4);
  facts[0].divisibility = 4;
  facts[3].divisibility = 8;
  auto fn = k.trace(k.constants(), facts);
  EXPECT_EQ(header(*fn),
            "kernel @spec(%x: ptr<f16> {aligned_4}, %n: i32, %m: i64, %s: i32 {divisible_by_8}) "
            "num_warps(4) num_stages(1) constants {num_warps = 4, num_stages = 1} {");

  // No facts (or all-false facts) print no braces, and give the same text.
  std::string plain = k.trace(k.constants())->str();
  EXPECT_EQ(plain, k.trace(k.constants(), std::vector<ir::ArgFacts>(4))->str());
  EXPECT_EQ(header(*k.trace(k.constants())),
            "kernel @spec(%x: ptr<f16>, %n: i32, %m: i64, %s: i32) num_warps(4) num_stages(1) "
            "constants {num_warps = 4, num_stages = 1} {");
  // Different specializations are told apart by their text, equal ones are not.
  EXPECT_NE(fn->str(), plain);
  EXPECT_EQ(fn->str(), k.trace(k.constants(), facts)->str());
}

// --- attributes and types ----------------------------------------------------------------------

TEST(IrPrinter, DivisibilityMustBeAPowerOfTwoUpToSixteen) {
  Kernel k = spec_kernel();
  for (int64_t bad : {0, 12, 32, -4}) {
    std::vector<ir::ArgFacts> facts(4);
    facts[1].divisibility = bad;
    EXPECT_EQ(error_of([&] { (void)k.trace(k.constants(), facts); }),
              fmt::format("kernel spec: parameter 'n': divisibility {} is not a power of two from 1 to 16", bad));
  }
}

TEST(IrPrinter, AttributeFormatting) {
  auto fn = trace("attrs", {}, [](const Constants&) {
    (void)full({4}, 0.1, f32);
    (void)full({4}, 1e-5, f32);
    (void)full({4}, 3.0, f32);
    (void)full({4}, 1.0 / 3.0, f32);
    (void)full({4}, 123456789.0, f32);
    (void)full({4}, std::numeric_limits<double>::infinity(), f32);
    (void)full({4}, -std::numeric_limits<double>::infinity(), f16);
    (void)full({4}, std::nan(""), f32);
    (void)full({4}, double(int64_t{1} << 40), i64);
    (void)cast(arange(0, 4), f8e5m2, true);
    (void)trans(reshape(arange(0, 8), {2, 2, 2}), {2, 1, 0});
  });
  std::string text = fn->str();
  EXPECT_CONTAINS(text, "= constant {value = 0.1} : tile<4xf32>\n");
  EXPECT_CONTAINS(text, "= constant {value = 1e-05} : tile<4xf32>\n");
  EXPECT_CONTAINS(text, "= constant {value = 3} : tile<4xf32>\n");
  EXPECT_CONTAINS(text, "= constant {value = 0.3333333333333333} : tile<4xf32>\n");
  EXPECT_CONTAINS(text, "= constant {value = 123456789} : tile<4xf32>\n");
  EXPECT_CONTAINS(text, "= constant {value = inf} : tile<4xf32>\n");
  EXPECT_CONTAINS(text, "= constant {value = -inf} : tile<4xf16>\n");
  EXPECT_CONTAINS(text, "= constant {value = nan} : tile<4xf32>\n");
  EXPECT_CONTAINS(text, "= constant {value = 1099511627776} : tile<4xi64>\n");
  EXPECT_CONTAINS(text, "{to = f8e5m2, saturate = 1} : tile<4xf8e5m2>\n");
  EXPECT_CONTAINS(text, "{shape = [2, 2, 2]} : tile<2x2x2xi32>\n");
  EXPECT_CONTAINS(text, "{perm = [2, 1, 0]} : tile<2x2x2xi32>\n");
}

// The text keys the kernel cache: a constant prints as the shortest text that reads back as
// the same double. The doubles either side of 1 + 2^-24 round to different f32 values (1 and
// 1 + 2^-23); nine significant digits printed both as 1.00000006.
TEST(IrPrinter, ConstantsReadBackExactly) {
  for (double v : {std::nextafter(1 + 0x1p-24, 0.0), std::nextafter(1 + 0x1p-24, 2.0), 0.1, 1.0 / 3.0}) {
    auto fn = trace("near", {}, [v](const Constants&) { (void)full({4}, v, f32); });
    std::string text = fn->str();
    size_t at = text.find("{value = ");
    ASSERT_NE(at, std::string::npos) << text;
    EXPECT_EQ(std::strtod(text.c_str() + at + 9, nullptr), v) << text;
  }
}

TEST(IrPrinter, TypeAndShapeStrings) {
  EXPECT_EQ(ir::Type::scalar(f32).str(), "f32");
  EXPECT_EQ(ir::Type::pointer_to(f16).str(), "ptr<f16>");
  EXPECT_EQ((ir::Type{f32, false, {64, 32}}).str(), "tile<64x32xf32>");
  EXPECT_EQ((ir::Type{f32, true, {64}}).str(), "tile<64xptr<f32>>");
  EXPECT_EQ((ir::Type{e8m0, false, {1, 2, 4}}).str(), "tile<1x2x4xe8m0>");
  EXPECT_EQ(ir::shape_str({64, 32}), "64x32");
  EXPECT_EQ(ir::shape_str({}), "");
  EXPECT_EQ((ir::Type{f32, false, {64, 32}}).numel(), 2048);
  EXPECT_EQ(ir::Type::scalar(i8).numel(), 1);
}

TEST(IrPrinter, DtypeNamesRoundTrip) {
  const char* names[] = {"i1", "i8", "i32", "i64", "f16", "bf16", "f32", "f8e4m3", "f8e5m2", "e8m0"};
  for (const char* name : names) {
    DType d = parse_dtype(name);
    EXPECT_EQ(dtype_name(d), name);
    EXPECT_EQ(ir::Type::scalar(d).str(), name);
  }
  std::string msg = error_of([] { (void)parse_dtype("f64"); });
  EXPECT_CONTAINS(msg, "unknown dtype 'f64'");
  EXPECT_EQ(dtype_bits(i1), 1);
  EXPECT_EQ(dtype_storage_bytes(i1), 1);
  EXPECT_EQ(dtype_storage_bytes(bf16), 2);
  EXPECT_EQ(dtype_storage_bytes(e8m0), 1);
  EXPECT_TRUE(is_float(f8e4m3));
  EXPECT_FALSE(is_arithmetic(f8e4m3));
  EXPECT_FALSE(is_arithmetic(e8m0));
  EXPECT_TRUE(is_arithmetic(bf16));
  EXPECT_TRUE(is_integer(i1));
}

}  // namespace
