// What an op declares to be tunable, next to its kernel: the kernel, the problem dimensions,
// the config space with its constraints, how shapes share results (bucketing), the dtypes and
// layout its results are for, an analytic cost for ranking, a heuristic for shapes nobody
// tuned, and a way to set up a problem to time candidates on (inputs, the launch grid for a
// config, and a check against a reference).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autotune/candidate_runner.h"
#include "autotune/config_space.h"
#include "autotune/cost_model.h"
#include "autotune/launch_timer.h"
#include "autotune/named_values.h"
#include "autotune/shape_bucketing.h"
#include "dsl/kernel.h"
#include "runtime/device.h"
#include "runtime/jit.h"

namespace tilejit::autotune {

// One problem instance on a device, set up once per shape and shared by every candidate:
// random inputs, outputs, and a reference computed once.
class TuningProblem {
 public:
  virtual ~TuningProblem() = default;
  // The launch arguments; the same buffers and scalars for every config.
  virtual std::vector<KernelArg> arguments() const = 0;
  // The grid a launch with `constants` needs.
  virtual Dim3 grid(const dsl::Constants& constants) const = 0;
  // Fills the outputs with a pattern no correct kernel leaves behind (NaN, -1).
  virtual void poison_outputs() = 0;
  // After a launch: empty when every output matches the reference within tolerance, else
  // what differs ("max error 0.5 > 1e-05 + 1e-04 * |ref|").
  virtual std::string check_outputs() = 0;
};

struct TunableKernel {
  std::string name;                    // the op's name: `tilejit tune --op NAME`, part of every tuning key
  std::function<dsl::Kernel()> kernel;
  std::vector<std::string> dims;       // the shape's dimension names, in order: {"M", "N", "K"}
  ConfigSpace space;
  ShapeBucketing bucketing;
  std::string dtypes = "f32";          // the element types the results are for: "f32", "bf16,bf16->f32"
  std::string layout = "row-major";    // the operand layouts: "row-major", "nt"
  // The launch a config makes for a shape on a device, for the cost model; unset: configs keep
  // the order the space lists them in.
  std::function<LaunchWork(const Config&, const ProblemShape&, const DeviceInfo&)> work;
  // The config for a shape nobody tuned; unset: the kernel's declared constants.
  std::function<Config(const ProblemShape&, const DeviceInfo&)> heuristic;
  // A problem of `shape` on `device` with inputs from `seed`.
  std::function<std::unique_ptr<TuningProblem>(Device&, const ProblemShape&, uint64_t seed)> problem;
  // For an op whose call is more than one kernel on fixed arguments (gemm: tensor descriptors
  // that follow the tiles, split-K's second kernel): runs candidates through the op's own
  // launch path, so what is timed is what a call runs. Unset: a DeviceRunner over `kernel`
  // and `problem` (make_candidate_runner, autotune/device_runner.h).
  std::function<std::unique_ptr<CandidateRunner>(Device&, const ProblemShape&, const TimingOptions&, uint64_t seed)>
      runner;

  // `shape` with exactly this op's dimensions, in order; throws tilejit::Error naming the
  // missing or unknown ones.
  ProblemShape checked_shape(const ProblemShape& shape) const;
  // The heuristic's config, or the kernel's declared values of the space's constants.
  Config heuristic_config(const ProblemShape& shape, const DeviceInfo& device) const;
};

// The op registered under `key` for the process, made by `make` on its first request;
// thread-safe. The reference stays valid (per-bucket lookups key on the op's address), so
// library ops whose tunable depends on dtypes or layout make one per combination this way.
const TunableKernel& tunable_for(const std::string& key, const std::function<TunableKernel()>& make);

}  // namespace tilejit::autotune
