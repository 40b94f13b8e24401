// PTX -> machine code for the CUDA device. In order of preference: nvJitLink (in process,
// loaded with dlopen), ptxas (a child process), or nothing: the PTX itself, which the driver
// JIT-compiles when the module is loaded. TILEJIT_CUBIN_TOOL=nvjitlink|ptxas|driver forces
// one (tests use it).
#pragma once

#include <string>

namespace tilejit::cuda {

struct CubinResult {
  std::string format;    // "cubin", or "ptx" for the driver to JIT-compile
  std::string bytes;     // the cubin, or the PTX
  int registers = -1;    // per thread, when the tool reports it
  int spill_bytes = -1;  // spill stores + loads, when the tool reports them
  std::string log;       // the tool's messages
  std::string tool;      // "nvjitlink", "ptxas" or "driver"
};

// TILEJIT_CUBIN_TOOL, or "auto" when it is not set; cheap (no library is loaded), so cache
// keys use it: the tools "auto" picks make interchangeable binaries.
std::string requested_cubin_tool();

// The tool compile_cubin uses when asked for `auto`: TILEJIT_CUBIN_TOOL, else the first of
// nvjitlink, ptxas, driver that is available. Throws tilejit::Error for an unknown name.
std::string cubin_tool();

// Why nvJitLink cannot be used (the libraries tried and the loader's messages); empty when it
// can. Loading is tried once per process.
const std::string& nvjitlink_load_error();

// Compiles `ptx` for `arch` with `tool` (one of cubin_tool()'s answers). Throws tilejit::Error
// with the tool's log when the PTX does not assemble, or when the tool is unavailable.
CubinResult compile_cubin(const std::string& ptx, const std::string& arch, const std::string& tool);

}  // namespace tilejit::cuda
