#include "dsl/trace.h"

#include <atomic>

namespace tilejit::dsl::detail {
namespace {
thread_local TraceState* g_current = nullptr;
}  // namespace

uint64_t new_trace_serial() {
  static std::atomic<uint64_t> count{0};
  return ++count;
}

uint64_t current_trace_serial() { return g_current ? g_current->serial : 0; }

TraceState& current_trace(std::string_view op, const SourceLoc& loc) {
  if (!g_current) user_error(op, loc, "DSL ops can only be used while a kernel is being traced");
  return *g_current;
}

TraceGuard::TraceGuard(TraceState& state) : previous_(g_current) { g_current = &state; }
TraceGuard::~TraceGuard() { g_current = previous_; }

ir::Op& append_op(ir::OpKind kind, std::vector<ir::Value*> operands, std::vector<ir::Type> result_types,
                  const SourceLoc& loc) {
  TraceState& trace = current_trace(ir::op_name(kind), loc);
  for (ir::Value* v : operands) {
    if (v->type.descriptor && kind != ir::OpKind::desc_load && kind != ir::OpKind::desc_store)
      user_error(ir::op_name(kind), loc, "a tensor descriptor ({}) can only be used by desc_load and desc_store",
                 v->type.str());
    if (!v->owner->encloses(trace.block))
      user_error(ir::op_name(kind), loc,
                 "operand of type {} is used outside the loop or branch that defines it; "
                 "return it from the loop body (or branch) instead",
                 v->type.str());
  }
  auto op = std::make_unique<ir::Op>();
  op->kind = kind;
  op->operands = std::move(operands);
  op->parent = trace.block;
  op->loc = loc;
  for (auto& type : result_types)
    op->results.push_back(trace.function->new_value(std::move(type), trace.block, op.get()));
  trace.block->ops.push_back(std::move(op));
  return *trace.block->ops.back();
}

}  // namespace tilejit::dsl::detail
