// The DSL's value handles. A Tile names one IR value while a kernel is being traced; an
// Operand is what arithmetic accepts: a Tile or a plain C++ number, which takes the dtype of
// the tile it meets. Operands record the user's source line for error messages.
#pragma once

#include <concepts>
#include <source_location>
#include <variant>

#include "dsl/ir.h"

namespace tilejit::dsl {

using ir::Shape;

class Tile {
 public:
  Tile() = default;
  explicit Tile(ir::Value* value) : value_(value) {}

  bool valid() const { return value_ != nullptr; }
  ir::Value* value() const;  // throws tilejit::Error for an empty handle
  const ir::Type& type() const { return value()->type; }
  DType dtype() const { return type().dtype; }
  const Shape& shape() const { return type().shape; }
  int rank() const { return type().rank(); }
  bool is_pointer() const { return type().pointer; }

 private:
  ir::Value* value_ = nullptr;
};

class Operand {
 public:
  Operand(const Tile& tile, std::source_location loc = std::source_location::current())
      : value_(tile), loc_(loc) {}
  template <std::integral T>
  Operand(T number, std::source_location loc = std::source_location::current())
      : value_(static_cast<int64_t>(number)), loc_(loc) {}
  template <std::floating_point T>
  Operand(T number, std::source_location loc = std::source_location::current())
      : value_(static_cast<double>(number)), loc_(loc) {}

  bool is_tile() const { return std::holds_alternative<Tile>(value_); }
  const Tile& tile() const { return std::get<Tile>(value_); }
  const std::variant<Tile, int64_t, double>& value() const { return value_; }
  const std::source_location& loc() const { return loc_; }
  std::string describe() const;  // the type, or the literal's value

 private:
  std::variant<Tile, int64_t, double> value_;
  std::source_location loc_;
};

}  // namespace tilejit::dsl
