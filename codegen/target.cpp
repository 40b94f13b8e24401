#include "codegen/target.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dsl/error.h"

namespace tilejit::codegen {

const std::vector<Target>& targets() {
  static const std::vector<Target> table = {
      {"sm_80", "+ptx78", 80, false},
      {"sm_89", "+ptx84", 89, false},  // PTX 8.4 for fp8 mma.sync
      {"sm_90a", "+ptx84", 90, true},
      {"sm_100a", "+ptx86", 100, false},
  };
  return table;
}

const Target& find_target(const std::string& arch) {
  std::vector<std::string> names;
  for (auto& t : targets()) {
    if (t.arch == arch) return t;
    names.push_back(t.arch);
  }
  fail("unknown target architecture '{}' (known: {})", arch, fmt::join(names, ", "));
}

}  // namespace tilejit::codegen
