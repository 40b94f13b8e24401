// The GPU targets tilejit generates code for. Adding an architecture is one table row.
#pragma once

#include <string>
#include <vector>

namespace tilejit::codegen {

struct Target {
  std::string arch;         // "sm_80", "sm_90a", ...
  std::string ptx_feature;  // LLVM's PTX ISA version feature, e.g. "+ptx80"
  int compute_capability;   // 80, 90, ...
  bool has_wgmma;           // sm_90a's asynchronous warpgroup MMA and TMA
};

const std::vector<Target>& targets();
// The target named `arch`; throws tilejit::Error naming the known ones otherwise.
const Target& find_target(const std::string& arch);

}  // namespace tilejit::codegen
