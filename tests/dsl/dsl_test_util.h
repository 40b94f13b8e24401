// Helpers shared by the DSL tests: trace a kernel defined inline, catch the tilejit::Error
// a kernel (or any callable) throws, and look at the traced IR.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dsl/kernel.h"
#include "dsl/verifier.h"

namespace tjtest {

using namespace tilejit;
using namespace tilejit::dsl;

// Defines a kernel from `fn` and traces it with its default constants (plus `overrides`).
template <typename F>
std::unique_ptr<ir::Function> trace(const std::string& name, std::vector<std::string> names, F fn,
                                    std::vector<ConstantDecl> constants = {},
                                    std::vector<std::pair<std::string, int64_t>> overrides = {}) {
  Kernel k = define_kernel(name, std::move(names), std::move(constants), std::move(fn));
  return k.trace(k.constants(overrides));
}

// Runs `f`, which must throw tilejit::Error, and returns the message ("" and a test failure
// if it returns normally). Any other exception escapes and fails the test.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const tilejit::Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a tilejit::Error, but nothing was thrown";
  return {};
}

// The message of the error that tracing a kernel defined from `fn` throws.
template <typename F>
std::string trace_error(std::vector<std::string> names, F fn, std::vector<ConstantDecl> constants = {}) {
  return error_of([&] {
    Kernel k = define_kernel("bad", names, constants, fn);
    k.trace(k.constants());
  });
}

// The ops of `kind` in the function, nested regions included, in print order.
inline std::vector<const ir::Op*> ops_of(const ir::Function& fn, ir::OpKind kind) {
  std::vector<const ir::Op*> out;
  ir::walk(const_cast<ir::Block&>(fn.body), [&](ir::Op& op) {
    if (op.kind == kind) out.push_back(&op);
  });
  return out;
}

inline int count_of(const std::string& text, std::string_view needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

// True if some line of the IR text is "%r = <op> ... : <type>" (one result of `type`).
inline bool has_op(const std::string& ir, std::string_view op, std::string_view type) {
  size_t start = 0;
  while (start < ir.size()) {
    size_t end = ir.find('\n', start);
    if (end == std::string::npos) end = ir.size();
    std::string_view line(ir.data() + start, end - start);
    start = end + 1;
    size_t eq = line.find(" = ");
    if (eq == std::string_view::npos || line.find('%') > eq) continue;
    std::string_view rest = line.substr(eq + 3);
    if (rest.substr(0, op.size()) != op || (rest.size() > op.size() && rest[op.size()] != ' ')) continue;
    std::string suffix = " : " + std::string(type);
    if (line.size() >= suffix.size() && line.substr(line.size() - suffix.size()) == suffix) return true;
    if (line.size() >= suffix.size() + 2 && line.substr(line.size() - suffix.size() - 2) == suffix + " {") return true;
  }
  return false;
}

// "file:line: " as DSL errors start.
inline std::string at_line(const char* file, int line) {
  return std::string(file) + ":" + std::to_string(line) + ": ";
}

}  // namespace tjtest

// Substring checks that print the whole haystack (IR text or error message) on failure.
#define EXPECT_CONTAINS(haystack, needle)                                                   \
  do {                                                                                      \
    const std::string tj_h_ = (haystack);                                                   \
    const std::string tj_n_ = (needle);                                                     \
    EXPECT_NE(tj_h_.find(tj_n_), std::string::npos) << "missing: " << tj_n_ << "\nin:\n" << tj_h_; \
  } while (0)
#define EXPECT_NOT_CONTAINS(haystack, needle)                                                   \
  do {                                                                                          \
    const std::string tj_h_ = (haystack);                                                       \
    const std::string tj_n_ = (needle);                                                         \
    EXPECT_EQ(tj_h_.find(tj_n_), std::string::npos) << "unexpected: " << tj_n_ << "\nin:\n" << tj_h_; \
  } while (0)
#define EXPECT_OP(ir, op, type) \
  EXPECT_TRUE(::tjtest::has_op((ir), (op), (type))) << "no line \"%.. = " << (op) << " ... : " << (type) << "\" in:\n" << (ir)
// The message starts with "<basename>:<line>: ".
#define EXPECT_ERROR_AT(message, file, line)                                                         \
  do {                                                                                               \
    const std::string tj_m_ = (message);                                                             \
    const std::string tj_p_ = ::tjtest::at_line((file), (line));                                     \
    EXPECT_EQ(tj_m_.substr(0, tj_p_.size()), tj_p_) << "full message:\n" << tj_m_;                   \
  } while (0)
