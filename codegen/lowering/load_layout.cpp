// The layout a tile loaded from global memory by pointers takes.
//
// A wgmma B operand read only transposed takes its own (transposed_b_load_layout). A tile that
// an elementwise op combines with a computed tile (a bias added to the logits, a mask selecting
// from them, a residual added to an accumulator), directly or through other elementwise ops,
// expand_dims and broadcasts (a row statistic subtracted from the logits), takes that tile's
// layout (for a broadcast's source, the part of it each thread needs). Its addresses and mask
// are recomputed in any layout at no cost, whereas a tile in the blocked layout costs a trip
// through shared memory and two barriers to meet the other (each iteration, inside a loop),
// or moves the op's result out of the computed tile's layout. The accesses are narrower (an
// accumulator layout holds two consecutive elements per thread: four lanes read 32 bytes of
// an f32 row), the rest of each sector coming from L1 at the thread's next access. A vector
// broadcast into a dot operand (or loaded through broadcast pointers), such as a scale in one
// row or column of a tile the tensor cores multiply, takes the layout the dot reads that
// operand in: each thread loads what its fragment registers hold. Other tiles take the
// blocked layout, whose accesses are 16 bytes wide.
#include <algorithm>

#include "codegen/lowering/lowering.h"

namespace tilejit::codegen::lowering {

namespace {

constexpr int kMaxDepth = 16;  // ops followed from the load through its users

// `layout` without the register bits that repeat data (zero bases): what a tile broadcast or
// expanded into `layout` is held in, one register per element a thread needs.
LinearLayout compact(LinearLayout layout) {
  std::erase_if(layout.reg, [](const Coord& basis) {
    return std::all_of(basis.begin(), basis.end(), [](int64_t x) { return x == 0; });
  });
  return layout;
}

// The loop body's argument that `v` becomes where `user` carries it into a for loop's
// iterations (as the loop's initial value, or yielded by its body), else null.
const ir::Value* carried_as(const ir::Op& user, const ir::Value* v) {
  const bool initial = user.kind == ir::OpKind::for_loop;
  const ir::Op* loop = initial ? &user : user.kind == ir::OpKind::yield ? user.parent->parent_op : nullptr;
  if (!loop || loop->kind != ir::OpKind::for_loop) return nullptr;
  const size_t first = initial ? 3 : 0;  // a for loop's operands: lb, ub, step, then the initial values
  for (size_t i = first; i < user.operands.size(); ++i)
    if (user.operands[i] == v) return loop->region(0).args[1 + i - first];
  return nullptr;
}

}  // namespace

std::optional<LinearLayout> Lowering::dot_operand_layout(const ir::Op& op, const ir::Value* v) const {
  const bool a = op.operands[0] == v;
  if (std::optional<WgmmaTiling> tiling = wgmma_dot_tiling(op))
    return a && tiling->instr.a_in_registers() ? tiling->a : default_layout(v->type.shape);
  if (std::optional<MmaTiling> tiling = dot_tiling(op)) return a ? tiling->a : tiling->b;
  return std::nullopt;
}

std::optional<LinearLayout> Lowering::consumer_layout(const ir::Value* v, const LayoutOf& layout_of, int depth,
                                                      bool broadcast_seen) const {
  auto users = users_.find(v);
  if (users == users_.end() || depth > kMaxDepth) return std::nullopt;
  for (const ir::Op* user : users->second) {
    const ir::Value* result = user->results.empty() ? nullptr : user->result();
    std::optional<LinearLayout> layout;
    if (user->kind == ir::OpKind::expand_dims) {
      if ((layout = consumer_layout(result, layout_of, depth + 1, broadcast_seen)))
        return compact(layout->remove_dim(static_cast<int>(user->attr_int("axis"))));
    } else if (user->kind == ir::OpKind::broadcast) {
      std::vector<int> dims;
      for (int d = 0; d < result->type.rank(); ++d)
        if (v->type.shape[d] != result->type.shape[d]) dims.push_back(d);
      if ((layout = consumer_layout(result, layout_of, depth + 1, true))) return compact(layout->squash(dims));
    } else if (is_elementwise(user->kind) && result->type.shape == v->type.shape) {
      for (const ir::Value* other : user->operands) {
        // A sibling load not lowered yet is no anchor: it follows the same users to the same
        // layout (asked for its own, it would answer the blocked one).
        bool sibling_load = other->def && other->def->kind == ir::OpKind::load && !home_.count(other);
        if (other != v && other->type.shape == v->type.shape && !rematerializable(other) && !sibling_load)
          if ((layout = layout_of(other))) return layout;
      }
      if ((layout = consumer_layout(result, layout_of, depth + 1, broadcast_seen))) return layout;
    } else if (const ir::Value* arg = carried_as(*user, v)) {
      // Carried into a loop's iterations (a load issued one iteration ahead): its users there.
      if ((layout = consumer_layout(arg, layout_of, depth + 1, broadcast_seen))) return layout;
    } else if (user->kind == ir::OpKind::dot && broadcast_seen && user->operands[2] != v) {
      // A vector broadcast into an operand (a factor's rows or columns): its threads load
      // what the operand's threads hold, instead of moving it through shared memory.
      if ((layout = dot_operand_layout(*user, v))) return layout;
    }
  }
  return std::nullopt;
}

LinearLayout Lowering::load_layout(const ir::Op& load, const LayoutOf& layout_of) const {
  const ir::Value* v = load.result();
  if (std::optional<LinearLayout> transposed = transposed_b_load_layout(v)) return *transposed;
  bool addresses_recomputed = std::all_of(load.operands.begin(), load.operands.end(), [&](const ir::Value* x) {
    return x->type.is_scalar() || rematerializable(x);
  });
  // Pointers broadcast along a dim read each value several times, as a broadcast would hand
  // it out: such a tile may take a dot operand's layout as well.
  const ir::Op* pointers = load.operands[0]->def;
  const bool broadcast_pointers = pointers && pointers->kind == ir::OpKind::broadcast;
  if (addresses_recomputed)
    if (std::optional<LinearLayout> layout = consumer_layout(v, layout_of, 0, broadcast_pointers)) return *layout;
  return default_layout(v->type.shape);
}

}  // namespace tilejit::codegen::lowering
