// For tests of error cases: the message of the tilejit::Error `f` throws.
#pragma once

#include <functional>
#include <string>

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

}  // namespace tilejit::testing_util
