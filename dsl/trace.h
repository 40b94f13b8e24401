// Internal to dsl/: the state of the trace in progress (one per thread) and the helpers the
// op builders share to append ops with checked operands.
#pragma once

#include <cstdint>
#include <string_view>

#include "dsl/tile.h"

namespace tilejit::dsl::detail {

// A new number for each trace of the process, never 0.
uint64_t new_trace_serial();

struct TraceState {
  ir::Function* function = nullptr;
  ir::Block* block = nullptr;  // where new ops go
  uint64_t serial = new_trace_serial();
};

// The trace running on this thread; throws if an op is used outside a kernel trace.
TraceState& current_trace(std::string_view op, const SourceLoc& loc);

// Installs a trace for the lifetime of the guard.
class TraceGuard {
 public:
  explicit TraceGuard(TraceState& state);
  ~TraceGuard();
  TraceGuard(const TraceGuard&) = delete;
  TraceGuard& operator=(const TraceGuard&) = delete;

 private:
  TraceState* previous_;
};

// Appends an op to the current block; checks that every operand is visible there (defined
// in this block or an enclosing one) and creates results of the given types.
ir::Op& append_op(ir::OpKind kind, std::vector<ir::Value*> operands, std::vector<ir::Type> result_types,
                  const SourceLoc& loc);

// "file:line: op: message" as a tilejit::Error.
template <typename... Args>
[[noreturn]] void user_error(std::string_view op, const SourceLoc& loc, fmt::format_string<Args...> format,
                             Args&&... args) {
  fail("{}: {}: {}", loc.str(), op, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace tilejit::dsl::detail
