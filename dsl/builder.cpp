// Op builders of the DSL: operand checking, literal materialisation, numpy broadcasting.
#include "dsl/builder.h"

#include <algorithm>
#include <cmath>

#include "dsl/trace.h"

namespace tilejit::dsl {

using detail::append_op;
using detail::user_error;
using ir::OpKind;

namespace {

SourceLoc at(const Loc& loc) { return SourceLoc::from(loc); }
bool is_pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

constexpr int64_t kMaxTileElements = int64_t{1} << 20;

void check_shape(const Shape& shape, std::string_view op, const SourceLoc& loc) {
  int64_t n = 1;
  bool wrapped = false;  // large powers of two can wrap the product around
  for (int64_t d : shape) {
    if (!is_pow2(d)) user_error(op, loc, "tile dims must be powers of two, got shape {}", ir::shape_str(shape));
    wrapped = wrapped || __builtin_mul_overflow(n, d, &n);
  }
  if (wrapped)
    user_error(op, loc, "tile of shape {} has more than 2^63 elements (at most {})", ir::shape_str(shape),
               kMaxTileElements);
  if (n > kMaxTileElements)
    user_error(op, loc, "tile of shape {} has {} elements (at most {})", ir::shape_str(shape), n, kMaxTileElements);
}

Tile emit(OpKind kind, std::vector<ir::Value*> operands, ir::Type type, const SourceLoc& loc,
          std::vector<std::pair<std::string, ir::AttrValue>> attrs = {}) {
  ir::Op& op = append_op(kind, std::move(operands), {std::move(type)}, loc);
  op.attrs = std::move(attrs);
  return Tile(op.result());
}

// An integer literal must be a value of its operand's dtype, or for a bitwise op (and i1) a bit
// pattern of its width (0xff with an i8 is its -1); one that does not fit would be cut silently.
void check_integer_literal(int64_t v, DType d, std::string_view op, const SourceLoc& loc) {
  const int bits = dtype_bits(d);
  if (bits >= 64) return;
  const bool bit_pattern = d == DType::i1 || op == "and" || op == "or" || op == "xor";
  const int64_t lowest = -(int64_t{1} << (bits - 1)), highest = (int64_t{1} << (bit_pattern ? bits : bits - 1)) - 1;
  if (v < lowest || v > highest)
    user_error(op, loc, "integer literal {} does not fit dtype {} ({} to {}); cast explicitly", v, dtype_name(d),
               lowest, highest);
}

Tile constant(const std::variant<Tile, int64_t, double>& literal, ir::Type type, std::string_view op,
              const SourceLoc& loc) {
  DType d = type.dtype;
  if (type.pointer) user_error(op, loc, "a number cannot stand for a pointer");
  if (!is_arithmetic(d))  // as in full(): the lowering has no fp8 / e8m0 constants
    user_error(op, loc, "a number cannot stand for a value of dtype {} (fp8 / e8m0 have no constants); cast from f32",
               dtype_name(d));
  if (auto* i = std::get_if<int64_t>(&literal)) {
    if (is_integer(d)) {
      check_integer_literal(*i, d, op, loc);
      return emit(OpKind::constant, {}, type, loc, {{"value", *i}});
    }
    return emit(OpKind::constant, {}, type, loc, {{"value", static_cast<double>(*i)}});
  }
  double v = std::get<double>(literal);
  if (is_integer(d))
    user_error(op, loc, "floating-point literal {} used with an integer operand of dtype {}; cast explicitly", v,
               dtype_name(d));
  return emit(OpKind::constant, {}, type, loc, {{"value", v}});
}

Shape broadcast_shape(const Shape& a, const Shape& b, std::string_view op, const SourceLoc& loc) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      user_error(op, loc, "cannot broadcast shapes [{}] and [{}]", ir::shape_str(a), ir::shape_str(b));
    out[i] = std::max(da, db);
  }
  check_shape(out, op, loc);  // broadcasting may not build a tile larger than full() could
  return out;
}

Tile broadcast_value(const Tile& x, const Shape& shape, std::string_view op, const SourceLoc& loc) {
  if (x.shape() == shape) return x;
  if (x.type().is_scalar()) return emit(OpKind::splat, {x.value()}, x.type().with_shape(shape), loc);
  Shape padded = x.shape();
  if (padded.size() > shape.size())
    user_error(op, loc, "cannot broadcast shape [{}] to [{}]", ir::shape_str(x.shape()), ir::shape_str(shape));
  // Missing leading dims come as expand_dims, which the analyses and layouts follow (a reshape
  // would hide the offsets' runs: `rows * stride + cols` would lose its vector accesses).
  Tile t = x;
  while (padded.size() < shape.size()) {
    padded.insert(padded.begin(), 1);
    t = emit(OpKind::expand_dims, {t.value()}, t.type().with_shape(padded), loc, {{"axis", int64_t{0}}});
  }
  broadcast_shape(padded, shape, op, loc);  // checks compatibility
  for (size_t i = 0; i < shape.size(); ++i)
    if (padded[i] != shape[i] && padded[i] != 1)
      user_error(op, loc, "cannot broadcast shape [{}] to [{}]", ir::shape_str(x.shape()), ir::shape_str(shape));
  return emit(OpKind::broadcast, {t.value()}, t.type().with_shape(shape), loc);
}

// Brings operands to one shape, and (unless the operand is a pointer) to the element type
// of the tiles among them. Literals take that element type.
std::vector<Tile> unify(std::string_view op, std::initializer_list<const Operand*> operands, const SourceLoc& loc) {
  const Tile* first = nullptr;
  Shape shape;
  for (const Operand* o : operands) {
    if (!o->is_tile()) continue;
    const Tile& t = o->tile();
    if (!first) first = &t;
    else if (t.dtype() != first->dtype() || t.is_pointer() != first->is_pointer())
      user_error(op, loc, "operand dtypes differ: {} and {}; cast one explicitly", first->type().str(), t.type().str());
    shape = broadcast_shape(shape, t.shape(), op, loc);
  }
  if (!first) user_error(op, loc, "cannot infer a dtype: at least one operand must be a tile");
  std::vector<Tile> out;
  for (const Operand* o : operands) {
    Tile t = o->is_tile() ? o->tile() : constant(o->value(), first->type().element(), op, loc);
    out.push_back(broadcast_value(t, shape, op, loc));
  }
  return out;
}

void require(bool ok, std::string_view op, const SourceLoc& loc, std::string_view what, const Tile& t) {
  if (!ok) user_error(op, loc, "expects {}, got {}", what, t.type().str());
}

bool arithmetic_value(const Tile& t) { return !t.is_pointer() && is_arithmetic(t.dtype()); }
bool float_value(const Tile& t) {
  return !t.is_pointer() && (t.dtype() == DType::f32 || t.dtype() == DType::f16 || t.dtype() == DType::bf16);
}
bool integer_value(const Tile& t) { return !t.is_pointer() && is_integer(t.dtype()); }

Tile pointer_add(const Operand& a, const Operand& b, const SourceLoc& loc) {
  const Operand& ptr = a.is_tile() && a.tile().is_pointer() ? a : b;
  const Operand& off = &ptr == &a ? b : a;
  if (off.is_tile() && off.tile().is_pointer()) user_error("addptr", loc, "cannot add two pointers");
  // A literal offset is i32 unless it needs 64 bits.
  const int64_t* literal = off.is_tile() ? nullptr : std::get_if<int64_t>(&off.value());
  const bool wide = literal && (*literal < INT32_MIN || *literal > INT32_MAX);
  Tile offset = off.is_tile() ? off.tile()
                              : constant(off.value(), ir::Type::scalar(wide ? DType::i64 : DType::i32), "addptr", loc);
  if (offset.dtype() != DType::i32 && offset.dtype() != DType::i64)
    user_error("addptr", loc, "pointer offsets must be i32 or i64, got {}", offset.type().str());
  const Tile& p = ptr.tile();
  Shape shape = broadcast_shape(p.shape(), offset.shape(), "addptr", loc);
  return emit(OpKind::addptr, {broadcast_value(p, shape, "addptr", loc).value(),
                               broadcast_value(offset, shape, "addptr", loc).value()},
              p.type().with_shape(shape), loc);
}

enum class Domain { arithmetic, integer, boolean, shift };

Tile binary(OpKind kind, const Operand& a, const Operand& b, Domain domain) {
  SourceLoc loc = at(a.loc());
  std::string_view op = ir::op_name(kind);
  if (kind == OpKind::add && ((a.is_tile() && a.tile().is_pointer()) || (b.is_tile() && b.tile().is_pointer())))
    return pointer_add(a, b, loc);
  auto t = unify(op, {&a, &b}, loc);
  switch (domain) {
    case Domain::arithmetic:
      require(arithmetic_value(t[0]) && t[0].dtype() != DType::i1, op, loc,
              "integer or f16/bf16/f32 operands (cast fp8 / e8m0 first)", t[0]);
      break;
    case Domain::integer: require(integer_value(t[0]), op, loc, "integer or i1 operands", t[0]); break;
    case Domain::boolean: require(!t[0].is_pointer() && t[0].dtype() == DType::i1, op, loc, "i1 operands", t[0]); break;
    case Domain::shift:
      require(integer_value(t[0]) && t[0].dtype() != DType::i1, op, loc, "integer operands", t[0]);
      break;
  }
  return emit(kind, {t[0].value(), t[1].value()}, t[0].type(), loc);
}

Tile compare(const char* predicate, const Operand& a, const Operand& b) {
  SourceLoc loc = at(a.loc());
  auto t = unify("cmp", {&a, &b}, loc);
  bool equality = std::string_view(predicate) == "eq" || std::string_view(predicate) == "ne";
  require(arithmetic_value(t[0]) && (equality || t[0].dtype() != DType::i1), "cmp", loc,
          "integer or f16/bf16/f32 operands", t[0]);
  return emit(OpKind::cmp, {t[0].value(), t[1].value()}, t[0].type().with_dtype(DType::i1), loc,
              {{"predicate", std::string(predicate)}});
}

Tile unary_math(OpKind kind, const Tile& x, const Loc& l) {
  SourceLoc loc = at(l);
  require(float_value(x), ir::op_name(kind), loc, "an f16, bf16 or f32 operand", x);
  return emit(kind, {x.value()}, x.type(), loc);
}

Tile reduce(const char* kind, const Tile& x, int axis, bool keepdims, const Loc& l) {
  SourceLoc loc = at(l);
  std::string op = fmt::format("reduce({})", kind);
  if (x.type().is_scalar()) user_error(op, loc, "expects a tile, got scalar {}", x.type().str());
  int rank = x.rank();
  if (axis < -rank || axis >= rank) user_error(op, loc, "axis {} is out of range for shape [{}]", axis, ir::shape_str(x.shape()));
  if (axis < 0) axis += rank;
  bool arg = kind[0] == 'a';
  require(arithmetic_value(x) && (x.dtype() != DType::i1 || std::string_view(kind) != "sum"), op, loc,
          "an integer or f16/bf16/f32 tile", x);
  Shape shape = x.shape();
  shape.erase(shape.begin() + axis);
  ir::Type type = x.type().with_shape(shape);
  if (arg) type.dtype = DType::i32;
  Tile r = emit(OpKind::reduce, {x.value()}, type, loc, {{"kind", std::string(kind)}, {"axis", int64_t{axis}}});
  return keepdims ? expand_dims(r, axis, l) : r;
}

// Runs `body` with new ops going into `block`.
template <typename F>
auto inside(ir::Block* block, const SourceLoc& loc, F&& body) {
  detail::TraceState& trace = detail::current_trace("region", loc);
  ir::Block* saved = trace.block;
  trace.block = block;
  struct Restore {
    detail::TraceState& t;
    ir::Block* b;
    ~Restore() { t.block = b; }
  } restore{trace, saved};
  return body();
}

std::vector<ir::Type> types_of(const std::vector<Tile>& tiles) {
  std::vector<ir::Type> types;
  for (auto& t : tiles) types.push_back(t.type());
  return types;
}

std::string types_str(const std::vector<ir::Type>& types) {
  std::vector<std::string> s;
  for (auto& t : types) s.push_back(t.str());
  return fmt::format("({})", fmt::join(s, ", "));
}

void emit_yield(const std::vector<Tile>& values, const SourceLoc& loc) {
  std::vector<ir::Value*> operands;
  for (auto& v : values) operands.push_back(v.value());
  append_op(OpKind::yield, std::move(operands), {}, loc);
}

ir::Block* new_region(ir::Op& op) {
  op.regions.push_back(std::make_unique<ir::Block>());
  op.regions.back()->parent_op = &op;
  return op.regions.back().get();
}

Tile memory_pointer(const Tile& ptr, std::string_view op, const SourceLoc& loc) {
  if (!ptr.is_pointer()) user_error(op, loc, "expects a pointer or a tile of pointers, got {}", ptr.type().str());
  return ptr;
}

Tile mask_value(const Tile& mask, std::string_view op, const SourceLoc& loc) {
  if (mask.is_pointer() || mask.dtype() != DType::i1) user_error(op, loc, "mask must be i1, got {}", mask.type().str());
  return mask;
}

// Pointer, value operands and mask brought to one shape; the value takes the pointee dtype.
std::vector<Tile> memory_operands(std::string_view op, const Tile& ptr, std::vector<const Operand*> values,
                                  const Tile* mask, const SourceLoc& loc) {
  memory_pointer(ptr, op, loc);
  Shape shape = ptr.shape();
  std::vector<Tile> vs;
  for (const Operand* v : values) {
    Tile t = v->is_tile() ? v->tile() : constant(v->value(), ir::Type::scalar(ptr.dtype()), op, loc);
    if (t.is_pointer() || t.dtype() != ptr.dtype())
      user_error(op, loc, "value of type {} does not match pointer type {}; cast the value first", t.type().str(),
                 ptr.type().str());
    shape = broadcast_shape(shape, t.shape(), op, loc);
    vs.push_back(t);
  }
  if (mask) shape = broadcast_shape(shape, mask_value(*mask, op, loc).shape(), op, loc);
  std::vector<Tile> out{broadcast_value(ptr, shape, op, loc)};
  for (auto& v : vs) out.push_back(broadcast_value(v, shape, op, loc));
  if (mask) out.push_back(broadcast_value(*mask, shape, op, loc));
  return out;
}

Tile atomic(OpKind kind, const Tile& ptr, const Operand& value, const Tile* mask, const Loc& l) {
  SourceLoc loc = at(l);
  std::string_view op = ir::op_name(kind);
  auto t = memory_operands(op, ptr, {&value}, mask, loc);
  DType d = ptr.dtype();
  bool ok = kind == OpKind::atomic_add ? (d == DType::i32 || d == DType::i64 || d == DType::f32 || d == DType::f16)
                                       : (d == DType::i32 || d == DType::i64 || d == DType::f32);
  if (!ok) user_error(op, loc, "is not supported for {}", ptr.type().str());
  std::vector<ir::Value*> operands;
  for (auto& x : t) operands.push_back(x.value());
  return emit(kind, operands, t[1].type(), loc);
}

}  // namespace

// --- ids, constants, index tiles -------------------------------------------------------

Tile program_id(int axis, Loc l) {
  if (axis < 0 || axis > 2) user_error("program_id", at(l), "axis must be 0, 1 or 2, got {}", axis);
  return emit(OpKind::program_id, {}, ir::Type::scalar(DType::i32), at(l), {{"axis", int64_t{axis}}});
}

Tile num_programs(int axis, Loc l) {
  if (axis < 0 || axis > 2) user_error("num_programs", at(l), "axis must be 0, 1 or 2, got {}", axis);
  return emit(OpKind::num_programs, {}, ir::Type::scalar(DType::i32), at(l), {{"axis", int64_t{axis}}});
}

Tile arange(int64_t start, int64_t end, Loc l) {
  if (!is_pow2(end - start))
    user_error("arange", at(l), "length end - start = {} - {} = {} must be a power of two", end, start, end - start);
  if (start < INT32_MIN || end > INT32_MAX) user_error("arange", at(l), "range [{}, {}) does not fit in i32", start, end);
  check_shape({end - start}, "arange", at(l));
  return emit(OpKind::arange, {}, ir::Type{DType::i32, false, {end - start}}, at(l),
              {{"start", start}, {"end", end}});
}

Tile full(const Shape& shape, double value, DType dtype, Loc l) {
  check_shape(shape, "full", at(l));
  ir::Type type{dtype, false, shape};
  if (is_integer(dtype)) {
    if (value != std::trunc(value)) user_error("full", at(l), "value {} is not an integer for dtype {}", value, dtype_name(dtype));
    // [-2^63, 2^63): beyond it the conversion to int64 is undefined (x86 gives INT64_MIN).
    if (!(value >= -0x1p63 && value < 0x1p63))
      user_error("full", at(l), "value {} does not fit dtype {}", value, dtype_name(dtype));
    return constant(static_cast<int64_t>(value), type, "full", at(l));
  }
  if (!is_arithmetic(dtype)) user_error("full", at(l), "dtype {} cannot hold constants; build f32 and cast", dtype_name(dtype));
  return constant(value, type, "full", at(l));
}

Tile zeros(const Shape& shape, DType dtype, Loc l) { return full(shape, 0.0, dtype, l); }
Tile scalar(double value, DType dtype, Loc l) { return full({}, value, dtype, l); }

// --- shapes ----------------------------------------------------------------------------

Tile broadcast_to(const Tile& x, const Shape& shape, Loc l) {
  check_shape(shape, "broadcast_to", at(l));
  return broadcast_value(x, shape, "broadcast_to", at(l));
}

Tile expand_dims(const Tile& x, int axis, Loc l) {
  int rank = x.rank();
  if (axis < -(rank + 1) || axis > rank)
    user_error("expand_dims", at(l), "axis {} is out of range for shape [{}]", axis, ir::shape_str(x.shape()));
  if (axis < 0) axis += rank + 1;
  if (x.type().is_scalar()) return emit(OpKind::splat, {x.value()}, x.type().with_shape({1}), at(l));
  Shape shape = x.shape();
  shape.insert(shape.begin() + axis, 1);
  return emit(OpKind::expand_dims, {x.value()}, x.type().with_shape(shape), at(l), {{"axis", int64_t{axis}}});
}

Tile reshape(const Tile& x, const Shape& shape, Loc l) {
  check_shape(shape, "reshape", at(l));
  ir::Type type = x.type().with_shape(shape);
  if (x.type().is_scalar()) user_error("reshape", at(l), "expects a tile, got scalar {}", x.type().str());
  if (type.numel() != x.type().numel())
    user_error("reshape", at(l), "cannot reshape [{}] ({} elements) to [{}] ({} elements)", ir::shape_str(x.shape()),
               x.type().numel(), ir::shape_str(shape), type.numel());
  if (shape == x.shape()) return x;
  return emit(OpKind::reshape, {x.value()}, type, at(l), {{"shape", shape}});
}

Tile trans(const Tile& x, std::vector<int64_t> perm, Loc l) {
  int rank = x.rank();
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  bool ok = static_cast<int>(perm.size()) == rank;
  for (int i = 0; ok && i < rank; ++i) ok = sorted[i] == i;
  if (!ok)
    user_error("trans", at(l), "permutation [{}] does not match a tile of shape [{}]", fmt::join(perm, ", "),
               ir::shape_str(x.shape()));
  Shape shape(rank);
  for (int i = 0; i < rank; ++i) shape[i] = x.shape()[perm[i]];
  return emit(OpKind::trans, {x.value()}, x.type().with_shape(shape), at(l), {{"perm", perm}});
}

// --- arithmetic, comparisons, logic -----------------------------------------------------

Tile operator+(const Operand& a, const Operand& b) { return binary(OpKind::add, a, b, Domain::arithmetic); }
Tile operator-(const Operand& a, const Operand& b) { return binary(OpKind::sub, a, b, Domain::arithmetic); }
Tile operator*(const Operand& a, const Operand& b) { return binary(OpKind::mul, a, b, Domain::arithmetic); }
Tile operator/(const Operand& a, const Operand& b) { return binary(OpKind::div, a, b, Domain::arithmetic); }
Tile operator%(const Operand& a, const Operand& b) { return binary(OpKind::rem, a, b, Domain::arithmetic); }
Tile operator&(const Operand& a, const Operand& b) { return binary(OpKind::bit_and, a, b, Domain::integer); }
Tile operator|(const Operand& a, const Operand& b) { return binary(OpKind::bit_or, a, b, Domain::integer); }
Tile operator^(const Operand& a, const Operand& b) { return binary(OpKind::bit_xor, a, b, Domain::integer); }
Tile operator<<(const Operand& a, const Operand& b) { return binary(OpKind::shl, a, b, Domain::shift); }
Tile operator>>(const Operand& a, const Operand& b) { return binary(OpKind::shr, a, b, Domain::shift); }
Tile operator&&(const Operand& a, const Operand& b) { return binary(OpKind::bit_and, a, b, Domain::boolean); }
Tile operator||(const Operand& a, const Operand& b) { return binary(OpKind::bit_or, a, b, Domain::boolean); }
Tile operator==(const Operand& a, const Operand& b) { return compare("eq", a, b); }
Tile operator!=(const Operand& a, const Operand& b) { return compare("ne", a, b); }
Tile operator<(const Operand& a, const Operand& b) { return compare("lt", a, b); }
Tile operator<=(const Operand& a, const Operand& b) { return compare("le", a, b); }
Tile operator>(const Operand& a, const Operand& b) { return compare("gt", a, b); }
Tile operator>=(const Operand& a, const Operand& b) { return compare("ge", a, b); }

Tile operator-(const Operand& a) {
  SourceLoc loc = at(a.loc());
  if (!a.is_tile()) user_error("neg", loc, "expects a tile");
  require(arithmetic_value(a.tile()) && a.tile().dtype() != DType::i1, "neg", loc, "an integer or float operand", a.tile());
  return emit(OpKind::neg, {a.tile().value()}, a.tile().type(), loc);
}

Tile operator!(const Operand& a) {
  SourceLoc loc = at(a.loc());
  if (!a.is_tile()) user_error("not", loc, "expects a tile");
  require(!a.tile().is_pointer() && a.tile().dtype() == DType::i1, "not", loc, "an i1 operand", a.tile());
  return emit(OpKind::bit_not, {a.tile().value()}, a.tile().type(), loc);
}

Tile operator~(const Operand& a) {
  SourceLoc loc = at(a.loc());
  if (!a.is_tile()) user_error("not", loc, "expects a tile");
  require(integer_value(a.tile()), "not", loc, "an integer operand", a.tile());
  return emit(OpKind::bit_not, {a.tile().value()}, a.tile().type(), loc);
}

Tile minimum(const Operand& a, const Operand& b, Loc) { return binary(OpKind::minimum, a, b, Domain::arithmetic); }
Tile maximum(const Operand& a, const Operand& b, Loc) { return binary(OpKind::maximum, a, b, Domain::arithmetic); }

Tile where(const Operand& cond, const Operand& a, const Operand& b, Loc l) {
  SourceLoc loc = at(l);
  if (!cond.is_tile()) user_error("select", loc, "condition must be an i1 tile or scalar");
  mask_value(cond.tile(), "select", loc);
  auto values = unify("select", {&a, &b}, loc);
  Shape shape = broadcast_shape(cond.tile().shape(), values[0].shape(), "select", loc);
  Tile c = broadcast_value(cond.tile(), shape, "select", loc);
  Tile x = broadcast_value(values[0], shape, "select", loc);
  Tile y = broadcast_value(values[1], shape, "select", loc);
  return emit(OpKind::select, {c.value(), x.value(), y.value()}, x.type(), loc);
}

Tile cdiv(const Operand& a, const Operand& b, Loc l) {
  // The intermediate tiles are operands created here: give them the caller's location.
  Tile total = a + b;
  if (!is_integer(total.dtype()) || total.is_pointer())
    user_error("cdiv", at(l), "operands must be integers, got {} and {}", a.describe(), b.describe());
  Tile numerator = Operand(total, l) - Operand(1, l);
  return Operand(numerator, l) / b;
}

Tile fma(const Operand& a, const Operand& b, const Operand& c, Loc l) {
  SourceLoc loc = at(l);
  auto t = unify("fma", {&a, &b, &c}, loc);
  require(float_value(t[0]), "fma", loc, "f16, bf16 or f32 operands", t[0]);
  return emit(OpKind::fma, {t[0].value(), t[1].value(), t[2].value()}, t[0].type(), loc);
}

// --- math --------------------------------------------------------------------------------

Tile abs(const Tile& x, Loc l) {
  require(arithmetic_value(x) && x.dtype() != DType::i1, "abs", at(l), "an integer or float operand", x);
  return emit(OpKind::abs, {x.value()}, x.type(), at(l));
}
Tile exp(const Tile& x, Loc l) { return unary_math(OpKind::exp, x, l); }
Tile exp2(const Tile& x, Loc l) { return unary_math(OpKind::exp2, x, l); }
Tile exp2_flushing_subnormals(const Tile& x, Loc l) {
  Tile r = unary_math(OpKind::exp2, x, l);
  r.value()->def->set_attr("flush_subnormals", int64_t{1});
  return r;
}
Tile log(const Tile& x, Loc l) { return unary_math(OpKind::log, x, l); }
Tile log2(const Tile& x, Loc l) { return unary_math(OpKind::log2, x, l); }
Tile sqrt(const Tile& x, Loc l) { return unary_math(OpKind::sqrt, x, l); }
Tile rsqrt(const Tile& x, Loc l) { return unary_math(OpKind::rsqrt, x, l); }
Tile sin(const Tile& x, Loc l) { return unary_math(OpKind::sin, x, l); }
Tile cos(const Tile& x, Loc l) { return unary_math(OpKind::cos, x, l); }
Tile tanh(const Tile& x, Loc l) { return unary_math(OpKind::tanh, x, l); }
Tile erf(const Tile& x, Loc l) { return unary_math(OpKind::erf, x, l); }
Tile rint(const Tile& x, Loc l) { return unary_math(OpKind::rint, x, l); }
Tile sigmoid(const Tile& x, Loc l) { return unary_math(OpKind::sigmoid, x, l); }

// --- conversions -------------------------------------------------------------------------

Tile cast(const Tile& x, DType to, bool saturate, Loc l) {
  if (x.is_pointer()) user_error("cast", at(l), "cannot cast pointer type {}", x.type().str());
  if (x.dtype() == to) return x;
  return emit(OpKind::cast, {x.value()}, x.type().with_dtype(to), at(l),
              {{"to", to}, {"saturate", int64_t{saturate ? 1 : 0}}});
}

Tile bitcast(const Tile& x, DType to, Loc l) {
  if (x.is_pointer() || x.dtype() == DType::i1 || to == DType::i1 || dtype_bits(x.dtype()) != dtype_bits(to))
    user_error("bitcast", at(l), "cannot bitcast {} to {}: bit widths differ or a pointer / i1 is involved",
               x.type().str(), dtype_name(to));
  if (x.dtype() == to) return x;
  return emit(OpKind::bitcast, {x.value()}, x.type().with_dtype(to), at(l), {{"to", to}});
}

// --- memory ------------------------------------------------------------------------------

Tile load(const Tile& ptr, Loc l) {
  memory_pointer(ptr, "load", at(l));
  return emit(OpKind::load, {ptr.value()}, ir::Type{ptr.dtype(), false, ptr.shape()}, at(l));
}

Tile load(const Tile& ptr, const Tile& mask, Loc l) {
  // fp8 / e8m0 have no constants: masked-off lanes read zero bits (a load without `other`).
  if (ptr.is_pointer() && !is_arithmetic(ptr.dtype())) {
    SourceLoc loc = at(l);
    auto t = memory_operands("load", ptr, {}, &mask, loc);
    return emit(OpKind::load, {t[0].value(), t[1].value()}, ir::Type{ptr.dtype(), false, t[0].shape()}, loc);
  }
  return load(ptr, mask, Operand(int64_t{0}, l), l);
}

Tile load(const Tile& ptr, const Tile& mask, const Operand& other, Loc l) {
  SourceLoc loc = at(l);
  auto t = memory_operands("load", ptr, {&other}, &mask, loc);
  ir::Type type = ir::Type{ptr.dtype(), false, t[0].shape()};
  return emit(OpKind::load, {t[0].value(), t[2].value(), t[1].value()}, type, loc);
}

namespace {

// The operands of desc_load / desc_store `op`: the descriptor, then its i32 offsets.
std::vector<ir::Value*> descriptor_operands(const char* op, const Tile& desc, const std::vector<Operand>& offsets,
                                            const SourceLoc& loc) {
  if (!desc.type().descriptor) user_error(op, loc, "expects a tensor descriptor, got {}", desc.type().str());
  if (offsets.size() != desc.shape().size())
    user_error(op, loc, "{} offsets for a descriptor of rank {} ({})", offsets.size(), desc.shape().size(),
               desc.type().str());
  std::vector<ir::Value*> operands{desc.value()};
  for (const Operand& o : offsets) {
    Tile t = o.is_tile() ? o.tile() : constant(o.value(), ir::Type::scalar(DType::i32), op, loc);
    require(t.type() == ir::Type::scalar(DType::i32), op, loc, "i32 scalar offsets", t);
    operands.push_back(t.value());
  }
  return operands;
}

}  // namespace

Tile desc_load(const Tile& desc, const std::vector<Operand>& offsets, Loc l) {
  SourceLoc loc = at(l);
  std::vector<ir::Value*> operands = descriptor_operands("desc_load", desc, offsets, loc);
  return emit(OpKind::desc_load, std::move(operands), ir::Type{desc.dtype(), false, desc.type().block_tile()}, loc);
}

void desc_store(const Tile& desc, const std::vector<Operand>& offsets, const Tile& block, Loc l) {
  SourceLoc loc = at(l);
  std::vector<ir::Value*> operands = descriptor_operands("desc_store", desc, offsets, loc);
  ir::Type wanted{desc.dtype(), false, desc.type().block_tile()};
  if (block.type() != wanted)
    user_error("desc_store", loc, "the block must be a {} (the descriptor's block), got {}", wanted.str(),
               block.type().str());
  operands.push_back(block.value());
  append_op(OpKind::desc_store, std::move(operands), {}, loc);
}

Tile desc_load(const Tile& desc, const std::vector<Operand>& offsets, ClusterShared shared, Loc l) {
  SourceLoc loc = at(l);
  const ir::Function& fn = *detail::current_trace("desc_load", loc).function;
  if (shared.axis < 0 || shared.axis > 2)
    user_error("desc_load", loc, "cluster axis {} is not 0 (x), 1 (y) or 2 (z)", shared.axis);
  Tile block = desc_load(desc, offsets, l);
  int64_t ctas = fn.cluster[static_cast<size_t>(shared.axis)], rows = desc.type().block_tile()[0];
  if (rows % ctas != 0 || (ctas > 1 && (rows / ctas) % 8 != 0))
    user_error("desc_load", loc,
               "a block of {} rows cannot be shared by the cluster's {} CTAs along axis {}: each fetches its share "
               "of the rows, which must be a whole multiple of 8 rows",
               rows, ctas, shared.axis);
  ir::walk(fn.body, [&](const ir::Op& op) {
    if (op.kind == OpKind::desc_load && op.operands[0] == desc.value() && op.has_attr("cluster_axis") &&
        op.attr_int("cluster_axis") != shared.axis)
      user_error("desc_load", loc, "the blocks of one descriptor are shared along one cluster axis: {} here, {} at {}",
                 shared.axis, op.attr_int("cluster_axis"), op.loc.str());
  });
  block.value()->def->set_attr("cluster_axis", int64_t{shared.axis});
  return block;
}

namespace {

// A store's operands, broadcast together: the pointer may gain dims of 1, never elements, which
// would store several values to one address (one of them wins, which one differs between a GPU
// and the emulator).
std::vector<Tile> store_operands(const Tile& ptr, const Operand& value, const Tile* mask, const SourceLoc& loc) {
  auto t = memory_operands("store", ptr, {&value}, mask, loc);
  if (t[0].type().numel() != ptr.type().numel())
    user_error("store", loc,
               "the value ({}){} would broadcast the pointer ({}) to {}, storing several values to one address",
               value.describe(), mask ? fmt::format(" or the mask ({})", mask->type().str()) : "", ptr.type().str(),
               ir::shape_str(t[0].shape()));
  return t;
}

}  // namespace

void store(const Tile& ptr, const Operand& value, Loc l) {
  auto t = store_operands(ptr, value, nullptr, at(l));
  append_op(OpKind::store, {t[0].value(), t[1].value()}, {}, at(l));
}

void store(const Tile& ptr, const Operand& value, const Tile& mask, Loc l) {
  auto t = store_operands(ptr, value, &mask, at(l));
  append_op(OpKind::store, {t[0].value(), t[1].value(), t[2].value()}, {}, at(l));
}

Tile atomic_add(const Tile& ptr, const Operand& value, Loc l) { return atomic(OpKind::atomic_add, ptr, value, nullptr, l); }
Tile atomic_add(const Tile& ptr, const Operand& value, const Tile& mask, Loc l) {
  return atomic(OpKind::atomic_add, ptr, value, &mask, l);
}
Tile atomic_max(const Tile& ptr, const Operand& value, Loc l) { return atomic(OpKind::atomic_max, ptr, value, nullptr, l); }
Tile atomic_max(const Tile& ptr, const Operand& value, const Tile& mask, Loc l) {
  return atomic(OpKind::atomic_max, ptr, value, &mask, l);
}

Tile atomic_cas(const Tile& ptr, const Operand& compare_value, const Operand& value, Loc l) {
  SourceLoc loc = at(l);
  auto t = memory_operands("atomic_cas", ptr, {&compare_value, &value}, nullptr, loc);
  if (ptr.dtype() != DType::i32 && ptr.dtype() != DType::i64)
    user_error("atomic_cas", loc, "is supported for i32 and i64, got {}", ptr.type().str());
  return emit(OpKind::atomic_cas, {t[0].value(), t[1].value(), t[2].value()}, t[1].type(), loc);
}

// --- reductions --------------------------------------------------------------------------

Tile sum(const Tile& x, int axis, bool keepdims, Loc l) { return reduce("sum", x, axis, keepdims, l); }
Tile max(const Tile& x, int axis, bool keepdims, Loc l) { return reduce("max", x, axis, keepdims, l); }
Tile min(const Tile& x, int axis, bool keepdims, Loc l) { return reduce("min", x, axis, keepdims, l); }
Tile argmax(const Tile& x, int axis, bool keepdims, Loc l) { return reduce("argmax", x, axis, keepdims, l); }
Tile argmin(const Tile& x, int axis, bool keepdims, Loc l) { return reduce("argmin", x, axis, keepdims, l); }

// --- matrix product ----------------------------------------------------------------------

Tile dot(const Tile& a, const Tile& b, const Tile& acc, Precision precision, Loc l) {
  SourceLoc loc = at(l);
  if (a.rank() != 2 || b.rank() != 2 || a.is_pointer() || b.is_pointer())
    user_error("dot", loc, "expects 2-D tiles, got {} and {}", a.type().str(), b.type().str());
  if (a.shape()[1] != b.shape()[0])
    user_error("dot", loc, "inner dims differ: a is [{}], b is [{}]", ir::shape_str(a.shape()), ir::shape_str(b.shape()));
  DType da = a.dtype(), db = b.dtype();
  bool ok = (da == db && (da == DType::f16 || da == DType::bf16 || da == DType::f32 || da == DType::i8)) ||
            (is_fp8(da) && is_fp8(db));
  if (!ok)
    user_error("dot", loc, "unsupported operand dtypes {} x {} (f16, bf16, f32, i8 pairs, or any fp8 pairing)",
               dtype_name(da), dtype_name(db));
  DType acc_dtype = da == DType::i8 ? DType::i32 : DType::f32;
  Shape out{a.shape()[0], b.shape()[1]};
  if (acc.is_pointer() || acc.dtype() != acc_dtype || acc.shape() != out)
    user_error("dot", loc, "accumulator must be {} for a [{}] x [{}] product, got {}",
               ir::Type{acc_dtype, false, out}.str(), ir::shape_str(a.shape()), ir::shape_str(b.shape()), acc.type().str());
  static constexpr const char* kPrecision[] = {"tf32", "ieee", "tf32x3"};
  return emit(OpKind::dot, {a.value(), b.value(), acc.value()}, acc.type(), loc,
              {{"precision", std::string(kPrecision[static_cast<int>(precision)])}});
}

Tile dot(const Tile& a, const Tile& b, Loc l) {
  if (a.rank() != 2 || b.rank() != 2)
    user_error("dot", at(l), "expects 2-D tiles, got {} and {}", a.type().str(), b.type().str());
  DType acc = a.dtype() == DType::i8 ? DType::i32 : DType::f32;
  return dot(a, b, zeros({a.shape()[0], b.shape()[1]}, acc, l), Precision::tf32, l);
}

Tile wait_after(const Tile& product, const Tile& ready, Loc l) {
  SourceLoc loc = at(l);
  if (product.is_pointer() || ready.is_pointer())
    user_error("wait_after", loc, "expects a product and a value, got {} and {}", product.type().str(),
               ready.type().str());
  return emit(OpKind::wait_after, {product.value(), ready.value()}, product.type(), loc);
}

Tile once_per_element(const Tile& x, Loc l) {
  SourceLoc loc = at(l);
  if (x.is_pointer()) user_error("once_per_element", loc, "expects a value, got {}", x.type().str());
  return emit(OpKind::once_per_element, {x.value()}, x.type(), loc);
}

// --- control flow ------------------------------------------------------------------------

std::vector<Tile> for_range(const Operand& lb, const Operand& ub, const Operand& step, std::vector<Tile> init,
                            const LoopBody& body, Loc l) {
  SourceLoc loc = at(l);
  for (const Operand* o : {&lb, &ub, &step})
    if (o->is_tile() && (!o->tile().type().is_scalar() || !integer_value(o->tile()) || o->tile().dtype() == DType::i1))
      user_error("for", loc, "bounds and step must be i32 or i64 scalars, got {}", o->tile().type().str());
  // (A floating-point step is reported when it is materialised as a bound below.)
  if (auto* s = std::get_if<int64_t>(&step.value()); s && *s <= 0) user_error("for", loc, "step must be positive");
  DType index = DType::i32;
  for (const Operand* o : {&lb, &ub, &step})
    if (o->is_tile() && o->tile().dtype() == DType::i64) index = DType::i64;
  auto bound = [&](const Operand& o) {
    if (!o.is_tile()) return constant(o.value(), ir::Type::scalar(index), "for", loc).value();
    return o.tile().dtype() == index ? o.tile().value() : cast(o.tile(), index, false, l).value();
  };
  std::vector<ir::Value*> operands{bound(lb), bound(ub), bound(step)};
  for (auto& t : init) operands.push_back(t.value());
  std::vector<ir::Type> carried = types_of(init);
  ir::Op& op = append_op(OpKind::for_loop, operands, carried, loc);
  ir::Block* region = new_region(op);
  detail::TraceState& trace = detail::current_trace("for", loc);
  ir::Value* iv = trace.function->new_value(ir::Type::scalar(index), region, nullptr);
  region->args.push_back(iv);
  std::vector<Tile> args;
  for (auto& type : carried) {
    region->args.push_back(trace.function->new_value(type, region, nullptr));
    args.emplace_back(region->args.back());
  }
  inside(region, loc, [&] {
    std::vector<Tile> next = body(Tile(iv), args);
    if (types_of(next) != carried)
      user_error("for", loc, "loop-carried values change type: enter as {} but the body returns {}",
                 types_str(carried), types_str(types_of(next)));
    emit_yield(next, loc);
  });
  std::vector<Tile> results;
  for (auto* r : op.results) results.emplace_back(r);
  return results;
}

Tile for_range(const Operand& lb, const Operand& ub, const Operand& step, const Tile& init,
               const std::function<Tile(Tile, Tile)>& body, Loc l) {
  return for_range(lb, ub, step, std::vector<Tile>{init},
                   [&](Tile i, std::vector<Tile> c) { return std::vector<Tile>{body(i, c[0])}; }, l)[0];
}

void for_range(const Operand& lb, const Operand& ub, const Operand& step, const std::function<void(Tile)>& body,
               Loc l) {
  for_range(lb, ub, step, std::vector<Tile>{}, [&](Tile i, std::vector<Tile>) {
    body(i);
    return std::vector<Tile>{};
  }, l);
}

std::vector<Tile> if_else(const Tile& cond, const BranchBody& then_body, const BranchBody& else_body, Loc l) {
  SourceLoc loc = at(l);
  if (!cond.type().is_scalar() || cond.is_pointer() || cond.dtype() != DType::i1)
    user_error("if", loc, "condition must be an i1 scalar, got {}", cond.type().str());
  ir::Op& op = append_op(OpKind::if_else, {cond.value()}, {}, loc);
  ir::Block* then_block = new_region(op);
  ir::Block* else_block = new_region(op);
  std::vector<ir::Type> then_types, else_types;
  inside(then_block, loc, [&] {
    auto v = then_body();
    then_types = types_of(v);
    emit_yield(v, loc);
  });
  inside(else_block, loc, [&] {
    auto v = else_body();
    else_types = types_of(v);
    emit_yield(v, loc);
  });
  if (then_types != else_types)
    user_error("if", loc, "branches return different types: {} and {}", types_str(then_types), types_str(else_types));
  detail::TraceState& trace = detail::current_trace("if", loc);
  std::vector<Tile> results;
  for (auto& type : then_types) {
    op.results.push_back(trace.function->new_value(type, op.parent, &op));
    results.emplace_back(op.results.back());
  }
  return results;
}

void if_then(const Tile& cond, const std::function<void()>& then_body, Loc l) {
  if_else(cond, [&] { then_body(); return std::vector<Tile>{}; }, [] { return std::vector<Tile>{}; }, l);
}

// --- debugging ---------------------------------------------------------------------------

void print(const std::string& prefix, const std::vector<Tile>& values, Loc l) {
  std::vector<ir::Value*> operands;
  for (auto& v : values) operands.push_back(v.value());
  ir::Op& op = append_op(OpKind::print, operands, {}, at(l));
  op.set_attr("prefix", prefix);
}

void static_check(bool condition, const std::string& message, Loc l) {
  if (!condition) user_error("static_check", at(l), "{}", message);
}

}  // namespace tilejit::dsl
