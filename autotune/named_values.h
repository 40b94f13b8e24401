// Named integers, the currency of tuning: a kernel configuration ("BLOCK_M=64 num_warps=4")
// and a problem shape ("M=4096 N=4096 K=1024") are both ordered lists of NAME=VALUE pairs.
// The order is the declaration order, which keeps printed configs and keys stable.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tilejit::autotune {

struct NamedValues {
  std::vector<std::pair<std::string, int64_t>> values;

  // The value called `name`; throws tilejit::Error naming the ones there are.
  int64_t operator[](std::string_view name) const;
  bool has(std::string_view name) const;
  std::vector<std::string> names() const;  // in order
  // "M=4096 N=4096 K=1024"
  std::string str() const;
  // The inverse of str(): NAME=VALUE pairs separated by spaces or commas. Throws
  // tilejit::Error for a malformed pair or a name given twice.
  static NamedValues parse(std::string_view text);

  bool operator==(const NamedValues&) const = default;
};

// A kernel configuration: constant name -> value, as JitKernel::with takes it.
using Config = NamedValues;
// A problem's size: dimension name -> extent.
using ProblemShape = NamedValues;

// One "NAME=VALUE" with an integer value (decimal, or 0x hex); throws tilejit::Error naming
// `what` (the option or file it came from) for anything else.
std::pair<std::string, int64_t> parse_named_value(std::string_view text, std::string_view what);

}  // namespace tilejit::autotune
