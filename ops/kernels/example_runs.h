// Runs a registered example kernel on a device with fresh random inputs and poisoned
// outputs, checks it against a C++ reference computed in double precision, and times it.
// Used by `tilejit run`, the demo and the tests.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/device.h"

namespace tilejit::ops {

struct ExampleRun {
  std::string kernel;
  std::string device;
  std::string problem;       // the problem size, e.g. "M=500 N=510 K=509"
  double max_abs_error = 0;  // over every output element
  bool ok = false;           // every element within atol + rtol * |reference|, no NaN
  double atol = 0, rtol = 0;
  double ms = 0;             // per launch
  double bytes = 0;          // global memory traffic of one launch, at least
  double flops = 0;          // floating-point operations of one launch (GEMM)
  int launches = 0;          // timed launches
  std::vector<std::vector<double>> outputs;  // every output, when asked for
};

struct ExampleOptions {
  std::vector<std::pair<std::string, int64_t>> overrides;  // constants, as --set gives them
  uint64_t seed = 0;   // 0: a fresh random seed
  bool small = false;  // the small problem sizes (the default on the emulator)
  bool keep_outputs = false;
};

// Launches once (to compile and to leave the result for the check), then times repeats
// (1 on the emulator, 20 on a GPU) between events; sets result.ms and result.launches.
void time_launches(ExampleRun& result, Device& device, const std::function<void(Stream&)>& launch);

// One line: kernel, ok / WRONG, problem, max error and tolerance, time, rate, device.
std::string describe(const ExampleRun& run);

// Throws tilejit::Error for an unknown kernel name.
ExampleRun run_example(const std::string& kernel, Device& device, const ExampleOptions& options = {});

}  // namespace tilejit::ops
