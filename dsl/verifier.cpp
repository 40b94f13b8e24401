#include "dsl/verifier.h"

namespace tilejit::ir {
namespace {

class Verifier {
 public:
  explicit Verifier(const Function& fn) : fn_(fn) {}

  void run() {
    if (fn_.body.args.size() != fn_.params.size()) fail_fn("body arguments do not match the parameters");
    for (size_t i = 0; i < fn_.params.size(); ++i) {
      if (fn_.params[i].type.is_tile()) fail_fn("parameter " + fn_.params[i].name + " is a tile");
      if (fn_.body.args[i]->type != fn_.params[i].type) fail_fn("parameter " + fn_.params[i].name + " type mismatch");
    }
    block(fn_.body, {});
  }

 private:
  [[noreturn]] void fail_fn(const std::string& message) {
    fail("tilejit IR verifier: kernel {}: {}\n{}", fn_.name, message, fn_.str());
  }
  [[noreturn]] void bad(const Op& op, const std::string& message) {
    fail("tilejit IR verifier: {} at {}: {}\n{}", op_name(op.kind), op.loc.str(), message, fn_.str());
  }

  void expect(bool ok, const Op& op, const char* what) {
    if (!ok) bad(op, what);
  }

  void counts(const Op& op, size_t min_operands, size_t max_operands, size_t results) {
    expect(op.operands.size() >= min_operands && op.operands.size() <= max_operands, op, "wrong operand count");
    expect(op.results.size() == results, op, "wrong result count");
  }

  void same_types(const Op& op) {
    for (auto* v : op.operands) expect(v->type == op.results[0]->type, op, "operand and result types differ");
  }

  void block(const Block& b, const std::vector<Type>& yield_types) {
    for (size_t i = 0; i < b.ops.size(); ++i) {
      const Op& op = *b.ops[i];
      expect(op.parent == &b, op, "op's parent is not its block");
      for (auto* v : op.operands) expect(v->owner && v->owner->encloses(&b), op, "operand is not visible here");
      for (auto* r : op.results) expect(r->def == &op && r->owner == &b, op, "result's definition is inconsistent");
      bool last = i + 1 == b.ops.size();
      if (op.kind == OpKind::yield) {
        expect(last && b.parent_op, op, "yield must end a region");
        std::vector<Type> types;
        for (auto* v : op.operands) types.push_back(v->type);
        expect(types == yield_types, op, "yielded types differ from the region's result types");
      }
      check(op);
    }
    if (b.parent_op) expect(!b.ops.empty() && b.ops.back()->kind == OpKind::yield, *b.parent_op, "region without yield");
  }

  void check(const Op& op) {
    auto result = [&](size_t i = 0) -> const Type& { return op.results.at(i)->type; };
    auto operand = [&](size_t i) -> const Type& { return op.operands.at(i)->type; };
    switch (op.kind) {
      case OpKind::constant:
        counts(op, 0, 0, 1);
        expect(op.has_attr("value"), op, "constant without value");
        break;
      case OpKind::program_id:
      case OpKind::num_programs:
        counts(op, 0, 0, 1);
        expect(result() == Type::scalar(DType::i32), op, "result must be i32");
        break;
      case OpKind::arange:
        counts(op, 0, 0, 1);
        expect(result().rank() == 1 && result().shape[0] == op.attr_int("end") - op.attr_int("start"), op,
               "arange length");
        break;
      case OpKind::splat:
        counts(op, 1, 1, 1);
        expect(operand(0).is_scalar() && result().element() == operand(0), op, "splat of a non-scalar");
        break;
      case OpKind::broadcast: {
        counts(op, 1, 1, 1);
        expect(operand(0).rank() == result().rank() && operand(0).element() == result().element(), op, "rank");
        for (int i = 0; i < result().rank(); ++i)
          expect(operand(0).shape[i] == result().shape[i] || operand(0).shape[i] == 1, op, "broadcast dims");
        break;
      }
      case OpKind::expand_dims:
      case OpKind::reshape:
      case OpKind::trans:
        counts(op, 1, 1, 1);
        expect(operand(0).numel() == result().numel() && operand(0).element() == result().element(), op,
               "element count or type changes");
        break;
      case OpKind::cmp:
        counts(op, 2, 2, 1);
        expect(operand(0) == operand(1) && result() == operand(0).with_dtype(DType::i1), op, "cmp types");
        break;
      case OpKind::fma:
        counts(op, 3, 3, 1);
        same_types(op);
        break;
      case OpKind::select:
        counts(op, 3, 3, 1);
        // The values may be pointers; the condition never is.
        expect(operand(0) == Type{DType::i1, false, result().shape} && operand(1) == result() && operand(2) == result(),
               op, "select types");
        break;
      case OpKind::cast:
      case OpKind::bitcast:
        counts(op, 1, 1, 1);
        expect(operand(0).shape == result().shape && result().dtype == op.attr_dtype("to"), op, "cast types");
        break;
      case OpKind::addptr:
        counts(op, 2, 2, 1);
        expect(operand(0) == result() && result().pointer && operand(1).shape == result().shape, op, "addptr types");
        break;
      case OpKind::load:
        counts(op, 1, 3, 1);
        expect(operand(0).pointer && result() == Type{operand(0).dtype, false, operand(0).shape}, op, "load types");
        if (op.operands.size() > 1) expect(operand(1) == result().with_dtype(DType::i1), op, "load mask type");
        if (op.operands.size() > 2) expect(operand(2) == result(), op, "load other type");
        break;
      case OpKind::desc_load:
      case OpKind::desc_store: {
        bool load = op.kind == OpKind::desc_load;
        // The descriptor, an i32 offset per dim of its tensor, and for a store the block.
        size_t offsets = op.operands.empty() ? 0 : operand(0).shape.size();
        size_t operands = 1 + offsets + (load ? 0 : 1);
        counts(op, operands, operands, load ? 1 : 0);
        expect(operand(0).descriptor && descriptor_block_problem(operand(0).dtype, operand(0).shape).empty(), op,
               "descriptor type");
        for (size_t i = 1; i <= offsets; ++i)
          expect(operand(i) == Type::scalar(DType::i32), op, "descriptor offsets must be i32 scalars");
        Type block{operand(0).dtype, false, operand(0).block_tile()};
        expect(load ? result() == block : operand(operands - 1) == block, op, "descriptor block type");
        if (op.has_attr("cluster_axis"))
          expect(load && op.attr_int("cluster_axis") >= 0 && op.attr_int("cluster_axis") <= 2, op, "cluster axis");
        break;
      }
      case OpKind::store:
        counts(op, 2, 3, 0);
        expect(operand(0).pointer && operand(1) == Type{operand(0).dtype, false, operand(0).shape}, op, "store types");
        if (op.operands.size() > 2) expect(operand(2) == operand(1).with_dtype(DType::i1), op, "store mask type");
        break;
      case OpKind::atomic_add:
      case OpKind::atomic_max:
      case OpKind::atomic_cas:
        counts(op, 2, 3, 1);
        expect(operand(0).pointer && operand(1) == result() && result() == Type{operand(0).dtype, false, operand(0).shape},
               op, "atomic types");
        break;
      case OpKind::reduce:
        counts(op, 1, 1, 1);
        expect(result().rank() + 1 == operand(0).rank(), op, "reduce rank");
        break;
      case OpKind::dot:
        counts(op, 3, 3, 1);
        expect(operand(0).rank() == 2 && operand(1).rank() == 2 && operand(2) == result() &&
                   operand(0).shape[1] == operand(1).shape[0] && result().shape[0] == operand(0).shape[0] &&
                   result().shape[1] == operand(1).shape[1],
               op, "dot shapes");
        break;
      case OpKind::for_loop: {
        expect(op.operands.size() >= 3 && op.regions.size() == 1, op, "for structure");
        const Block& body = op.region(0);
        expect(body.args.size() == op.operands.size() - 2 && op.results.size() == op.operands.size() - 3, op,
               "for arguments");
        std::vector<Type> carried;
        for (size_t i = 3; i < op.operands.size(); ++i) {
          carried.push_back(operand(i));
          expect(body.args[i - 2]->type == operand(i) && result(i - 3) == operand(i), op, "carried types");
        }
        for (size_t i = 0; i < 3; ++i) expect(operand(i) == body.args[0]->type, op, "bound types");
        block(body, carried);
        break;
      }
      case OpKind::if_else: {
        expect(op.operands.size() == 1 && op.regions.size() == 2 && operand(0) == Type::scalar(DType::i1), op,
               "if structure");
        std::vector<Type> types;
        for (auto* r : op.results) types.push_back(r->type);
        block(op.region(0), types);
        block(op.region(1), types);
        break;
      }
      case OpKind::wait_after:
        counts(op, 2, 2, 1);
        expect(operand(0) == result() && !operand(0).pointer && !operand(1).pointer, op, "wait_after types");
        break;
      case OpKind::once_per_element:
        counts(op, 1, 1, 1);
        expect(operand(0) == result() && !operand(0).pointer, op, "once_per_element types");
        break;
      case OpKind::yield:
      case OpKind::print:
        expect(op.results.empty(), op, "has results");
        break;
      default:
        if (is_elementwise_unary(op.kind)) {
          counts(op, 1, 1, 1);
          same_types(op);
        } else if (is_elementwise_binary(op.kind)) {
          counts(op, 2, 2, 1);
          same_types(op);
        } else {
          bad(op, "unknown op kind");
        }
    }
    if (op.kind != OpKind::for_loop && op.kind != OpKind::if_else) expect(op.regions.empty(), op, "unexpected region");
  }

  const Function& fn_;
};

}  // namespace

void verify(const Function& fn) { Verifier(fn).run(); }

}  // namespace tilejit::ir
