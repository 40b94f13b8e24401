// tilejit::Error, the one exception type at the API, and the internal check macro.
#pragma once

#include <source_location>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace tilejit {

// Every failure a user can see is a tilejit::Error. Its message names the op, the
// offending shapes / dtypes and, for DSL errors, the user's file:line.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// A source position in the user's kernel code (file:line), captured by the DSL.
struct SourceLoc {
  std::string file;
  unsigned line = 0;

  static SourceLoc from(const std::source_location& loc);
  std::string str() const;  // "file:line", or "<unknown>"
};

// Thrown when an internal invariant of tilejit itself is broken (a bug in tilejit, not
// in the user's kernel). Still a tilejit::Error, so nothing aborts the user's program.
[[noreturn]] void internal_error(const std::string& invariant, const char* file, int line);

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace tilejit

// TJ_CHECK(cond) guards an internal invariant; the message names the invariant.
#define TJ_CHECK(cond) \
  do { \
    if (!(cond)) ::tilejit::internal_error(#cond, __FILE__, __LINE__); \
  } while (0)
