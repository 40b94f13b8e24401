// PTX -> cubin with the CUDA toolkit's ptxas, run as a separate process. Used to check and
// report on generated code (registers, spills, shared memory); the runtime loads cubins.
#pragma once

#include <optional>
#include <string>

namespace tilejit::codegen {

// ptxas from $TILEJIT_PTXAS, $CUDA_HOME/bin, the default toolkit location or PATH;
// nullopt when none is installed.
std::optional<std::string> find_ptxas();

struct PtxasResult {
  bool ok = false;
  std::string log;    // ptxas's messages (with -v: the resource usage lines)
  std::string cubin;  // the assembled binary when ok
  // Parsed from the -v report.
  int registers = -1;
  int spill_stores = -1;
  int spill_loads = -1;
};

// Assembles `ptx` for `arch` with `ptxas -v`. Throws tilejit::Error when ptxas is missing.
PtxasResult run_ptxas(const std::string& ptx, const std::string& arch);

}  // namespace tilejit::codegen
