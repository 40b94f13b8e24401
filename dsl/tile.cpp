#include "dsl/tile.h"

namespace tilejit::dsl {

ir::Value* Tile::value() const {
  if (!value_) fail("tilejit DSL: use of an empty Tile handle (default-constructed, never assigned)");
  return value_;
}

std::string Operand::describe() const {
  if (auto* t = std::get_if<Tile>(&value_)) return t->type().str();
  if (auto* i = std::get_if<int64_t>(&value_)) return fmt::format("literal {}", *i);
  return fmt::format("literal {}", std::get<double>(value_));
}

}  // namespace tilejit::dsl
