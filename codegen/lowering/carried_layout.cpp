// The layouts loops carry values in. A block argument has one layout for every iteration; where
// the body defines the value it yields in another, each iteration converts it, through shared
// memory when threads hold different elements. So a loop carries each value in the layout the
// body will define it in, predicted from the ops that compute it the way their lowerings
// choose: a dot's accumulator layout; a reduction's slice of its input's layout (an online
// softmax's running row max and sum); an elementwise op's first operand that is not recomputed
// and whose layout can be predicted; a load's (codegen/lowering/load_layout.cpp); expand_dims,
// reshape and trans of a predicted layout. (A loop's result is not followed into the loop: an
// outer loop carrying an inner loop's accumulators in their layout, rather than converting them
// at each outer iteration, made ptxas spill in the f32 dk / dv kernel at H = 128 with block
// skipping.)
#include "codegen/lowering/lowering.h"

namespace tilejit::codegen::lowering {

namespace {

constexpr int kMaxDepth = 32;  // ops followed back from the yielded value
constexpr int kLoadDepth = 8;  // the depth a load's users count for

}  // namespace

std::optional<LinearLayout> Lowering::predicted_layout(const ir::Value* v, int depth) const {
  if (auto it = home_.find(v); it != home_.end()) return it->second.layout;  // defined before the loop
  const ir::Op* op = v->def;
  if (!op || depth > kMaxDepth) return std::nullopt;
  auto operand = [&]() { return predicted_layout(op->operands[0], depth + 1); };
  using K = ir::OpKind;
  switch (op->kind) {
    case K::dot: return dot_result_layout(*op);
    case K::reduce:
      if (auto in = operand()) return reduced_layout(*in, static_cast<int>(op->attr_int("axis"))).layout;
      return std::nullopt;
    case K::expand_dims:
      if (auto in = operand()) return in->insert_dim(static_cast<int>(op->attr_int("axis")));
      return std::nullopt;
    case K::reshape:
      if (auto in = operand()) return in->reshape(v->type.shape);
      return std::nullopt;
    case K::trans:
      if (auto in = operand()) return in->permute(op->attr_ints("perm"));
      return std::nullopt;
    case K::wait_after:
    case K::once_per_element: return operand();
    case K::load:
      if (v->type.is_scalar()) return std::nullopt;
      // A load's layout follows its users; each step takes a share of the depth, so that
      // loads reached from loads' users stop soon.
      return load_layout(*op, [&](const ir::Value* x) { return predicted_layout(x, depth + kLoadDepth); });
    default: break;
  }
  if (!is_elementwise(op->kind) || v->type.is_scalar()) return std::nullopt;
  // As lower_elementwise: the layout of the first operand that is computed, not recomputed.
  // The block arguments of the loop being entered have no layout yet: each takes the one
  // predicted for what the body yields for it, so they are passed over, and so is an operand
  // computed from them alone (a running max times a constant): the next operand tells.
  for (const ir::Value* x : op->operands) {
    if (x->type.is_scalar() || rematerializable(x)) continue;
    if (!x->def && !home_.count(x)) continue;
    if (std::optional<LinearLayout> predicted = predicted_layout(x, depth + 1)) return predicted;
  }
  return std::nullopt;
}

LinearLayout Lowering::carried_layout(const ir::Value* yielded) const {
  return predicted_layout(yielded, 0).value_or(default_layout(yielded->type.shape));
}

}  // namespace tilejit::codegen::lowering
