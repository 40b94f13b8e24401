// The axis analysis's facts (codegen/axis_info.h) hold for the values kernels compute. Each
// expression below is traced with true facts about its arguments and analysed, then run in the
// emulator; every run of consecutive values, every divisibility at a run's start and every run
// of equal values the analysis claims is checked against the values.
#include <gtest/gtest.h>

#include <functional>

#include "codegen/axis_info.h"
#include "ops_test_util.h"

namespace tjops {
namespace {

struct Expression {
  const char* name;
  std::function<Tile(Tile n, Tile s)> build;  // an i32 or i1 tile of rank 1 or 2, dims 16 or 1
};

Tile rows() { return expand_dims(arange(0, 16), 1); }  // (16, 1)
Tile cols() { return expand_dims(arange(0, 16), 0); }  // (1, 16)

const Expression kExpressions[] = {
    {"rows * s + cols", [](Tile, Tile s) { return rows() * s + cols(); }},
    {"expand_dims(r, 1)", [](Tile, Tile) { return rows(); }},
    {"expand_dims(r * s, 0)", [](Tile, Tile s) { return expand_dims(arange(0, 16) * s, 0); }},
    {"expand_dims(r + s, 0) * 4", [](Tile, Tile s) { return expand_dims(arange(0, 16) + s, 0) * 4; }},
    {"(r + 8) % n", [](Tile n, Tile) { return (arange(0, 16) + 8) % n; }},
    {"(r + 16 * s) % n", [](Tile n, Tile s) { return (arange(0, 16) + s * 16) % n; }},
    {"minimum(r + s, n)", [](Tile n, Tile s) { return minimum(arange(0, 16) + s, n); }},
    {"r + r", [](Tile, Tile) { return arange(0, 16) + arange(0, 16); }},
    {"(r + 32) * s", [](Tile, Tile s) { return (arange(0, 16) + 32) * s; }},
    {"rows + cols", [](Tile, Tile) { return rows() + cols(); }},
    {"trans(rows * s + cols)", [](Tile, Tile s) { return trans(rows() * s + cols()); }},
    {"trans(rows)", [](Tile, Tile) { return trans(rows()); }},
    {"expand_dims(r % n, 1) * s + cols * 2", [](Tile n, Tile s) { return expand_dims(arange(0, 16) % n, 1) * s + cols() * 2; }},
    {"rows * n * s + cols", [](Tile n, Tile s) { return rows() * n * s + cols(); }},
    // Shifts right: blocks of consecutive values (a scale's block of K).
    {"(r + 16 * s) >> 2", [](Tile, Tile s) { return (arange(0, 16) + s * 16) >> 2; }},
    {"(r + s) >> 2", [](Tile, Tile s) { return (arange(0, 16) + s) >> 2; }},
    {"rows * s + (cols >> 3)", [](Tile, Tile s) { return rows() * s + (cols() >> 3); }},
    {"(r - 8) >> 2", [](Tile, Tile) { return (arange(0, 16) - 8) >> 2; }},
    {"(r * 2) >> 2", [](Tile, Tile) { return (arange(0, 16) * 2) >> 2; }},
    // Masks: runs of equal values decide how wide a masked access may be.
    {"r < n", [](Tile n, Tile) { return arange(0, 16) < n; }},
    {"r + 8 < n", [](Tile n, Tile) { return arange(0, 16) + 8 < n; }},
    {"rows * s + cols < n", [](Tile n, Tile s) { return rows() * s + cols() < n; }},
    {"cols < n - s", [](Tile n, Tile s) { return cols() < n - s; }},
    {"(r + 4) % n < s", [](Tile n, Tile s) { return (arange(0, 16) + 4) % n < s; }},
    {"rows < n && cols < s", [](Tile n, Tile s) { return (rows() < n) && (cols() < s); }},
    {"where(r < n, r, s)", [](Tile n, Tile s) { return where(arange(0, 16) < n, arange(0, 16), s); }},
    {"r >= s", [](Tile, Tile s) { return arange(0, 16) >= s; }},
    {"s > r", [](Tile, Tile s) { return s > arange(0, 16); }},
    {"s <= r", [](Tile, Tile s) { return s <= arange(0, 16); }},
    {"r <= s", [](Tile, Tile s) { return arange(0, 16) <= s; }},  // s = 0: one true, then false
    {"r > s", [](Tile, Tile s) { return arange(0, 16) > s; }},
    {"r == s", [](Tile, Tile s) { return arange(0, 16) == s; }},
    {"r != s", [](Tile, Tile s) { return arange(0, 16) != s; }},
};

// True facts about an argument: the power of two up to 16 dividing it (an address or an
// integer), and whether it equals 1.
ir::ArgFacts facts_of(int64_t v) {
  ir::ArgFacts f;
  if (v == 1) f.equals_one = true;
  while (f.divisibility < ir::kMaxArgDivisibility && v % (2 * f.divisibility) == 0) f.divisibility *= 2;
  return f;
}

// The offsets of a (16), (16, 1), (1, 16) or (16, 16) tile stored row-major.
Tile offsets_of(const Shape& shape) {
  if (shape.size() == 1) return arange(0, 16);
  if (shape[1] == 1) return rows();
  if (shape[0] == 1) return cols();
  return rows() * 16 + cols();
}

// Checks `info` against `values`, the tile of `shape` row-major; consecutive values of a run
// differ by `unit` (a pointer tile's values are addresses: the element size).
void expect_facts_hold(const codegen::AxisInfo& info, const Shape& shape, const std::vector<LD>& values,
                       int64_t unit = 1) {
  int rank = static_cast<int>(shape.size());
  int64_t columns = rank == 2 ? shape[1] : 1;
  auto at = [&](int64_t i, int64_t j) { return static_cast<int64_t>(values[size_t(i * columns + j)]); };
  for (int d = 0; d < rank; ++d) {
    int64_t contiguity = info.contiguity[size_t(d)], divisor = info.divisibility[size_t(d)];
    int64_t constancy = info.constancy[size_t(d)];
    for (int64_t i = 0; i < shape[0]; ++i)
      for (int64_t j = 0; j < columns; ++j) {
        int64_t index = d == 0 ? i : j;
        auto step = [&](int64_t k) { return d == 0 ? at(i + k, j) : at(i, j + k); };
        if (index % contiguity == 0) {
          ASSERT_EQ(at(i, j) % divisor, 0) << "dim " << d << ": the run starting at (" << i << ", " << j << ") holds "
                                           << at(i, j) << ", not a multiple of " << divisor;
          for (int64_t k = 1; k < contiguity; ++k)
            ASSERT_EQ(step(k), at(i, j) + k * unit) << "dim " << d << ": run of " << contiguity << " from (" << i << ", " << j << ")";
        }
        if (index % constancy == 0) {
          for (int64_t k = 1; k < constancy; ++k)
            ASSERT_EQ(step(k), at(i, j)) << "dim " << d << ": " << constancy << " equal values from (" << i << ", " << j << ")";
        }
      }
  }
}

TEST(AxisFacts, HoldForTheComputedValues) {
  struct Arguments {
    int32_t n, s;
  };
  for (const Expression& e : kExpressions) {
    JitKernel k(define_kernel(fmt::format("axis_facts_{}", &e - kExpressions), {"out", "n", "s"}, {},
                              [&](const Constants&, Ptr<i32> out, Scalar<i32> n, Scalar<i32> s) {
                                Tile v = e.build(n, s);
                                store(out + offsets_of(v.shape()), v.type().dtype == i1 ? cast(v, i32) : v);
                              }));
    for (Arguments a : {Arguments{16, 24}, Arguments{13, 40}, Arguments{24, 7}, Arguments{6, 1}, Arguments{32, 0},
                        Arguments{1, 12}, Arguments{48, -8}}) {
      SCOPED_TRACE(fmt::format("{} with n = {}, s = {}", e.name, a.n, a.s));
      std::unique_ptr<ir::Function> fn = k.kernel().trace(k.kernel().constants(), {{}, facts_of(a.n), facts_of(a.s)});
      const ir::Op& store_op = *fn->body.ops.back();
      ASSERT_EQ(store_op.kind, ir::OpKind::store);
      const ir::Value* value = store_op.operands[1];
      if (value->def->kind == ir::OpKind::cast && value->def->operands[0]->type.dtype == i1)
        value = value->def->operands[0];  // a mask, stored as i32
      codegen::AxisAnalysis analysis(*fn);
      Tensor out = poisoned(i32, {256});
      k.launch(stream(), {1}, out, a.n, a.s);
      std::vector<LD> values = download(out).values();
      int64_t count = 1;
      for (int64_t size : value->type.shape) count *= size;
      values.resize(size_t(count));
      expect_facts_hold(analysis.info(value), value->type.shape, values);
    }
  }
}

TEST(AxisFacts, AShiftedRunIsConstantOverItsBlocks) {
  // (r + 16 s) >> 2: four equal values from every multiple of 4; r + s, whose runs start
  // anywhere, gives none.
  for (bool aligned : {true, false}) {
    Kernel kernel = define_kernel(aligned ? "shifted_aligned_run" : "shifted_run", {"out", "s"}, {},
                                  [&](const Constants&, Ptr<i32> out, Scalar<i32> s) {
                                    store(out + arange(0, 16), (arange(0, 16) + (aligned ? s * 16 : s)) >> 2);
                                  });
    std::unique_ptr<ir::Function> fn = kernel.trace(kernel.constants(), {{}, facts_of(1)});
    codegen::AxisAnalysis analysis(*fn);
    EXPECT_EQ(analysis.info(fn->body.ops.back()->operands[1]).constancy[0], aligned ? 4 : 1);
  }
}

// Pointer tiles into a buffer that holds its own indices: loading through a tile gives the
// index each pointer points at, so its address. Their facts count bytes.
struct PointerExpression {
  const char* name;
  std::function<Tile(Tile x, Tile n, Tile s)> build;  // a tile of pointers into x, rank 1 or 2, dims 16 or 1
};

const PointerExpression kPointerExpressions[] = {
    {"x + r", [](Tile x, Tile, Tile) { return x + arange(0, 16); }},
    {"expand_dims(x + r, 1)", [](Tile x, Tile, Tile) { return expand_dims(x + arange(0, 16), 1); }},
    {"expand_dims(x + r * s, 0)", [](Tile x, Tile, Tile s) { return expand_dims(x + arange(0, 16) * s, 0); }},
    {"(x + r) + s", [](Tile x, Tile, Tile s) { return (x + arange(0, 16)) + s; }},
    {"x + rows * s + cols", [](Tile x, Tile, Tile s) { return x + rows() * s + cols(); }},
    {"expand_dims(x + r, 1) + cols", [](Tile x, Tile, Tile) { return expand_dims(x + arange(0, 16), 1) + cols(); }},
    {"x + (r + 8) % n", [](Tile x, Tile n, Tile) { return x + (arange(0, 16) + 8) % n; }},
    {"x + minimum(r, n)", [](Tile x, Tile n, Tile) { return x + minimum(arange(0, 16), n); }},
};

TEST(AxisFacts, HoldForPointerTiles) {
  struct Arguments {
    int32_t n, s;
    int64_t first;  // the element x points at: 4-byte, 8-byte and 16-byte aligned
  };
  constexpr int64_t kMiddle = 1024;  // offsets may be negative
  Host indices(i32, 2 * kMiddle);
  for (size_t i = 0; i < indices.size(); ++i) indices.set(i, LD(i));
  Tensor buffer = upload(indices);
  for (const PointerExpression& e : kPointerExpressions) {
    JitKernel k(define_kernel(fmt::format("pointer_facts_{}", &e - kPointerExpressions), {"x", "out", "n", "s"}, {},
                              [&](const Constants&, Ptr<i32> x, Ptr<i32> out, Scalar<i32> n, Scalar<i32> s) {
                                Tile pointers = e.build(x, n, s);
                                store(out + offsets_of(pointers.shape()), load(pointers));
                              }));
    for (Arguments a : {Arguments{16, 24, kMiddle}, Arguments{13, 40, kMiddle + 1}, Arguments{24, 7, kMiddle + 2},
                        Arguments{6, 1, kMiddle}, Arguments{48, -8, kMiddle + 3}, Arguments{32, 2, kMiddle + 4}}) {
      SCOPED_TRACE(fmt::format("{} with n = {}, s = {}, x at element {}", e.name, a.n, a.s, a.first));
      Tensor x = buffer.slice(0, a.first, 2 * kMiddle - a.first);
      ir::ArgFacts x_facts = facts_of(static_cast<int64_t>(reinterpret_cast<uintptr_t>(x.data())));
      std::unique_ptr<ir::Function> fn =
          k.kernel().trace(k.kernel().constants(), {x_facts, {}, facts_of(a.n), facts_of(a.s)});
      const ir::Op& store_op = *fn->body.ops.back();
      ASSERT_EQ(store_op.kind, ir::OpKind::store);
      const ir::Value* pointers = store_op.operands[1]->def->operands[0];  // what the load reads through
      codegen::AxisAnalysis analysis(*fn);
      Tensor out = poisoned(i32, {256});
      k.launch(stream(), {1}, x, out, a.n, a.s);
      std::vector<LD> indices_read = download(out).values();
      int64_t count = 1;
      for (int64_t size : pointers->type.shape) count *= size;
      std::vector<LD> addresses;
      for (int64_t i = 0; i < count; ++i)
        addresses.push_back(LD(reinterpret_cast<uintptr_t>(buffer.data())) + 4 * indices_read[size_t(i)]);
      expect_facts_hold(analysis.info(pointers), pointers->type.shape, addresses, 4);
    }
  }
}

}  // namespace
}  // namespace tjops
