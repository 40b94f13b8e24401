// The library's ops as `tilejit run OP` runs them: fresh random inputs of a default size (a
// small one on the emulator), the op on a device, a check of every output against a C++
// reference computed in double precision, the time per call and its rate (TFLOP/s or GB/s).
// `--set NAME=VALUE` sets a problem dimension ("M=4096"); a name the op does not have is an
// error naming the ones it has.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ops/kernels/example_runs.h"
#include "runtime/device.h"

namespace tilejit::ops {

struct LibraryRun {
  std::string op;       // the name `tilejit run` takes
  std::string summary;  // one line for `tilejit list`
  std::function<ExampleRun(Device&, const ExampleOptions&)> run;
};

// Every op's run, in a stable order.
const std::vector<LibraryRun>& library_runs();
// The run of `op`, or null when the library has no op of that name.
const LibraryRun* find_library_run(const std::string& op);

// The problem dimensions of a run: `defaults` with the run's overrides applied; an override
// naming no dimension is a tilejit::Error that lists the op's dimensions.
std::vector<std::pair<std::string, int64_t>> run_dimensions(const std::string& op,
                                                            std::vector<std::pair<std::string, int64_t>> defaults,
                                                            const ExampleOptions& options);
// The value of `name` among `dims` (which run_dimensions returned).
int64_t dimension(const std::vector<std::pair<std::string, int64_t>>& dims, const std::string& name);

}  // namespace tilejit::ops
