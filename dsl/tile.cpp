#include "dsl/tile.h"

namespace tilejit::dsl {

ir::Value* Tile::value() const {
  if (!value_) fail("tilejit DSL: use of an empty Tile handle (default-constructed, never assigned)");
  if (trace_ != detail::current_trace_serial())
    fail("tilejit DSL: use of a Tile outside the kernel trace that made it (kept past its trace, e.g. in a static or "
         "a captured variable); make tiles inside the kernel body");
  return value_;
}

void Operand::reject_unsigned(uint64_t number, const std::source_location& loc) {
  fail("{}: unsigned literal {} does not fit a signed 64-bit literal; write its bit pattern as a signed number",
       SourceLoc::from(loc).str(), number);
}

std::string Operand::describe() const {
  if (auto* t = std::get_if<Tile>(&value_)) return t->type().str();
  if (auto* i = std::get_if<int64_t>(&value_)) return fmt::format("literal {}", *i);
  return fmt::format("literal {}", std::get<double>(value_));
}

}  // namespace tilejit::dsl
