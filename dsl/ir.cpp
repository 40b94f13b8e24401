#include "dsl/ir.h"

#include <array>

namespace tilejit::ir {

std::string shape_str(const Shape& shape) {
  std::string out;
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? "x" : "") + std::to_string(shape[i]);
  return out;
}

int64_t Type::numel() const {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::string Type::str() const {
  if (descriptor) return fmt::format("desc<{}{}{}>", shape_str(shape), shape.empty() ? "" : "x", dtype_name(dtype));
  std::string elem = pointer ? fmt::format("ptr<{}>", dtype_name(dtype)) : std::string(dtype_name(dtype));
  if (is_scalar()) return elem;
  return fmt::format("tile<{}x{}>", shape_str(shape), elem);
}

std::string descriptor_block_problem(DType dtype, const Shape& block) {
  if (dtype == DType::i1) return "i1 tensors have no descriptors";
  if (block.size() < 2 || block.size() > kMaxDescriptorRank)
    return fmt::format("the block must have 2 to {} dims, got [{}]", kMaxDescriptorRank, shape_str(block));
  for (size_t i = 0; i + 2 < block.size(); ++i)
    if (block[i] != 1)
      return fmt::format("a block is 1 along every dim but the last two (rows, columns), got [{}]", shape_str(block));
  const int64_t rows = block[block.size() - 2], columns = block.back();
  for (int64_t d : {rows, columns})
    if (d < 1 || d > 256 || (d & (d - 1)))
      return fmt::format("block rows and columns must be powers of two up to 256, got [{}]", shape_str(block));
  if (columns * dtype_storage_bytes(dtype) < 16)
    return fmt::format("a block row must hold at least 16 bytes, got {} {} elements", columns, dtype_name(dtype));
  return {};
}

namespace {
constexpr std::array kOpNames = {
    "constant", "program_id", "num_programs", "arange", "splat", "broadcast", "expand_dims",
    "reshape", "trans", "add", "sub", "mul", "div", "rem", "minimum", "maximum", "and", "or",
    "xor", "shl", "shr", "cmp", "neg", "not", "abs", "exp", "exp2", "log", "log2", "sqrt",
    "rsqrt", "sin", "cos", "tanh", "erf", "rint", "sigmoid", "fma", "select", "cast", "bitcast",
    "addptr", "load", "store", "atomic_add", "atomic_max", "atomic_cas", "desc_load", "desc_store", "reduce", "dot", "for",
    "if", "yield", "wait_after", "once_per_element", "print",
};
static_assert(kOpNames.size() == static_cast<size_t>(OpKind::print) + 1);
}  // namespace

std::string_view op_name(OpKind kind) { return kOpNames[static_cast<size_t>(kind)]; }

bool is_elementwise_unary(OpKind kind) { return kind >= OpKind::neg && kind <= OpKind::sigmoid; }
bool is_elementwise_binary(OpKind kind) { return kind >= OpKind::add && kind <= OpKind::shr; }

bool Op::has_attr(std::string_view name) const {
  for (auto& [key, value] : attrs)
    if (key == name) return true;
  return false;
}

const AttrValue& Op::attr(std::string_view name) const {
  for (auto& [key, value] : attrs)
    if (key == name) return value;
  internal_error(fmt::format("op '{}' has attribute '{}'", op_name(kind), name), __FILE__, __LINE__);
}

void Op::set_attr(std::string name, AttrValue value) {
  for (auto& [key, v] : attrs)
    if (key == name) {
      v = std::move(value);
      return;
    }
  attrs.emplace_back(std::move(name), std::move(value));
}

bool Block::encloses(const Block* inner) const {
  for (const Block* b = inner; b; b = b->parent_block())
    if (b == this) return true;
  return false;
}

Value* Function::new_value(Type type, Block* owner, Op* def) {
  values_.push_back(std::make_unique<Value>());
  Value* v = values_.back().get();
  v->type = std::move(type);
  v->owner = owner;
  v->def = def;
  return v;
}

}  // namespace tilejit::ir
