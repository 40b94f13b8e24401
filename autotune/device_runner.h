// The candidate runner for a real device (a GPU, or the emulator): one problem of the tuned
// shape is set up once (inputs, outputs, reference), each candidate is built through the
// launch API (so a GPU's compiled candidates land in the kernel cache), checked once against
// the reference, and timed with LaunchTimer.
#pragma once

#include <memory>
#include <vector>

#include "autotune/candidate_runner.h"
#include "autotune/launch_timer.h"
#include "autotune/tunable.h"
#include "runtime/jit.h"

namespace tilejit::autotune {

// The runner for `tunable`'s candidates on `shape`: its own (TunableKernel::runner) when it
// declares one, else a DeviceRunner.
std::unique_ptr<CandidateRunner> make_candidate_runner(const TunableKernel& tunable, const ProblemShape& shape,
                                                       Device& device, const TimingOptions& timing, uint64_t seed);

class DeviceRunner : public CandidateRunner {
 public:
  DeviceRunner(const TunableKernel& tunable, const ProblemShape& shape, Device& device, const TimingOptions& timing,
               uint64_t seed);

  const DeviceInfo& device() const override { return device_.info(); }
  KernelReport prepare(const Config& config) override;
  Measurement measure(const Config& config) override;

 private:
  Device& device_;
  JitKernel jit_;
  std::unique_ptr<TuningProblem> problem_;
  std::vector<KernelArg> args_;
  LaunchTimer timer_;
};

}  // namespace tilejit::autotune
