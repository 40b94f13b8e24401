// The DSL's value handles. A Tile names one IR value while a kernel is being traced; an
// Operand is what arithmetic accepts: a Tile or a plain C++ number, which takes the dtype of
// the tile it meets. Operands record the user's source line for error messages.
#pragma once

#include <concepts>
#include <cstdint>
#include <source_location>
#include <type_traits>
#include <variant>

#include "dsl/ir.h"

namespace tilejit::dsl {

using ir::Shape;

namespace detail {
uint64_t current_trace_serial();  // the trace running on this thread (dsl/trace.h), 0 for none
}  // namespace detail

class Tile {
 public:
  Tile() = default;
  explicit Tile(ir::Value* value) : value_(value), trace_(detail::current_trace_serial()) {}

  bool valid() const { return value_ != nullptr; }
  // Throws tilejit::Error for an empty handle, and for a tile of another trace than the one
  // running (kept past its trace, whose values are gone, in a static or a captured variable).
  ir::Value* value() const;
  const ir::Type& type() const { return value()->type; }
  DType dtype() const { return type().dtype; }
  const Shape& shape() const { return type().shape; }
  int rank() const { return type().rank(); }
  bool is_pointer() const { return type().pointer; }

 private:
  ir::Value* value_ = nullptr;
  uint64_t trace_ = 0;  // the trace that made the value
};

class Operand {
 public:
  Operand(const Tile& tile, std::source_location loc = std::source_location::current())
      : value_(tile), loc_(loc) {}
  template <std::integral T>
  Operand(T number, std::source_location loc = std::source_location::current())
      : value_(static_cast<int64_t>(number)), loc_(loc) {
    if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(int64_t))  // narrower ones always fit
      if (number > static_cast<std::make_unsigned_t<int64_t>>(INT64_MAX)) reject_unsigned(number, loc);
  }
  template <std::floating_point T>
  Operand(T number, std::source_location loc = std::source_location::current())
      : value_(static_cast<double>(number)), loc_(loc) {}

  bool is_tile() const { return std::holds_alternative<Tile>(value_); }
  const Tile& tile() const { return std::get<Tile>(value_); }
  const std::variant<Tile, int64_t, double>& value() const { return value_; }
  const std::source_location& loc() const { return loc_; }
  std::string describe() const;  // the type, or the literal's value

 private:
  // An unsigned literal above INT64_MAX would wrap to a negative one: a clear error instead.
  [[noreturn]] static void reject_unsigned(uint64_t number, const std::source_location& loc);

  std::variant<Tile, int64_t, double> value_;
  std::source_location loc_;
};

}  // namespace tilejit::dsl
