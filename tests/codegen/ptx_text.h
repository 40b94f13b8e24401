// Reading generated PTX in the compile tests.
#pragma once

#include <cstddef>
#include <string>

namespace tilejit::codegen {

// How many times `what` occurs in `text`.
inline size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace tilejit::codegen
