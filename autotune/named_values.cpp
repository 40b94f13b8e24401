#include "autotune/named_values.h"

#include <fmt/ranges.h>

#include "dsl/error.h"

namespace tilejit::autotune {

int64_t NamedValues::operator[](std::string_view name) const {
  for (auto& [key, value] : values)
    if (key == name) return value;
  fail("no value named '{}' in '{}' (names: {})", name, str(), fmt::join(names(), ", "));
}

std::vector<std::string> NamedValues::names() const {
  std::vector<std::string> out;
  for (auto& [key, value] : values) out.push_back(key);
  return out;
}

bool NamedValues::has(std::string_view name) const {
  for (auto& [key, value] : values)
    if (key == name) return true;
  return false;
}

std::string NamedValues::str() const {
  std::string out;
  for (auto& [key, value] : values) out += fmt::format("{}{}={}", out.empty() ? "" : " ", key, value);
  return out;
}

NamedValues NamedValues::parse(std::string_view text) {
  NamedValues out;
  size_t pos = 0;
  while (pos < text.size()) {
    // Any whitespace separates, '\r' too: a shapes file written on Windows ends its lines so.
    constexpr std::string_view separators = " \t\r\n\v\f,";
    size_t start = text.find_first_not_of(separators, pos);
    if (start == std::string_view::npos) break;
    size_t end = std::min(text.find_first_of(separators, start), text.size());
    auto pair = parse_named_value(text.substr(start, end - start), text);
    if (out.has(pair.first)) fail("'{}' names {} twice", text, pair.first);
    out.values.push_back(std::move(pair));
    pos = end;
  }
  return out;
}

std::pair<std::string, int64_t> parse_named_value(std::string_view text, std::string_view what) {
  size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) fail("{}: expected NAME=VALUE, got '{}'", what, text);
  std::string name(text.substr(0, eq)), value(text.substr(eq + 1));
  // Decimal unless it starts 0x: a leading zero is not octal (a shape file's "0100" is 100).
  size_t sign = value.starts_with('-') || value.starts_with('+') ? 1 : 0;
  bool hex = value.compare(sign, 2, "0x") == 0 || value.compare(sign, 2, "0X") == 0;
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(value, &used, hex ? 16 : 10);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size()) fail("{}: {}: '{}' is not an integer", what, name, value);
  return {std::move(name), v};
}

}  // namespace tilejit::autotune
