// For tests of error cases: the message of the tilejit::Error `f` throws.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "dsl/error.h"

namespace tilejit::testing_util {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// Expects `f` to throw a tilejit::Error whose message holds each of `words`.
inline void expect_error_naming(const std::function<void()>& f, const std::vector<std::string>& words) {
  std::string message = error_of(f);
  for (const std::string& word : words)
    EXPECT_NE(message.find(word), std::string::npos) << word << " not in: " << message;
}

}  // namespace tilejit::testing_util
