// Constants, ids, index ranges and splats, and the shape ops (broadcast, expand_dims,
// reshape, trans), which only relabel registers: a layout transform, no data movement.
#include <llvm/IR/IntrinsicsNVPTX.h>

#include "codegen/lowering/lowering.h"

namespace tilejit::codegen::lowering {

using K = ir::OpKind;

namespace {

llvm::Value* constant_value(Lowering& L, const ir::Op& op) {
  llvm::Type* type = L.llvm_type(op.result()->type.element());
  const ir::AttrValue& v = op.attr("value");
  if (auto* i = std::get_if<int64_t>(&v)) return llvm::ConstantInt::get(type, static_cast<uint64_t>(*i), true);
  return llvm::ConstantFP::get(type, std::get<double>(v));
}

}  // namespace

llvm::Value* Lowering::program_index(bool count, int axis) {
  static constexpr llvm::Intrinsic::ID kIds[2][3] = {
      {llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x, llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y,
       llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z},
      {llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x, llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_y,
       llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_z}};
  return call_intrinsic(kIds[count][axis], {}, {});
}

std::vector<llvm::Value*> Lowering::compute_constant_like(const ir::Op& op, const LinearLayout& layout) {
  std::vector<llvm::Value*> out;
  for (int r = 0; r < layout.num_regs(); ++r) {
    switch (op.kind) {
      case K::constant: out.push_back(constant_value(*this, op)); break;
      case K::splat: out.push_back(scalar(op.operands[0])); break;
      case K::arange: out.push_back(b.CreateAdd(const_i32(op.attr_int("start")), coords(layout, r)[0])); break;
      default: TJ_CHECK(false);
    }
  }
  return out;
}

void Lowering::lower_constant_like(const ir::Op& op) {
  const ir::Value* result = op.result();
  if (op.kind == K::program_id || op.kind == K::num_programs) {
    define_scalar(result, program_index(op.kind == K::num_programs, static_cast<int>(op.attr_int("axis"))));
    return;
  }
  if (result->type.is_scalar()) {
    TJ_CHECK(op.kind == K::constant);
    define_scalar(result, constant_value(*this, op));
    return;
  }
  LinearLayout layout = default_layout(result->type.shape);
  define(result, Regs{layout, compute_constant_like(op, layout)});
}

// A broadcast's result takes the layout of a computed tile an elementwise op combines it
// with (the logits a softmax subtracts its row max from), where the source's threads already
// hold what that layout needs along the broadcast dims (a reduction's result over that
// tile): no data moves, and the elementwise op needs no conversion. That tile may also come
// further on, past elementwise ops of broadcasts: a (rows, 1) scale times a (1, columns) one,
// the product then multiplying a dot's result; its layout is taken even where the source must
// move to reach it (once_per_element), as it would to meet that tile anyway. Else the default
// layout.
LinearLayout Lowering::broadcast_layout(const ir::Op& op, const std::vector<int>& dims) {
  const ir::Value* result = op.result();
  const LinearLayout& source = home(op.operands[0]).layout;
  for (const ir::Op* user : users_[result]) {
    if (!is_elementwise(user->kind)) continue;
    for (const ir::Value* other : user->operands) {
      if (other == result || other->type.shape != result->type.shape || rematerializable(other)) continue;
      auto defined = home_.find(other);
      if (defined == home_.end()) continue;
      if (register_map(source, defined->second.layout.squash(dims))) return defined->second.layout;
    }
  }
  std::optional<LinearLayout> further =
      consumer_layout(result, [&](const ir::Value* x) { return predicted_layout(x, 0); }, 0, true);
  return further.value_or(default_layout(result->type.shape));
}

void Lowering::lower_shape_op(const ir::Op& op) {
  const ir::Value* in = op.operands[0];
  const ir::Value* result = op.result();
  switch (op.kind) {
    case K::broadcast: {
      std::vector<int> dims;
      for (int d = 0; d < result->type.rank(); ++d)
        if (in->type.shape[d] != result->type.shape[d]) dims.push_back(d);
      LinearLayout layout = broadcast_layout(op, dims);
      define(result, Regs{layout, in_layout(in, layout.squash(dims))});
      return;
    }
    case K::expand_dims: {
      const Regs& r = home(in);
      define(result, Regs{r.layout.insert_dim(static_cast<int>(op.attr_int("axis"))), r.values});
      return;
    }
    case K::reshape: {
      const Regs& r = home(in);
      define(result, Regs{r.layout.reshape(result->type.shape), r.values});
      return;
    }
    case K::trans: {
      if (staged_operands.count(in)) return;  // a dot reads the staged tile itself
      const Regs& r = home(in);
      define(result, Regs{r.layout.permute(op.attr_ints("perm")), r.values});
      return;
    }
    default: TJ_CHECK(false);
  }
}

}  // namespace tilejit::codegen::lowering
