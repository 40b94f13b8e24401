// Every DSL op builds, passes the verifier (Kernel::trace runs it) and prints as expected;
// result types and shapes are checked through the Tile handles while tracing.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "dsl_test_util.h"

namespace {

using namespace tjtest;
using ir::OpKind;

const DType kAllDTypes[] = {i1, i8, i32, i64, f16, bf16, f32, f8e4m3, f8e5m2, e8m0};

std::string name_of(DType d) { return std::string(dtype_name(d)); }
std::string tile_str(const Shape& shape, DType d) { return ir::Type{d, false, shape}.str(); }

// --- ids, constants, index tiles -------------------------------------------------------

TEST(DslOps, ProgramIdAndNumProgramsOnThreeAxes) {
  auto fn = trace("ids", {"out"}, [](const Constants&, Ptr<i32> out) {
    for (int axis = 0; axis < 3; ++axis) {
      Tile pid = program_id(axis);
      Tile np = num_programs(axis);
      EXPECT_EQ(pid.type(), ir::Type::scalar(i32));
      EXPECT_EQ(np.type(), ir::Type::scalar(i32));
      EXPECT_TRUE(pid.type().is_scalar());
      EXPECT_FALSE(pid.is_pointer());
      store(out + axis, pid * np);
    }
  });
  std::string ir = fn->str();
  for (int axis = 0; axis < 3; ++axis) {
    EXPECT_CONTAINS(ir, fmt::format("= program_id {{axis = {}}} : i32\n", axis));
    EXPECT_CONTAINS(ir, fmt::format("= num_programs {{axis = {}}} : i32\n", axis));
  }
  EXPECT_EQ(ops_of(*fn, OpKind::program_id).size(), 3u);
  EXPECT_EQ(ops_of(*fn, OpKind::num_programs).size(), 3u);
  EXPECT_EQ(ops_of(*fn, OpKind::store).size(), 3u);
}

TEST(DslOps, Arange) {
  auto fn = trace("arange", {"out"}, [](const Constants&, Ptr<i32> out) {
    Tile a = arange(0, 64);
    EXPECT_EQ(a.type(), (ir::Type{i32, false, {64}}));
    Tile b = arange(16, 48);
    EXPECT_EQ(b.shape(), (Shape{32}));
    Tile c = arange(-4, -3);
    EXPECT_EQ(c.shape(), (Shape{1}));
    EXPECT_EQ(c.rank(), 1);
    store(out + a, a);
    store(out + b, b);
    store(out + c, c);
  });
  std::string ir = fn->str();
  EXPECT_CONTAINS(ir, "= arange {start = 0, end = 64} : tile<64xi32>\n");
  EXPECT_CONTAINS(ir, "= arange {start = 16, end = 48} : tile<32xi32>\n");
  EXPECT_CONTAINS(ir, "= arange {start = -4, end = -3} : tile<1xi32>\n");
}

TEST(DslOps, FullZerosScalar) {
  auto fn = trace("consts", {}, [](const Constants&) {
    Tile a = full({64, 32}, 1.5, f32);
    EXPECT_EQ(a.type(), (ir::Type{f32, false, {64, 32}}));
    Tile z = zeros({16}, i32);
    EXPECT_EQ(z.type(), (ir::Type{i32, false, {16}}));
    Tile s = scalar(2.0, f16);
    EXPECT_EQ(s.type(), ir::Type::scalar(f16));
    Tile t = full({8}, 1, i1);
    EXPECT_EQ(t.dtype(), i1);
    Tile n = full({4}, -3, i64);
    EXPECT_EQ(n.dtype(), i64);
    Tile h = zeros({2, 2}, bf16);
    EXPECT_EQ(h.shape(), (Shape{2, 2}));
    Tile q = scalar(-7, i8);
    EXPECT_TRUE(q.type().is_scalar());
  });
  std::string ir = fn->str();
  EXPECT_CONTAINS(ir, "= constant {value = 1.5} : tile<64x32xf32>\n");
  EXPECT_CONTAINS(ir, "= constant {value = 0} : tile<16xi32>\n");
  EXPECT_CONTAINS(ir, "= constant {value = 2} : f16\n");
  EXPECT_CONTAINS(ir, "= constant {value = 1} : tile<8xi1>\n");
  EXPECT_CONTAINS(ir, "= constant {value = -3} : tile<4xi64>\n");
  EXPECT_CONTAINS(ir, "= constant {value = 0} : tile<2x2xbf16>\n");
  EXPECT_CONTAINS(ir, "= constant {value = -7} : i8\n");
  // Integer constants keep an integer attribute, float constants a double one.
  auto consts = ops_of(*fn, OpKind::constant);
  ASSERT_EQ(consts.size(), 7u);
  EXPECT_TRUE(std::holds_alternative<double>(consts[0]->attr("value")));
  EXPECT_TRUE(std::holds_alternative<int64_t>(consts[1]->attr("value")));
  EXPECT_EQ(consts[1]->attr_int("value"), 0);
  EXPECT_EQ(consts[4]->attr_int("value"), -3);
}

// --- broadcasting and shapes -----------------------------------------------------------

TEST(DslOps, NumpyBroadcastingBetweenTiles) {
  auto fn = trace("bcast", {"x", "s"}, [](const Constants&, Ptr<f32> x, Scalar<f32> s) {
    Tile col = expand_dims(load(x + arange(0, 64)), 1);  // 64x1
    Tile row = load(x + arange(0, 32));                  // 32
    Tile m = col + row;
    EXPECT_EQ(m.type(), (ir::Type{f32, false, {64, 32}}));
    Tile r = row - col;  // symmetric
    EXPECT_EQ(r.shape(), (Shape{64, 32}));
    Tile a3 = reshape(load(x + arange(0, 32)), {4, 1, 8});
    Tile b2 = reshape(load(x + arange(0, 16)), {16, 1});
    Tile m3 = a3 * b2;
    EXPECT_EQ(m3.shape(), (Shape{4, 16, 8}));
    Tile ms = m - s;  // a scalar operand splats
    EXPECT_EQ(ms.shape(), (Shape{64, 32}));
    Tile ss = s * s;
    EXPECT_EQ(ss.type(), ir::Type::scalar(f32));
    Tile same = m / m;  // equal shapes: no broadcast
    EXPECT_EQ(same.shape(), (Shape{64, 32}));
  });
  std::string ir = fn->str();
  EXPECT_CONTAINS(ir, "= expand_dims %3 {axis = 1} : tile<64x1xf32>\n");
  EXPECT_CONTAINS(ir, "= expand_dims %8 {axis = 0} : tile<1x32xf32>\n");  // the missing leading dim
  EXPECT_OP(ir, "broadcast", "tile<64x32xf32>");
  EXPECT_OP(ir, "add", "tile<64x32xf32>");
  EXPECT_OP(ir, "sub", "tile<64x32xf32>");
  EXPECT_CONTAINS(ir, "{axis = 0} : tile<1x16x1xf32>\n");
  EXPECT_OP(ir, "broadcast", "tile<4x16x8xf32>");
  EXPECT_OP(ir, "mul", "tile<4x16x8xf32>");
  EXPECT_CONTAINS(ir, "= splat %s : tile<64x32xf32>\n");
  EXPECT_CONTAINS(ir, "= mul %s, %s : f32\n");
  EXPECT_OP(ir, "div", "tile<64x32xf32>");
}

TEST(DslOps, NumbersTakeTheDtypeOfTheTileTheyMeet) {
  auto fn = trace("literals", {"x"}, [](const Constants&, Ptr<f32> x) {
    Tile offs = arange(0, 64);
    Tile a = offs * 3;
    EXPECT_EQ(a.type(), offs.type());
    Tile b = 2 * load(x + offs);  // literal on the left
    EXPECT_EQ(b.type(), (ir::Type{f32, false, {64}}));
    Tile c = cast(load(x + offs), f16) * 0.25;
    EXPECT_EQ(c.dtype(), f16);
    Tile d = cast(offs, i64) + 1;
    EXPECT_EQ(d.dtype(), i64);
    Tile e = cast(offs, i8) - int8_t{1};
    EXPECT_EQ(e.dtype(), i8);
    Tile f = cast(offs, bf16) / 4.0f;
    EXPECT_EQ(f.dtype(), bf16);
    Tile g = (offs < 8) == true;
    EXPECT_EQ(g.dtype(), i1);
  });
  std::string ir = fn->str();
  EXPECT_CONTAINS(ir, "= constant {value = 3} : i32\n");
  EXPECT_CONTAINS(ir, "= constant {value = 2} : f32\n");
  EXPECT_CONTAINS(ir, "= constant {value = 0.25} : f16\n");
  EXPECT_CONTAINS(ir, "= constant {value = 1} : i64\n");
  EXPECT_CONTAINS(ir, "= constant {value = 1} : i8\n");
  EXPECT_CONTAINS(ir, "= constant {value = 4} : bf16\n");
  EXPECT_CONTAINS(ir, "= constant {value = 1} : i1\n");
  EXPECT_OP(ir, "splat", "tile<64xf16>");
  EXPECT_OP(ir, "mul", "tile<64xf16>");
  EXPECT_OP(ir, "add", "tile<64xi64>");
  EXPECT_OP(ir, "sub", "tile<64xi8>");
  EXPECT_OP(ir, "div", "tile<64xbf16>");
}

TEST(DslOps, ExpandDims) {
  auto fn = trace("expand", {}, [](const Constants&) {
    Tile a = arange(0, 64);
    EXPECT_EQ(expand_dims(a, 0).shape(), (Shape{1, 64}));
    Tile e1 = expand_dims(a, 1);
    EXPECT_EQ(e1.shape(), (Shape{64, 1}));
    EXPECT_EQ(expand_dims(a, -1).shape(), (Shape{64, 1}));
    EXPECT_EQ(expand_dims(a, -2).shape(), (Shape{1, 64}));
    EXPECT_EQ(expand_dims(e1, -3).shape(), (Shape{1, 64, 1}));
    EXPECT_EQ(expand_dims(e1, 2).shape(), (Shape{64, 1, 1}));
    Tile s = expand_dims(program_id(0), 0);
    EXPECT_EQ(s.type(), (ir::Type{i32, false, {1}}));
    Tile p = expand_dims(scalar(1.0, f32), -1);
    EXPECT_EQ(p.shape(), (Shape{1}));
  });
  std::string ir = fn->str();
  EXPECT_CONTAINS(ir, "= expand_dims %0 {axis = 0} : tile<1x64xi32>\n");
  EXPECT_EQ(count_of(ir, "= expand_dims %0 {axis = 1} : tile<64x1xi32>\n"), 2);  // axis 1 and -1
  EXPECT_EQ(count_of(ir, "= expand_dims %0 {axis = 0} : tile<1x64xi32>\n"), 2);  // axis 0 and -2
  EXPECT_CONTAINS(ir, "{axis = 0} : tile<1x64x1xi32>\n");
  EXPECT_CONTAINS(ir, "{axis = 2} : tile<64x1x1xi32>\n");
  EXPECT_OP(ir, "splat", "tile<1xi32>");
  EXPECT_OP(ir, "splat", "tile<1xf32>");
}

TEST(DslOps, Reshape) {
  auto fn = trace("reshape", {}, [](const Constants&) {
    Tile a = arange(0, 64);
    Tile r = reshape(a, {8, 8});
    EXPECT_EQ(r.type(), (ir::Type{i32, false, {8, 8}}));
    Tile r3 = reshape(r, {2, 4, 8});
    EXPECT_EQ(r3.shape(), (Shape{2, 4, 8}));
    Tile same = reshape(r, {8, 8});
    EXPECT_EQ(same.value(), r.value());  // no op for the same shape
    Tile flat = reshape(r3, {64});
    EXPECT_EQ(flat.shape(), (Shape{64}));
  });
  std::string ir = fn->str();
  EXPECT_CONTAINS(ir, "= reshape %0 {shape = [8, 8]} : tile<8x8xi32>\n");
  EXPECT_CONTAINS(ir, "= reshape %1 {shape = [2, 4, 8]} : tile<2x4x8xi32>\n");
  EXPECT_CONTAINS(ir, "= reshape %2 {shape = [64]} : tile<64xi32>\n");
  EXPECT_EQ(ops_of(*fn, OpKind::reshape).size(), 3u);
}

TEST(DslOps, Trans) {
  auto fn = trace("trans", {"x"}, [](const Constants&, Ptr<f32> x) {
    Tile m = load(x + reshape(arange(0, 2048), {64, 32}));
    Tile t = trans(m);
    EXPECT_EQ(t.type(), (ir::Type{f32, false, {32, 64}}));
    Tile y = reshape(arange(0, 64), {2, 4, 8});
    EXPECT_EQ(trans(y, {2, 0, 1}).shape(), (Shape{8, 2, 4}));
    EXPECT_EQ(trans(y, {1, 2, 0}).shape(), (Shape{4, 8, 2}));
    EXPECT_EQ(trans(y, {0, 1, 2}).shape(), (Shape{2, 4, 8}));
  });
  std::string ir = fn->str();
  EXPECT_CONTAINS(ir, "{perm = [1, 0]} : tile<32x64xf32>\n");
  EXPECT_CONTAINS(ir, "{perm = [2, 0, 1]} : tile<8x2x4xi32>\n");
  EXPECT_CONTAINS(ir, "{perm = [1, 2, 0]} : tile<4x8x2xi32>\n");
  EXPECT_CONTAINS(ir, "{perm = [0, 1, 2]} : tile<2x4x8xi32>\n");
}

TEST(DslOps, BroadcastTo) {
  auto fn = trace("broadcast_to", {"p"}, [](const Constants&, Ptr<f16> p) {
    Tile row = reshape(arange(0, 32), {1, 32});
    Tile b = broadcast_to(row, {64, 32});
    EXPECT_EQ(b.type(), (ir::Type{i32, false, {64, 32}}));
    Tile s = broadcast_to(program_id(0), {16, 16});
    EXPECT_EQ(s.shape(), (Shape{16, 16}));
    Tile v = broadcast_to(arange(0, 32), {16, 32});
    EXPECT_EQ(v.shape(), (Shape{16, 32}));
    EXPECT_EQ(broadcast_to(row, {1, 32}).value(), row.value());
    Tile ptrs = broadcast_to(p, {8, 4});
    EXPECT_EQ(ptrs.type(), (ir::Type{f16, true, {8, 4}}));
  });
  std::string ir = fn->str();
  EXPECT_OP(ir, "broadcast", "tile<64x32xi32>");
  EXPECT_OP(ir, "splat", "tile<16x16xi32>");
  EXPECT_CONTAINS(ir, "{shape = [1, 32]} : tile<1x32xi32>\n");
  EXPECT_OP(ir, "broadcast", "tile<16x32xi32>");
  EXPECT_CONTAINS(ir, "= splat %p : tile<8x4xptr<f16>>\n");
}

// --- pointers and memory ----------------------------------------------------------------

TEST(DslOps, PointerPlusOffset) {
  auto fn = trace("ptrs", {"x", "n"}, [](const Constants&, Ptr<f16> x, Scalar<i64> n) {
    Tile offs = arange(0, 64);
    Tile p = x + offs;
    EXPECT_EQ(p.type(), (ir::Type{f16, true, {64}}));
    EXPECT_TRUE(p.is_pointer());
    Tile q = offs + x;  // either order
    EXPECT_EQ(q.type(), p.type());
    Tile s = x + 5;
    EXPECT_EQ(s.type(), ir::Type::pointer_to(f16));
    Tile t = x + n;  // i64 offsets
    EXPECT_EQ(t.type(), ir::Type::pointer_to(f16));
    Tile p2 = x + expand_dims(offs, 1) * 64 + expand_dims(offs, 0);
    EXPECT_EQ(p2.type(), (ir::Type{f16, true, {64, 64}}));
    Tile p3 = p + 1;
    EXPECT_EQ(p3.type(), p.type());
    Tile p4 = p + cast(offs, i64);
    EXPECT_EQ(p4.type(), p.type());
    Tile far = x + 3'000'000'000;  // past i32: an i64 offset
    EXPECT_EQ(far.type(), ir::Type::pointer_to(f16));
    Tile e = load(p2);
    EXPECT_EQ(e.type(), (ir::Type{f16, false, {64, 64}}));
  });
  std::string ir = fn->str();
  EXPECT_CONTAINS(ir, "= splat %x : tile<64xptr<f16>>\n");
  EXPECT_CONTAINS(ir, "= addptr %1, %0 : tile<64xptr<f16>>\n");
  EXPECT_CONTAINS(ir, "= constant {value = 5} : i32\n");
  EXPECT_CONTAINS(ir, "= constant {value = 3000000000} : i64\n");
  EXPECT_CONTAINS(ir, "= addptr %x, %n : ptr<f16>\n");
  EXPECT_OP(ir, "addptr", "tile<64x64xptr<f16>>");
  EXPECT_OP(ir, "addptr", "ptr<f16>");
  EXPECT_OP(ir, "load", "tile<64x64xf16>");
  EXPECT_EQ(ops_of(*fn, OpKind::addptr).size(), 9u);
}

TEST(DslOps, LoadAndStoreWithAndWithoutMaskAndOther) {
  auto fn = trace("mem", {"x", "y", "n"}, [](const Constants&, Ptr<f32> x, Ptr<f32> y, Scalar<i32> n) {
    Tile offs = arange(0, 128);
    Tile mask = offs < n;
    EXPECT_EQ(mask.type(), (ir::Type{i1, false, {128}}));
    Tile a = load(x + offs);
    EXPECT_EQ(a.type(), (ir::Type{f32, false, {128}}));
    Tile b = load(x + offs, mask);
    EXPECT_EQ(b.type(), a.type());
    Tile c = load(x + offs, mask, -std::numeric_limits<double>::infinity());
    EXPECT_EQ(c.type(), a.type());
    Tile d = load(x + offs, mask, a);  // `other` as a tile
    EXPECT_EQ(d.type(), a.type());
    Tile s = load(x);
    EXPECT_EQ(s.type(), ir::Type::scalar(f32));
    Tile s2 = load(x + 3, n > 0);  // scalar pointer, scalar mask
    EXPECT_EQ(s2.type(), ir::Type::scalar(f32));
    Tile w = load(x, mask);  // a scalar pointer broadcast by the mask
    EXPECT_EQ(w.type(), a.type());
    Tile m2 = load(x + expand_dims(offs, 1) + expand_dims(arange(0, 4), 0), expand_dims(mask, 1), 1.0);
    EXPECT_EQ(m2.shape(), (Shape{128, 4}));
    store(y + offs, a + b + c + d + w);
    store(y + offs, s, mask);  // a scalar value broadcast to the pointers
    store(y, 1.5);
    store(y + offs, 0, mask);
    store(y + offs, s2);
  });
  std::string ir = fn->str();
  EXPECT_CONTAINS(ir, "= constant {value = -inf} : f32\n");
  EXPECT_CONTAINS(ir, "= load %x : f32\n");
  EXPECT_CONTAINS(ir, "= constant {value = 1.5} : f32\n");
  EXPECT_OP(ir, "load", "tile<128x4xf32>");
  std::vector<size_t> load_operands, store_operands;
  for (auto* op : ops_of(*fn, OpKind::load)) load_operands.push_back(op->operands.size());
  for (auto* op : ops_of(*fn, OpKind::store)) store_operands.push_back(op->operands.size());
  EXPECT_EQ(load_operands, (std::vector<size_t>{1, 3, 3, 3, 1, 3, 3, 3}));
  EXPECT_EQ(store_operands, (std::vector<size_t>{2, 3, 2, 3, 2}));
  // Masked loads: (ptr, mask, other) with the mask i1 and other of the result type.
  for (auto* op : ops_of(*fn, OpKind::load)) {
    if (op->operands.size() < 3) continue;
    EXPECT_EQ(op->operands[1]->type.dtype, i1);
    EXPECT_EQ(op->operands[2]->type, op->result()->type);
  }
  EXPECT_EQ(ops_of(*fn, OpKind::store)[2]->operands[0]->type, ir::Type::pointer_to(f32));
}

TEST(DslOps, LoadAndStoreEveryDtype) {
  for (DType d : kAllDTypes) {
    SCOPED_TRACE(name_of(d));
    auto fn = trace("mem_dtype", {"p", "q"}, [d](const Constants&, Ptr<f32> p, Ptr<f32> q) {
      Tile offs = arange(0, 32);
      Tile v = cast(load(p + offs), d);
      EXPECT_EQ(v.dtype(), d);
      store(q + offs, cast(v, f32));
    });
    EXPECT_OP(fn->str(), "load", "tile<32xf32>");
  }
  auto fn = trace("typed", {"a", "b", "c", "d"}, [](const Constants&, Ptr<f8e4m3> a, Ptr<e8m0> b, Ptr<i1> c, Ptr<i64> d) {
    Tile offs = arange(0, 16);
    Tile va = load(a + offs);
    EXPECT_EQ(va.type(), (ir::Type{f8e4m3, false, {16}}));
    Tile vb = load(b + offs);
    EXPECT_EQ(vb.dtype(), e8m0);
    Tile vc = load(c + offs, offs < 8);
    EXPECT_EQ(vc.dtype(), i1);
    Tile vd = load(d + offs, vc, int64_t{-1});
    EXPECT_EQ(vd.dtype(), i64);
    store(a + offs, va);
    store(b + offs, vb);
    store(c + offs, vc);
    store(d + offs, vd, vc);
  });
  std::string ir = fn->str();
  EXPECT_OP(ir, "load", "tile<16xf8e4m3>");
  EXPECT_OP(ir, "load", "tile<16xe8m0>");
  EXPECT_OP(ir, "load", "tile<16xi1>");
  EXPECT_CONTAINS(ir, "= constant {value = -1} : i64\n");
}

TEST(DslOps, MaskedLoadsOfFp8AndE8m0ReadZeroBitsWithoutAConstant) {
  auto fn = trace("fp8_masked", {"a", "b", "c", "n"},
                  [](const Constants&, Ptr<f8e4m3> a, Ptr<f8e5m2> b, Ptr<e8m0> c, Scalar<i32> n) {
    Tile offs = arange(0, 64);
    Tile mask = offs < n;
    Tile va = load(a + offs, mask);
    EXPECT_EQ(va.type(), (ir::Type{f8e4m3, false, {64}}));
    Tile vb = load(b + offs, mask);
    EXPECT_EQ(vb.dtype(), f8e5m2);
    Tile vc = load(c + expand_dims(offs, 1), expand_dims(mask, 0));  // mask broadcast with the pointers
    EXPECT_EQ(vc.type(), (ir::Type{e8m0, false, {64, 64}}));
    Tile vs = load(a, n > 0);
    EXPECT_EQ(vs.type(), ir::Type::scalar(f8e4m3));
    // An explicit `other` of the pointee type (made by a cast) is fine.
    Tile vo = load(a + offs, mask, cast(scalar(1.0, f32), f8e4m3));
    EXPECT_EQ(vo.type(), va.type());
    store(a + offs, va, mask);
  });
  std::string ir = fn->str();
  EXPECT_OP(ir, "load", "tile<64xf8e4m3>");
  EXPECT_OP(ir, "load", "tile<64x64xe8m0>");
  std::vector<size_t> operands;
  for (auto* op : ops_of(*fn, OpKind::load)) operands.push_back(op->operands.size());
  EXPECT_EQ(operands, (std::vector<size_t>{2, 2, 2, 2, 3}));
  // No constant of a dtype without constants (the lowering cannot build one).
  for (auto* op : ops_of(*fn, OpKind::constant)) EXPECT_TRUE(is_arithmetic(op->result()->type.dtype)) << ir;
  // Masked loads of other dtypes keep their zero `other`.
  auto f32fn = trace("f32_masked", {"x", "n"}, [](const Constants&, Ptr<f32> x, Scalar<i32> n) {
    Tile offs = arange(0, 64);
    (void)load(x + offs, offs < n);
  });
  EXPECT_CONTAINS(f32fn->str(), "= constant {value = 0} : f32\n");
  EXPECT_EQ(ops_of(*f32fn, OpKind::load)[0]->operands.size(), 3u);
}

// --- arithmetic, comparisons, logic -----------------------------------------------------

TEST(DslOps, FloatArithmeticOperators) {
  for (DType d : {f32, f16, bf16}) {
    SCOPED_TRACE(name_of(d));
    auto fn = trace("float_ops", {"x", "y"}, [d](const Constants&, Ptr<f32> x, Ptr<f32> y) {
      Tile offs = arange(0, 64);
      Tile a = cast(load(x + offs), d);
      Tile b = cast(load(y + offs), d);
      std::vector<Tile> results = {a + b, a - b, a * b, a / b, a % b, minimum(a, b), maximum(a, b), -a, abs(a)};
      for (auto& r : results) EXPECT_EQ(r.type(), a.type());
      Tile sum = results[0];
      for (size_t i = 1; i < results.size(); ++i) sum = sum + results[i];
      store(x + offs, cast(sum, f32));
    });
    std::string ir = fn->str();
    std::string type = tile_str({64}, d);
    for (const char* op : {"add", "sub", "mul", "div", "rem", "minimum", "maximum", "neg", "abs"}) {
      SCOPED_TRACE(op);
      EXPECT_OP(ir, op, type);
    }
  }
}

TEST(DslOps, IntegerArithmeticAndBitOperators) {
  for (DType d : {i8, i32, i64}) {
    SCOPED_TRACE(name_of(d));
    auto fn = trace("int_ops", {"out"}, [d](const Constants&, Ptr<i64> out) {
      Tile a = cast(arange(0, 64), d);
      Tile b = cast(arange(64, 128), d);
      std::vector<Tile> results = {a + b, a - b, a * b, a / b, a % b, a & b, a | b, a ^ b,
                                   a << b, a >> b, ~a, -a, abs(a), minimum(a, b), maximum(a, b),
                                   a / 3, a % 4, a << 1, a >> 2, a & 0xff};
      for (auto& r : results) EXPECT_EQ(r.type(), a.type());
      Tile sum = results[0];
      for (size_t i = 1; i < results.size(); ++i) sum = sum + results[i];
      store(out + arange(0, 64), cast(sum, i64));
    });
    std::string ir = fn->str();
    std::string type = tile_str({64}, d);
    for (const char* op : {"add", "sub", "mul", "div", "rem", "and", "or", "xor", "shl", "shr", "not", "neg", "abs",
                           "minimum", "maximum"}) {
      SCOPED_TRACE(op);
      EXPECT_OP(ir, op, type);
    }
    EXPECT_CONTAINS(ir, fmt::format("= constant {{value = 255}} : {}\n", name_of(d)));
  }
}

TEST(DslOps, IntegerDivAndModAreElementwiseIntegerOps) {
  auto fn = trace("divmod", {"n", "m"}, [](const Constants&, Scalar<i32> n, Scalar<i32> m) {
    Tile q = n / m;
    Tile r = n % m;
    EXPECT_EQ(q.type(), ir::Type::scalar(i32));
    EXPECT_EQ(r.type(), ir::Type::scalar(i32));
    Tile t = arange(0, 32) / 8;
    EXPECT_EQ(t.type(), (ir::Type{i32, false, {32}}));
    Tile u = -7 % n;
    EXPECT_EQ(u.dtype(), i32);
  });
  std::string ir = fn->str();
  EXPECT_CONTAINS(ir, "= div %n, %m : i32\n");
  EXPECT_CONTAINS(ir, "= rem %n, %m : i32\n");
  EXPECT_OP(ir, "div", "tile<32xi32>");
  EXPECT_CONTAINS(ir, "= constant {value = -7} : i32\n");
}

TEST(DslOps, LogicOperatorsOnI1) {
  auto fn = trace("logic", {"n"}, [](const Constants&, Scalar<i32> n) {
    Tile offs = arange(0, 64);
    Tile p = offs < n;
    Tile q = offs > 3;
    std::vector<Tile> results = {p && q, p || q, !p, p & q, p | q, p ^ q, ~p, p == q, p != q, p && true};
    for (auto& r : results) EXPECT_EQ(r.type(), (ir::Type{i1, false, {64}}));
    Tile s = (n > 0) && (n < 100);
    EXPECT_EQ(s.type(), ir::Type::scalar(i1));
  });
  std::string ir = fn->str();
  for (const char* op : {"and", "or", "not", "xor"}) {
    SCOPED_TRACE(op);
    EXPECT_OP(ir, op, "tile<64xi1>");
  }
  EXPECT_OP(ir, "and", "i1");
  EXPECT_CONTAINS(ir, "{predicate = \"eq\"} : tile<64xi1>\n");
  EXPECT_CONTAINS(ir, "{predicate = \"ne\"} : tile<64xi1>\n");
}

TEST(DslOps, Comparisons) {
  for (DType d : {i8, i32, i64, f16, bf16, f32}) {
    SCOPED_TRACE(name_of(d));
    auto fn = trace("cmp", {"x"}, [d](const Constants&, Ptr<f32> x) {
      Tile offs = arange(0, 64);
      Tile a = cast(load(x + offs), d);
      Tile b = cast(load(x + offs + 64), d);
      std::vector<Tile> results = {a == b, a != b, a < b, a <= b, a > b, a >= b, a < 3, 0 <= a};
      for (auto& r : results) EXPECT_EQ(r.type(), (ir::Type{i1, false, {64}}));
    });
    std::string ir = fn->str();
    for (const char* pred : {"eq", "ne", "lt", "le", "gt", "ge"})
      EXPECT_CONTAINS(ir, fmt::format("{{predicate = \"{}\"}} : tile<64xi1>\n", pred));
    EXPECT_EQ(ops_of(*fn, OpKind::cmp).size(), 8u);
    for (auto* op : ops_of(*fn, OpKind::cmp)) EXPECT_EQ(op->operands[0]->type.dtype, d);
  }
}

TEST(DslOps, Where) {
  auto fn = trace("where", {"x", "y", "n"}, [](const Constants&, Ptr<f32> x, Ptr<f32> y, Scalar<i32> n) {
    Tile offs = arange(0, 64);
    Tile m = offs < n;
    Tile a = load(x + offs), b = load(y + offs);
    Tile w = where(m, a, b);
    EXPECT_EQ(w.type(), a.type());
    Tile w0 = where(m, a, 0.0);
    EXPECT_EQ(w0.type(), a.type());
    Tile w1 = where(m, 1, a);
    EXPECT_EQ(w1.type(), a.type());
    Tile ws = where(n > 0, a, b);  // scalar condition
    EXPECT_EQ(ws.type(), a.type());
    Tile a2 = load(x + expand_dims(offs, 1) * 32 + expand_dims(arange(0, 32), 0));
    Tile w2 = where(expand_dims(m, 1), a2, 1.0);  // condition broadcast to the values
    EXPECT_EQ(w2.shape(), (Shape{64, 32}));
    Tile w3 = where(m, n, 0);  // values broadcast to the condition
    EXPECT_EQ(w3.type(), (ir::Type{i32, false, {64}}));
    Tile sc = where(n > 0, n, -n);
    EXPECT_EQ(sc.type(), ir::Type::scalar(i32));
    Tile wp = where(m, x + offs, y + offs);  // tiles of pointers
    EXPECT_EQ(wp.type(), (ir::Type{f32, true, {64}}));
    store(wp, w + w0 + w1 + ws);
  });
  std::string ir = fn->str();
  EXPECT_OP(ir, "select", "tile<64xf32>");
  EXPECT_OP(ir, "select", "tile<64x32xf32>");
  EXPECT_OP(ir, "select", "tile<64xi32>");
  EXPECT_OP(ir, "select", "i32");
  EXPECT_OP(ir, "select", "tile<64xptr<f32>>");
  EXPECT_OP(ir, "splat", "tile<64xi1>");
  EXPECT_OP(ir, "broadcast", "tile<64x32xi1>");
  EXPECT_EQ(ops_of(*fn, OpKind::select).size(), 8u);
}

TEST(DslOps, MinimumMaximumWithLiteralsAndBroadcasting) {
  auto fn = trace("minmax", {"x"}, [](const Constants&, Ptr<f32> x) {
    Tile offs = arange(0, 64);
    Tile a = load(x + offs);
    EXPECT_EQ(minimum(a, 0.0).type(), a.type());
    EXPECT_EQ(maximum(1, a).type(), a.type());
    Tile col = expand_dims(a, 1);
    EXPECT_EQ(maximum(col, a).shape(), (Shape{64, 64}));
    EXPECT_EQ(minimum(offs, 7).dtype(), i32);
  });
  std::string ir = fn->str();
  EXPECT_OP(ir, "minimum", "tile<64xf32>");
  EXPECT_OP(ir, "maximum", "tile<64xf32>");
  EXPECT_OP(ir, "maximum", "tile<64x64xf32>");
  EXPECT_OP(ir, "minimum", "tile<64xi32>");
}

TEST(DslOps, Cdiv) {
  auto fn = trace("cdiv", {"n"}, [](const Constants&, Scalar<i32> n) {
    Tile c = cdiv(n, 64);
    EXPECT_EQ(c.type(), ir::Type::scalar(i32));
    Tile t = cdiv(arange(0, 32), 16);
    EXPECT_EQ(t.type(), (ir::Type{i32, false, {32}}));
    Tile l = cdiv(1000, n);
    EXPECT_EQ(l.type(), ir::Type::scalar(i32));
  });
  std::string ir = fn->str();
  EXPECT_OP(ir, "add", "i32");
  EXPECT_OP(ir, "sub", "i32");
  EXPECT_OP(ir, "div", "i32");
  EXPECT_OP(ir, "div", "tile<32xi32>");
  EXPECT_EQ(ops_of(*fn, OpKind::div).size(), 3u);
  // Every op cdiv emits carries the caller's line, not one inside the DSL.
  ir::walk(fn->body, [](ir::Op& op) { EXPECT_EQ(op.loc.file, "builder_test.cpp") << ir::op_name(op.kind); });
}

TEST(DslOps, Fma) {
  auto fn = trace("fma", {"x", "s"}, [](const Constants&, Ptr<f32> x, Scalar<f32> s) {
    Tile offs = arange(0, 64);
    Tile a = load(x + offs), b = load(x + offs + 64), c = load(x + offs + 128);
    Tile r = fma(a, b, c);
    EXPECT_EQ(r.type(), a.type());
    Tile l = fma(a, 2.0, 1);
    EXPECT_EQ(l.type(), a.type());
    Tile m = fma(expand_dims(a, 1), b, s);
    EXPECT_EQ(m.shape(), (Shape{64, 64}));
    Tile h = fma(cast(a, f16), cast(b, f16), 0.5);
    EXPECT_EQ(h.dtype(), f16);
    Tile sc = fma(s, s, s);
    EXPECT_EQ(sc.type(), ir::Type::scalar(f32));
  });
  std::string ir = fn->str();
  EXPECT_OP(ir, "fma", "tile<64xf32>");
  EXPECT_OP(ir, "fma", "tile<64x64xf32>");
  EXPECT_OP(ir, "fma", "tile<64xf16>");
  EXPECT_CONTAINS(ir, "= fma %s, %s, %s : f32\n");
}

// --- math --------------------------------------------------------------------------------

TEST(DslOps, MathFunctions) {
  using MathFn = Tile (*)(const Tile&, Loc);
  const std::pair<const char*, MathFn> fns[] = {
      {"exp", exp},   {"exp2", exp2}, {"log", log}, {"log2", log2}, {"sqrt", sqrt},       {"rsqrt", rsqrt},
      {"sin", sin},   {"cos", cos},   {"tanh", tanh}, {"erf", erf}, {"sigmoid", sigmoid}, {"abs", abs},
      {"rint", rint},
  };
  for (DType d : {f32, f16, bf16}) {
    SCOPED_TRACE(name_of(d));
    auto fn = trace("math", {"x", "s"}, [&](const Constants&, Ptr<f32> x, Scalar<f32> s) {
      Tile a = cast(load(x + arange(0, 64)), d);
      Tile sc = cast(s, d);
      for (auto& [name, f] : fns) {
        Tile r = f(a, Loc::current());
        EXPECT_EQ(r.type(), a.type()) << name;
        EXPECT_EQ(f(sc, Loc::current()).type(), ir::Type::scalar(d)) << name;
      }
    });
    std::string ir = fn->str();
    for (auto& [name, f] : fns) {
      SCOPED_TRACE(name);
      EXPECT_OP(ir, name, tile_str({64}, d));
      EXPECT_OP(ir, name, name_of(d));
    }
  }
  // The named functions (not only the table) resolve to the DSL's overloads.
  auto fn = trace("math_direct", {"x"}, [](const Constants&, Ptr<f32> x) {
    Tile a = load(x + arange(0, 16));
    Tile r = exp(a) + exp2(a) + log(a) + log2(a) + sqrt(a) + rsqrt(a) + sin(a) + cos(a) + tanh(a) + erf(a) +
             sigmoid(a) + abs(a) + rint(a);
    EXPECT_EQ(r.type(), a.type());
  });
  EXPECT_EQ(ops_of(*fn, OpKind::add).size(), 12u);
}

// --- conversions -------------------------------------------------------------------------

TEST(DslOps, CastBetweenEveryPairOfDtypes) {
  for (DType from : kAllDTypes) {
    for (DType to : kAllDTypes) {
      for (bool saturate : {false, true}) {
        SCOPED_TRACE(fmt::format("{} -> {} saturate={}", name_of(from), name_of(to), saturate));
        auto fn = trace("cast", {"x"}, [&](const Constants&, Ptr<f32> x) {
          Tile v = cast(load(x + arange(0, 16)), from);
          Tile r = cast(v, to, saturate);
          EXPECT_EQ(r.type(), (ir::Type{to, false, {16}}));
          if (from == to) {
            EXPECT_EQ(r.value(), v.value());  // no op
          }
        });
        std::string ir = fn->str();
        std::string line = fmt::format("{{to = {}, saturate = {}}} : tile<16x{}>\n", name_of(to), saturate ? 1 : 0,
                                       name_of(to));
        if (from != to) {
          EXPECT_CONTAINS(ir, line);
          auto casts = ops_of(*fn, OpKind::cast);
          ASSERT_FALSE(casts.empty());
          EXPECT_EQ(casts.back()->attr_dtype("to"), to);
          EXPECT_EQ(casts.back()->attr_int("saturate"), saturate ? 1 : 0);
          EXPECT_EQ(casts.back()->operands[0]->type.dtype, from);
        }
        EXPECT_EQ(ops_of(*fn, OpKind::cast).size(), size_t{from != f32} + size_t{from != to});
      }
    }
  }
}

TEST(DslOps, CastScalarsAndTheSaturateFlag) {
  auto fn = trace("cast_sat", {"n", "s"}, [](const Constants&, Scalar<i32> n, Scalar<f32> s) {
    Tile f = cast(n, f32);
    EXPECT_EQ(f.type(), ir::Type::scalar(f32));
    Tile e4 = cast(s, f8e4m3, true);
    Tile e5 = cast(s, f8e5m2, false);
    Tile e8 = cast(s, e8m0, true);
    EXPECT_EQ(e4.dtype(), f8e4m3);
    EXPECT_EQ(e5.dtype(), f8e5m2);
    EXPECT_EQ(e8.dtype(), e8m0);
    EXPECT_EQ(cast(n > 0, f32).dtype(), f32);
    EXPECT_EQ(cast(s, i1).dtype(), i1);
  });
  std::string ir = fn->str();
  EXPECT_CONTAINS(ir, "= cast %n {to = f32, saturate = 0} : f32\n");
  EXPECT_CONTAINS(ir, "= cast %s {to = f8e4m3, saturate = 1} : f8e4m3\n");
  EXPECT_CONTAINS(ir, "= cast %s {to = f8e5m2, saturate = 0} : f8e5m2\n");
  EXPECT_CONTAINS(ir, "= cast %s {to = e8m0, saturate = 1} : e8m0\n");
  EXPECT_CONTAINS(ir, "= cast %s {to = i1, saturate = 0} : i1\n");
}

TEST(DslOps, Bitcast) {
  const std::pair<DType, DType> pairs[] = {{f32, i32}, {i32, f32}, {f16, bf16}, {bf16, f16}, {f8e4m3, i8},
                                           {i8, f8e5m2}, {e8m0, i8}, {f8e5m2, f8e4m3}, {i8, e8m0}};
  for (auto [from, to] : pairs) {
    SCOPED_TRACE(fmt::format("{} -> {}", name_of(from), name_of(to)));
    auto fn = trace("bitcast", {"x"}, [&](const Constants&, Ptr<f32> x) {
      Tile v = cast(load(x + arange(0, 64)), from);
      Tile r = bitcast(v, to);
      EXPECT_EQ(r.type(), (ir::Type{to, false, {64}}));
      EXPECT_EQ(bitcast(v, from).value(), v.value());  // same dtype: no op
    });
    EXPECT_CONTAINS(fn->str(), fmt::format(" {{to = {}}} : tile<64x{}>\n", name_of(to), name_of(to)));
    EXPECT_OP(fn->str(), "bitcast", tile_str({64}, to));
    EXPECT_EQ(ops_of(*fn, OpKind::bitcast).size(), 1u);
  }
  auto fn = trace("bitcast_scalar", {"s"}, [](const Constants&, Scalar<f32> s) {
    EXPECT_EQ(bitcast(s, i32).type(), ir::Type::scalar(i32));
  });
  EXPECT_CONTAINS(fn->str(), "= bitcast %s {to = i32} : i32\n");
}

// --- reductions --------------------------------------------------------------------------

TEST(DslOps, ReductionsWithKeepdimsAndNegativeAxes) {
  using ReduceFn = Tile (*)(const Tile&, int, bool, Loc);
  const std::pair<const char*, ReduceFn> fns[] = {
      {"sum", sum}, {"max", max}, {"min", min}, {"argmax", argmax}, {"argmin", argmin}};
  for (auto& [kind, f] : fns) {
    SCOPED_TRACE(kind);
    bool arg = kind[0] == 'a';
    DType rd = arg ? i32 : f32;
    auto fn = trace("reduce", {"x"}, [&](const Constants&, Ptr<f32> x) {
      Tile v = load(x + arange(0, 64));
      Tile m = load(x + expand_dims(arange(0, 64), 1) * 32 + expand_dims(arange(0, 32), 0));  // 64x32
      Loc here = Loc::current();
      EXPECT_EQ(f(m, 0, false, here).type(), (ir::Type{rd, false, {32}}));
      EXPECT_EQ(f(m, 1, false, here).type(), (ir::Type{rd, false, {64}}));
      EXPECT_EQ(f(m, -1, false, here).type(), (ir::Type{rd, false, {64}}));
      EXPECT_EQ(f(m, -2, false, here).type(), (ir::Type{rd, false, {32}}));
      EXPECT_EQ(f(m, 0, true, here).type(), (ir::Type{rd, false, {1, 32}}));
      EXPECT_EQ(f(m, -1, true, here).type(), (ir::Type{rd, false, {64, 1}}));
      EXPECT_EQ(f(v, 0, false, here).type(), ir::Type::scalar(rd));
      EXPECT_EQ(f(v, -1, true, here).type(), (ir::Type{rd, false, {1}}));
    });
    std::string ir = fn->str();
    std::string r0 = fmt::format("{{kind = \"{}\", axis = 0}} : tile<32x{}>\n", kind, name_of(rd));
    std::string r1 = fmt::format("{{kind = \"{}\", axis = 1}} : tile<64x{}>\n", kind, name_of(rd));
    EXPECT_EQ(count_of(ir, r0), 3);  // axis 0, -2 and 0 with keepdims
    EXPECT_EQ(count_of(ir, r1), 3);  // axis 1, -1 and -1 with keepdims
    EXPECT_EQ(count_of(ir, fmt::format("{{kind = \"{}\", axis = 0}} : {}\n", kind, name_of(rd))), 2);
    EXPECT_CONTAINS(ir, fmt::format("{{axis = 0}} : tile<1x32x{}>\n", name_of(rd)));
    EXPECT_CONTAINS(ir, fmt::format("{{axis = 1}} : tile<64x1x{}>\n", name_of(rd)));
    EXPECT_OP(ir, "splat", tile_str({1}, rd));
    EXPECT_EQ(ops_of(*fn, OpKind::reduce).size(), 8u);
  }
}

TEST(DslOps, ReductionsOfIntegerTiles) {
  auto fn = trace("ireduce", {}, [](const Constants&) {
    Tile a = reshape(arange(0, 64), {8, 8});
    EXPECT_EQ(sum(a, 0).type(), (ir::Type{i32, false, {8}}));
    EXPECT_EQ(max(cast(a, i64), 1).type(), (ir::Type{i64, false, {8}}));
    EXPECT_EQ(min(cast(a, i8), -1, true).type(), (ir::Type{i8, false, {8, 1}}));
    EXPECT_EQ(argmin(a, 0).type(), (ir::Type{i32, false, {8}}));
    EXPECT_EQ(argmax(cast(a, f16), 1).type(), (ir::Type{i32, false, {8}}));
    EXPECT_EQ(max(a < 3, 0).type(), (ir::Type{i1, false, {8}}));
  });
  std::string ir = fn->str();
  EXPECT_CONTAINS(ir, "{kind = \"sum\", axis = 0} : tile<8xi32>\n");
  EXPECT_CONTAINS(ir, "{kind = \"max\", axis = 1} : tile<8xi64>\n");
  EXPECT_CONTAINS(ir, "{kind = \"min\", axis = 1} : tile<8xi8>\n");
  EXPECT_CONTAINS(ir, "{kind = \"argmin\", axis = 0} : tile<8xi32>\n");
  EXPECT_CONTAINS(ir, "{kind = \"argmax\", axis = 1} : tile<8xi32>\n");
  EXPECT_CONTAINS(ir, "{kind = \"max\", axis = 0} : tile<8xi1>\n");
}

// --- matrix product ----------------------------------------------------------------------

TEST(DslOps, DotWithEverySupportedDtypePairing) {
  struct Case {
    DType a, b, acc;
  };
  const Case cases[] = {{f16, f16, f32},       {bf16, bf16, f32},       {f32, f32, f32},
                        {i8, i8, i32},         {f8e4m3, f8e4m3, f32},   {f8e5m2, f8e5m2, f32},
                        {f8e4m3, f8e5m2, f32}, {f8e5m2, f8e4m3, f32}};
  for (const Case& c : cases) {
    SCOPED_TRACE(fmt::format("{} x {}", name_of(c.a), name_of(c.b)));
    auto fn = trace("dot", {"x"}, [&](const Constants&, Ptr<f32> x) {
      Tile a = cast(load(x + expand_dims(arange(0, 64), 1) * 32 + expand_dims(arange(0, 32), 0)), c.a);  // 64x32
      Tile b = cast(load(x + expand_dims(arange(0, 32), 1) * 16 + expand_dims(arange(0, 16), 0)), c.b);  // 32x16
      Tile acc = zeros({64, 16}, c.acc);
      Tile r = dot(a, b, acc);
      EXPECT_EQ(r.type(), (ir::Type{c.acc, false, {64, 16}}));
      Tile r2 = dot(a, b);  // zero accumulator of the right type
      EXPECT_EQ(r2.type(), r.type());
      Tile r3 = dot(a, b, r, Precision::ieee);
      EXPECT_EQ(r3.type(), r.type());
      Tile r4 = dot(a, b, r3, Precision::tf32x3);
      EXPECT_EQ(r4.type(), r.type());
    });
    std::string ir = fn->str();
    std::string type = tile_str({64, 16}, c.acc);
    EXPECT_EQ(count_of(ir, "{precision = \"tf32\"} : " + type + "\n"), 2);
    EXPECT_EQ(count_of(ir, "{precision = \"ieee\"} : " + type + "\n"), 1);
    EXPECT_EQ(count_of(ir, "{precision = \"tf32x3\"} : " + type + "\n"), 1);
    EXPECT_EQ(count_of(ir, "= constant {value = 0} : " + type + "\n"), 2);
    for (auto* op : ops_of(*fn, OpKind::dot)) {
      EXPECT_EQ(op->operands[0]->type, (ir::Type{c.a, false, {64, 32}}));
      EXPECT_EQ(op->operands[1]->type, (ir::Type{c.b, false, {32, 16}}));
    }
  }
}

// --- control flow ------------------------------------------------------------------------

TEST(DslControlFlow, ForRangeWithoutCarriedValues) {
  auto fn = trace("loop0", {"out", "n"}, [](const Constants&, Ptr<i32> out, Scalar<i32> n) {
    for_range(0, n, 1, [&](Tile i) {
      EXPECT_EQ(i.type(), ir::Type::scalar(i32));
      store(out + i, i * 2);
    });
  });
  std::string ir = fn->str();
  auto loops = ops_of(*fn, OpKind::for_loop);
  ASSERT_EQ(loops.size(), 1u);
  EXPECT_TRUE(loops[0]->results.empty());
  EXPECT_EQ(loops[0]->operands.size(), 3u);
  EXPECT_EQ(loops[0]->region(0).args.size(), 1u);
  EXPECT_CONTAINS(ir, "  for %0, %n, %1 {\n  ^bb0(%2: i32):\n");
  EXPECT_CONTAINS(ir, "    yield\n  }\n");
  EXPECT_CONTAINS(ir, "    store ");
}

TEST(DslControlFlow, ForRangeWithOneCarriedValue) {
  auto fn = trace("loop1", {"x", "out", "n"}, [](const Constants&, Ptr<f32> x, Ptr<f32> out, Scalar<i32> n) {
    Tile offs = arange(0, 64);
    Tile acc = for_range(0, n, 64, zeros({64}, f32), [&](Tile i, Tile acc) {
      EXPECT_EQ(acc.type(), (ir::Type{f32, false, {64}}));
      return acc + load(x + i + offs, i + offs < n);
    });
    EXPECT_EQ(acc.type(), (ir::Type{f32, false, {64}}));
    store(out + offs, acc);
  });
  std::string ir = fn->str();
  EXPECT_OP(ir, "for", "tile<64xf32>");
  EXPECT_CONTAINS(ir, ": tile<64xf32> {\n  ^bb0(%");
  EXPECT_CONTAINS(ir, ": i32, %");
  auto loops = ops_of(*fn, OpKind::for_loop);
  ASSERT_EQ(loops.size(), 1u);
  EXPECT_EQ(loops[0]->results.size(), 1u);
  EXPECT_EQ(loops[0]->region(0).args.size(), 2u);
  EXPECT_EQ(loops[0]->region(0).ops.back()->kind, OpKind::yield);
  EXPECT_EQ(loops[0]->region(0).ops.back()->operands.size(), 1u);
  EXPECT_EQ(loops[0]->operands[2]->def->attr_int("value"), 64);
}

TEST(DslControlFlow, ForRangeWithSeveralCarriedValues) {
  auto fn = trace("loop3", {"x", "out"}, [](const Constants&, Ptr<f32> x, Ptr<f32> out) {
    Tile offs = arange(0, 64);
    std::vector<Tile> init = {zeros({64}, f32), scalar(0, i32), x + offs};
    auto r = for_range(0, 16, 2, init, [&](Tile i, std::vector<Tile> c) {
      EXPECT_EQ(c.size(), 3u);
      EXPECT_EQ(c[2].type(), (ir::Type{f32, true, {64}}));
      return std::vector<Tile>{c[0] + load(c[2]), c[1] + i, c[2] + 64};
    });
    ASSERT_EQ(r.size(), 3u);
    EXPECT_EQ(r[0].type(), (ir::Type{f32, false, {64}}));
    EXPECT_EQ(r[1].type(), ir::Type::scalar(i32));
    EXPECT_EQ(r[2].type(), (ir::Type{f32, true, {64}}));
    store(r[2], r[0] + cast(r[1], f32));
  });
  std::string ir = fn->str();
  EXPECT_OP(ir, "for", "tile<64xf32>, i32, tile<64xptr<f32>>");
  EXPECT_CONTAINS(ir, ": i32, %");
  EXPECT_CONTAINS(ir, ": tile<64xf32>, %");
  EXPECT_CONTAINS(ir, ": tile<64xptr<f32>>):\n");
  auto loops = ops_of(*fn, OpKind::for_loop);
  ASSERT_EQ(loops.size(), 1u);
  EXPECT_EQ(loops[0]->operands.size(), 6u);
  EXPECT_EQ(loops[0]->region(0).args.size(), 4u);
  EXPECT_EQ(loops[0]->region(0).ops.back()->operands.size(), 3u);
}

TEST(DslControlFlow, ForRangeIndexTypeFollowsTheBounds) {
  auto fn = trace("loop64", {"out", "n", "m"}, [](const Constants&, Ptr<i64> out, Scalar<i64> n, Scalar<i32> m) {
    for_range(m, n, 4, [&](Tile i) {
      EXPECT_EQ(i.type(), ir::Type::scalar(i64));
      store(out + i, i);
    });
  });
  std::string ir = fn->str();
  EXPECT_CONTAINS(ir, "= cast %m {to = i64, saturate = 0} : i64\n");
  EXPECT_CONTAINS(ir, "= constant {value = 4} : i64\n");
  EXPECT_CONTAINS(ir, "^bb0(%2: i64):\n");
}

TEST(DslControlFlow, NestedLoopsAndIdentityBodies) {
  auto fn = trace("nested", {"x", "out"}, [](const Constants&, Ptr<f32> x, Ptr<f32> out) {
    Tile offs = arange(0, 32);
    Tile outer_init = zeros({32}, f32);
    Tile total = for_range(0, 4, 1, outer_init, [&](Tile i, Tile acc) {
      Tile inner = for_range(0, 8, 1, acc, [&](Tile j, Tile acc2) { return acc2 + load(x + (i * 8 + j) * 32 + offs); });
      return inner;
    });
    Tile same = for_range(0, 4, 1, total, [&](Tile, Tile acc) { return acc; });  // yields its argument
    Tile outer = for_range(0, 4, 1, total, [&](Tile, Tile) { return outer_init; });  // yields an outer value
    EXPECT_EQ(same.type(), total.type());
    store(out + offs, same + outer);
  });
  std::string ir = fn->str();
  EXPECT_EQ(ops_of(*fn, OpKind::for_loop).size(), 4u);
  EXPECT_CONTAINS(ir, "    %");  // ops nested two levels deep are indented further
  EXPECT_CONTAINS(ir, "      yield %");
  EXPECT_CONTAINS(ir, "    ^bb0(%");
}

TEST(DslControlFlow, IfElseAndIfThen) {
  auto fn = trace("branch", {"x", "n"}, [](const Constants&, Ptr<f32> x, Scalar<i32> n) {
    Tile pid = program_id(0);
    auto r = if_else(
        pid == 0, [&] { return std::vector<Tile>{load(x), pid + 1}; },
        [&] { return std::vector<Tile>{scalar(0.0, f32), pid}; });
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].type(), ir::Type::scalar(f32));
    EXPECT_EQ(r[1].type(), ir::Type::scalar(i32));
    if_then(pid < n, [&] { store(x + r[1], r[0]); });
    auto none = if_else(n > 4, [&] { store(x, 1.0); return std::vector<Tile>{}; },
                        [&] { store(x, 2.0); return std::vector<Tile>{}; });
    EXPECT_TRUE(none.empty());
    Tile t = if_else(n > 0, [&] { return std::vector<Tile>{arange(0, 16)}; },
                     [&] { return std::vector<Tile>{zeros({16}, i32)}; })[0];
    EXPECT_EQ(t.type(), (ir::Type{i32, false, {16}}));
    store(x + t, cast(t, f32));
  });
  std::string ir = fn->str();
  EXPECT_OP(ir, "if", "f32, i32");
  EXPECT_OP(ir, "if", "tile<16xi32>");
  EXPECT_CONTAINS(ir, "  ^bb0():\n");
  EXPECT_CONTAINS(ir, "  ^bb1():\n");
  auto ifs = ops_of(*fn, OpKind::if_else);
  ASSERT_EQ(ifs.size(), 4u);
  EXPECT_EQ(ifs[0]->results.size(), 2u);
  EXPECT_TRUE(ifs[1]->results.empty());
  for (auto* op : ifs) {
    EXPECT_EQ(op->regions.size(), 2u);
    EXPECT_EQ(op->region(0).ops.back()->kind, OpKind::yield);
    EXPECT_EQ(op->region(1).ops.back()->kind, OpKind::yield);
    EXPECT_EQ(op->operands[0]->type, ir::Type::scalar(i1));
  }
  // if_then's else region holds only the yield.
  EXPECT_EQ(ifs[1]->region(1).ops.size(), 1u);
}

TEST(DslControlFlow, IfInsideForAndForInsideIf) {
  auto fn = trace("mixed", {"x", "n"}, [](const Constants&, Ptr<f32> x, Scalar<i32> n) {
    Tile acc = for_range(0, n, 1, scalar(0.0, f32), [&](Tile i, Tile acc) {
      return if_else(i % 2 == 0, [&] { return std::vector<Tile>{acc + load(x + i)}; },
                     [&] { return std::vector<Tile>{acc}; })[0];
    });
    if_then(acc > 0.0, [&] {
      for_range(0, 4, 1, [&](Tile j) { store(x + j, acc); });
    });
  });
  std::string ir = fn->str();
  EXPECT_EQ(ops_of(*fn, OpKind::for_loop).size(), 2u);
  EXPECT_EQ(ops_of(*fn, OpKind::if_else).size(), 2u);
  EXPECT_CONTAINS(ir, "    %");
  EXPECT_CONTAINS(ir, "      yield");
}

// --- atomics, print, static_check ----------------------------------------------------------

TEST(DslOps, Atomics) {
  auto fn = trace("atomics", {"pf", "pi", "ph", "pl"},
                  [](const Constants&, Ptr<f32> pf, Ptr<i32> pi, Ptr<f16> ph, Ptr<i64> pl) {
    Tile offs = arange(0, 64);
    Tile mask = offs < 40;
    Tile v = load(pf + offs);
    Tile a1 = atomic_add(pf + offs, v);
    EXPECT_EQ(a1.type(), (ir::Type{f32, false, {64}}));
    Tile a2 = atomic_add(pf + offs, 1.0, mask);
    EXPECT_EQ(a2.type(), a1.type());
    Tile a3 = atomic_add(pi, 1);
    EXPECT_EQ(a3.type(), ir::Type::scalar(i32));
    Tile a4 = atomic_add(ph + offs, cast(v, f16));
    EXPECT_EQ(a4.dtype(), f16);
    Tile a5 = atomic_add(pl + offs, int64_t{2}, mask);
    EXPECT_EQ(a5.dtype(), i64);
    Tile m1 = atomic_max(pi + offs, offs);
    EXPECT_EQ(m1.type(), (ir::Type{i32, false, {64}}));
    Tile m2 = atomic_max(pf + offs, v, mask);
    EXPECT_EQ(m2.dtype(), f32);
    Tile m3 = atomic_max(pl, int64_t{5});
    EXPECT_EQ(m3.type(), ir::Type::scalar(i64));
    Tile m4 = atomic_max(pf, v);  // a scalar pointer broadcast to the values
    EXPECT_EQ(m4.shape(), (Shape{64}));
    Tile c1 = atomic_cas(pi, 0, 1);
    EXPECT_EQ(c1.type(), ir::Type::scalar(i32));
    Tile c2 = atomic_cas(pl + offs, cast(offs, i64), cast(offs + 1, i64));
    EXPECT_EQ(c2.type(), (ir::Type{i64, false, {64}}));
  });
  std::string ir = fn->str();
  EXPECT_OP(ir, "atomic_add", "tile<64xf32>");
  EXPECT_OP(ir, "atomic_add", "i32");
  EXPECT_OP(ir, "atomic_add", "tile<64xf16>");
  EXPECT_OP(ir, "atomic_add", "tile<64xi64>");
  EXPECT_OP(ir, "atomic_max", "tile<64xi32>");
  EXPECT_OP(ir, "atomic_max", "tile<64xf32>");
  EXPECT_OP(ir, "atomic_max", "i64");
  EXPECT_OP(ir, "atomic_cas", "i32");
  EXPECT_OP(ir, "atomic_cas", "tile<64xi64>");
  std::vector<size_t> add_operands, max_operands, cas_operands;
  for (auto* op : ops_of(*fn, OpKind::atomic_add)) add_operands.push_back(op->operands.size());
  for (auto* op : ops_of(*fn, OpKind::atomic_max)) max_operands.push_back(op->operands.size());
  for (auto* op : ops_of(*fn, OpKind::atomic_cas)) cas_operands.push_back(op->operands.size());
  EXPECT_EQ(add_operands, (std::vector<size_t>{2, 3, 2, 2, 3}));
  EXPECT_EQ(max_operands, (std::vector<size_t>{2, 3, 2, 2}));
  EXPECT_EQ(cas_operands, (std::vector<size_t>{3, 3}));
}

TEST(DslOps, Print) {
  auto fn = trace("print", {"x"}, [](const Constants&, Ptr<f32> x) {
    Tile v = load(x + arange(0, 8));
    print("v = ", {v, program_id(0)});
    print("tick", {});
  });
  std::string ir = fn->str();
  EXPECT_CONTAINS(ir, "  print %3, %4 {prefix = \"v = \"}\n");
  EXPECT_CONTAINS(ir, "  print {prefix = \"tick\"}\n");
  auto prints = ops_of(*fn, OpKind::print);
  ASSERT_EQ(prints.size(), 2u);
  EXPECT_TRUE(prints[0]->results.empty());
  EXPECT_EQ(prints[0]->attr_str("prefix"), "v = ");
}

TEST(DslOps, WaitAfterPassesTheProductThrough) {
  auto fn = trace("wait_after", {"x"}, [](const Constants&, Ptr<f32> x) {
    Tile v = load(x + arange(0, 8));
    Tile ready = exp(v);
    Tile product = wait_after(v * 2.0, ready);
    store(x + arange(0, 8), product + ready);
  });
  auto waits = ops_of(*fn, OpKind::wait_after);
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(waits[0]->result()->type, waits[0]->operands[0]->type);
  EXPECT_EQ(waits[0]->operands[0]->def->kind, OpKind::mul);
  EXPECT_EQ(waits[0]->operands[1]->def->kind, OpKind::exp);
  EXPECT_CONTAINS(fn->str(), "wait_after");
}

TEST(DslOps, OncePerElementPassesItsOperandThrough) {
  auto fn = trace("once", {"x"}, [](const Constants&, Ptr<f32> x) {
    Tile v = exp(load(x + arange(0, 8)));
    store(x + arange(0, 8), once_per_element(v) * 2.0);
  });
  auto ops = ops_of(*fn, OpKind::once_per_element);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0]->result()->type, ops[0]->operands[0]->type);
  EXPECT_EQ(ops[0]->operands[0]->def->kind, OpKind::exp);
  EXPECT_CONTAINS(fn->str(), "once_per_element");
}

TEST(DslOps, StaticCheckThatHoldsEmitsNothing) {
  auto fn = trace(
      "static", {},
      [](const Constants& c) {
        static_check(c["BLOCK"] % 16 == 0, "BLOCK must be a multiple of 16");
        static_check(true, "always");
      },
      {{"BLOCK", 64}});
  EXPECT_TRUE(fn->body.ops.empty());
}

// --- whole kernels, locations, the verifier ----------------------------------------------

TEST(DslKernels, EveryOpRecordsTheUsersLine) {
  int first = 0, last = 0;
  auto fn = trace("locs", {"x", "y", "n"}, [&](const Constants&, Ptr<f32> x, Ptr<i32> y, Scalar<i32> n) {
    first = __LINE__;
    Tile offs = program_id(0) * 64 + arange(0, 64);
    Tile mask = offs < n;
    Tile v = load(x + offs, mask, 0.0);
    Tile w = where(mask, exp(v) * 2.0 - sigmoid(v), maximum(v, 1.0));
    Tile m = expand_dims(w, 1) + trans(broadcast_to(expand_dims(w, 1), {64, 64}));
    m = reshape(reshape(m, {4096}), {64, 64}) + bitcast(bitcast(m, i32), f32);
    Tile acc = for_range(0, cdiv(n, 64), 1, zeros({64, 64}, f32), [&](Tile i, Tile acc) { return dot(m, m, acc); });
    if_then(n > 0, [&] { store(y + offs, argmax(acc, 1), mask); });
    atomic_add(x + offs, sum(acc, 0), mask);
    store(x + offs, fma(v, v, cast(cast(v, f8e4m3, true), f32)));
    print("v", {v});
    last = __LINE__;
  });
  ASSERT_GT(first, 0);
  ir::walk(fn->body, [&](ir::Op& op) {
    SCOPED_TRACE(ir::op_name(op.kind));
    EXPECT_EQ(op.loc.file, "builder_test.cpp");
    EXPECT_GT(static_cast<int>(op.loc.line), first);
    EXPECT_LT(static_cast<int>(op.loc.line), last);
  });
}

TEST(DslKernels, TraceRunsTheVerifierAndTheIrVerifiesAgain) {
  auto k = define_kernel("vector_add", {"x", "y", "out", "n"}, {{"BLOCK", 1024}},
                         [](const Constants& c, Ptr<f32> x, Ptr<f32> y, Ptr<f32> out, Scalar<i32> n) {
                           Tile offs = program_id(0) * c["BLOCK"] + arange(0, c["BLOCK"]);
                           Tile mask = offs < n;
                           store(out + offs, load(x + offs, mask) + load(y + offs, mask), mask);
                         });
  auto fn = k.trace(k.constants());
  EXPECT_NO_THROW(ir::verify(*fn));
  EXPECT_EQ(fn->name, "vector_add");
  ASSERT_EQ(fn->params.size(), 4u);
  EXPECT_EQ(fn->params[0].type, ir::Type::pointer_to(f32));
  EXPECT_EQ(fn->params[3].type, ir::Type::scalar(i32));
  EXPECT_EQ(fn->body.args.size(), 4u);
  EXPECT_EQ(fn->body.args[3]->name, "n");
  EXPECT_EQ(fn->num_warps, 4);
  EXPECT_EQ(fn->num_stages, 1);

  // Break the IR behind the DSL's back: the verifier names the op and prints the IR.
  auto adds = ops_of(*fn, OpKind::add);
  ASSERT_FALSE(adds.empty());
  const_cast<ir::Op*>(adds.back())->results[0]->type.dtype = f16;
  std::string msg = error_of([&] { ir::verify(*fn); });
  EXPECT_CONTAINS(msg, "tilejit IR verifier: add at builder_test.cpp:");
  EXPECT_CONTAINS(msg, "kernel @vector_add(");
}

TEST(DslKernels, VerifierRejectsARegionWithoutYield) {
  auto fn = trace("loop", {"n"}, [](const Constants&, Scalar<i32> n) {
    for_range(0, n, 1, [&](Tile i) { print("i", {i}); });
  });
  auto loops = ops_of(*fn, OpKind::for_loop);
  ASSERT_EQ(loops.size(), 1u);
  const_cast<ir::Op*>(loops[0])->region(0).ops.pop_back();  // drop the yield
  std::string msg = error_of([&] { ir::verify(*fn); });
  EXPECT_CONTAINS(msg, "region without yield");
}

TEST(DslKernels, ExampleStyleKernelsTrace) {
  auto softmax = trace("softmax", {"x", "out", "n_cols", "row_stride"},
                       [](const Constants& c, Ptr<f32> x, Ptr<f32> out, Scalar<i32> n_cols, Scalar<i32> row_stride) {
                         Tile row = program_id(0);
                         Tile cols = arange(0, c["BLOCK_N"]);
                         Tile mask = cols < n_cols;
                         Tile v = load(x + row * row_stride + cols, mask, -std::numeric_limits<double>::infinity());
                         Tile e = exp(v - max(v, 0));
                         store(out + row * row_stride + cols, e / sum(e, 0), mask);
                       },
                       {{"BLOCK_N", 256}});
  std::string ir = softmax->str();
  EXPECT_CONTAINS(ir, "{kind = \"max\", axis = 0} : f32\n");
  EXPECT_CONTAINS(ir, "{kind = \"sum\", axis = 0} : f32\n");
  EXPECT_OP(ir, "exp", "tile<256xf32>");
  EXPECT_OP(ir, "div", "tile<256xf32>");

  auto layernorm = trace(
      "layernorm", {"x", "gamma", "y", "n_cols", "eps"},
      [](const Constants& c, Ptr<f32> x, Ptr<f32> gamma, Ptr<f32> y, Scalar<i32> n_cols, Scalar<f32> eps) {
        Tile row = program_id(0);
        Tile cols = arange(0, c["BLOCK_N"]);
        Tile mask = cols < n_cols;
        Tile v = load(x + row * n_cols + cols, mask, 0.0);
        Tile n = cast(n_cols, f32);
        Tile mean = sum(v, 0) / n;
        Tile centered = where(mask, v - mean, 0.0);
        Tile rsigma = rsqrt(sum(centered * centered, 0) / n + eps);
        store(y + row * n_cols + cols, centered * rsigma * load(gamma + cols, mask), mask);
      },
      {{"BLOCK_N", 1024}});
  EXPECT_OP(layernorm->str(), "rsqrt", "f32");
  EXPECT_OP(layernorm->str(), "select", "tile<1024xf32>");
}

}  // namespace
