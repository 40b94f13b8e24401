// The tile IR: SSA values with static types (element type + static tile shape, or a scalar,
// or a pointer), ops with attributes and nested regions (for loops, if/else), and functions.
// The DSL builds it; codegen/ passes read and rewrite it.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "dsl/dtype.h"
#include "dsl/error.h"

namespace tilejit::ir {

using Shape = std::vector<int64_t>;
std::string shape_str(const Shape& shape);  // "64x32"

// A value's type. A pointer type points at `dtype` in global memory. A tile type has a
// non-empty shape of power-of-two sizes; a scalar type has an empty shape. A descriptor
// (a kernel parameter only) names a tensor of `dtype` in global memory, of rank 2 to 5, that
// desc_load reads blocks of; its shape is the block shape, which the launch's descriptor
// argument fixes (empty until the kernel is specialized for one): 1 along each dim before
// the last two (a block lies at one index of each), then the block's rows and columns.
struct Type {
  DType dtype = DType::f32;
  bool pointer = false;
  Shape shape;
  bool descriptor = false;

  static Type scalar(DType d) { return Type{d, false, {}}; }
  static Type pointer_to(DType d) { return Type{d, true, {}}; }
  static Type descriptor_of(DType d, Shape block = {}) { return Type{d, false, std::move(block), true}; }
  bool is_scalar() const { return shape.empty() && !descriptor; }
  bool is_tile() const { return !shape.empty() && !descriptor; }
  int rank() const { return static_cast<int>(shape.size()); }
  int64_t numel() const;
  // A descriptor's block without its leading dims of 1: the (rows, columns) tile desc_load yields.
  Shape block_tile() const { return shape.size() < 2 ? shape : Shape(shape.end() - 2, shape.end()); }
  Type with_shape(Shape s) const { return Type{dtype, pointer, std::move(s)}; }
  Type with_dtype(DType d) const { return Type{d, pointer, shape}; }
  Type element() const { return Type{dtype, pointer, {}}; }
  // "f32", "ptr<f16>", "tile<64x32xf32>", "tile<64xptr<f32>>", "desc<64x32xbf16>"
  std::string str() const;
  bool operator==(const Type&) const = default;
};

inline constexpr size_t kMaxDescriptorRank = 5;  // what a TMA tensor map describes

// Why a descriptor of `dtype` cannot have `block` as its block shape (rank 2 to 5, 1 along
// all but the last two dims, which are powers of two up to 256 with rows of at least 16
// bytes: what one TMA box holds); empty when it can.
std::string descriptor_block_problem(DType dtype, const Shape& block);

enum class OpKind : uint8_t {
  // Constants, ids, index tiles.
  constant, program_id, num_programs, arange,
  // Shape manipulation.
  splat, broadcast, expand_dims, reshape, trans,
  // Elementwise binary arithmetic and logic (operands and result share one type).
  add, sub, mul, div, rem, minimum, maximum, bit_and, bit_or, bit_xor, shl, shr,
  // Comparison (result i1). Attribute "predicate".
  cmp,
  // Elementwise unary.
  neg, bit_not, abs, exp, exp2, log, log2, sqrt, rsqrt, sin, cos, tanh, erf, rint, sigmoid,
  // Elementwise ternary.
  fma, select,
  // Conversions.
  cast, bitcast,
  // Memory.
  addptr, load, store, atomic_add, atomic_max, atomic_cas,
  // A block of a descriptor's tensor at the given element offsets (one i32 scalar per dim);
  // elements outside the tensor read zero. desc_store writes one (operands: the descriptor,
  // the offsets, the block), elements outside the tensor left alone.
  desc_load, desc_store,
  // Reductions and matrix product.
  reduce, dot,
  // Control flow.
  for_loop, if_else, yield,
  // Operand 0 itself, whose asynchronous computation is waited for after operand 1 is computed.
  wait_after,
  // The operand itself, computed once per element (not by every thread that holds a copy of it).
  once_per_element,
  // Debugging.
  print,
};
std::string_view op_name(OpKind kind);
bool is_elementwise_unary(OpKind kind);
bool is_elementwise_binary(OpKind kind);  // add .. shr (not cmp)

using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>, DType>;

class Op;
class Block;

class Value {
 public:
  Type type;
  Op* def = nullptr;       // the defining op; null for a block argument
  Block* owner = nullptr;  // the block the value is defined in
  std::string name;        // optional, for readable IR (kernel parameters)
};

class Op {
 public:
  OpKind kind;
  std::vector<Value*> operands;
  std::vector<Value*> results;
  std::vector<std::pair<std::string, AttrValue>> attrs;
  std::vector<std::unique_ptr<Block>> regions;
  Block* parent = nullptr;
  SourceLoc loc;

  Value* result(size_t i = 0) const { return results.at(i); }
  bool has_attr(std::string_view name) const;
  const AttrValue& attr(std::string_view name) const;
  int64_t attr_int(std::string_view name) const { return std::get<int64_t>(attr(name)); }
  double attr_float(std::string_view name) const { return std::get<double>(attr(name)); }
  const std::string& attr_str(std::string_view name) const { return std::get<std::string>(attr(name)); }
  const std::vector<int64_t>& attr_ints(std::string_view name) const {
    return std::get<std::vector<int64_t>>(attr(name));
  }
  DType attr_dtype(std::string_view name) const { return std::get<DType>(attr(name)); }
  void set_attr(std::string name, AttrValue value);
  Block& region(size_t i) const { return *regions.at(i); }
};

class Block {
 public:
  std::vector<Value*> args;
  std::vector<std::unique_ptr<Op>> ops;
  Op* parent_op = nullptr;  // null for a function's body

  Block* parent_block() const { return parent_op ? parent_op->parent : nullptr; }
  // True if values defined in `this` are visible in `inner` (same block or an enclosing one).
  bool encloses(const Block* inner) const;
};

// The largest divisibility a specialization records: 16 bytes is the widest access.
inline constexpr int64_t kMaxArgDivisibility = 16;

// Facts about an argument that the specialization key carries. Triton records divisibility
// by 16 only; the powers of two below it let a row of 40 bf16 (80 bytes) or a K of 1000
// still move 16 bytes per access, and a K of 1002 four.
struct ArgFacts {
  bool equals_one = false;  // integer argument == 1: folded to a constant
  // The largest power of two up to kMaxArgDivisibility that divides an integer argument, or
  // that a pointer argument's address is aligned to (in bytes); 1 when nothing is known.
  int64_t divisibility = 1;
  Shape block;  // descriptor argument: its block shape
  bool operator==(const ArgFacts&) const = default;
};

struct Param {
  std::string name;
  Type type;  // a scalar or a pointer
  ArgFacts facts;
};

inline constexpr int kMaxClusterCtas = 8;  // CTAs in a portable thread-block cluster (sm_90)
// Pipeline stages a kernel may ask for: each one is a shared-memory copy of a loop's blocks
// and an unrolled prologue step, so more than this never fits a GPU and only slows the compile.
inline constexpr int kMaxStages = 16;

class Function {
 public:
  std::string name;
  std::vector<Param> params;
  Block body;  // body.args are the parameters, in order
  int num_warps = 4;
  int num_stages = 1;
  // A producer warpgroup feeds the first qualifying pipelined loop by TMA while the num_warps
  // warps consume (codegen/lowering/loop_pipeline.h); sm_90+ only.
  bool warp_specialize = false;
  // With a producer warpgroup and two consumer warpgroups: the consumers take turns issuing
  // their products in that loop (codegen/lowering/warp_specialized_pipeline.cpp).
  bool pingpong = false;
  // The thread-block cluster the kernel is launched in (CTAs per cluster along x, y, z; the
  // constants cluster_x / cluster_y / cluster_z). {1, 1, 1}: no cluster. sm_90+ only.
  std::array<int, 3> cluster{1, 1, 1};
  int cluster_ctas() const { return cluster[0] * cluster[1] * cluster[2]; }
  // Compile-time constants the kernel was traced with, in declaration order (for printing).
  std::vector<std::pair<std::string, int64_t>> constants;

  Value* new_value(Type type, Block* owner, Op* def);
  std::string str() const;  // the stable text form

 private:
  std::vector<std::unique_ptr<Value>> values_;
};

// Walks every op of a block and its nested regions, parents before children.
template <typename F>
void walk(const Block& block, F&& fn) {
  for (auto& op : block.ops) {
    fn(*op);
    for (auto& region : op->regions) walk(*region, fn);
  }
}

}  // namespace tilejit::ir
