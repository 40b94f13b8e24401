#include "autotune/device_runner.h"

#include "dsl/error.h"

namespace tilejit::autotune {
namespace {

std::unique_ptr<TuningProblem> make_problem(const TunableKernel& tunable, Device& device, const ProblemShape& shape,
                                            uint64_t seed) {
  if (!tunable.problem) fail("autotune {}: the op declares no problem to time candidates on", tunable.name);
  return tunable.problem(device, tunable.checked_shape(shape), seed);
}

}  // namespace

std::unique_ptr<CandidateRunner> make_candidate_runner(const TunableKernel& tunable, const ProblemShape& shape,
                                                       Device& device, const TimingOptions& timing, uint64_t seed) {
  if (tunable.runner) return tunable.runner(device, tunable.checked_shape(shape), timing, seed);
  return std::make_unique<DeviceRunner>(tunable, shape, device, timing, seed);
}

DeviceRunner::DeviceRunner(const TunableKernel& tunable, const ProblemShape& shape, Device& device,
                           const TimingOptions& timing, uint64_t seed)
    : device_(device),
      jit_(tunable.kernel()),
      problem_(make_problem(tunable, device, shape, seed)),
      args_(problem_->arguments()),
      timer_(device, timing) {}

KernelReport DeviceRunner::prepare(const Config& config) {
  return jit_.with(config.values).prepare(device_, args_)->report();
}

Measurement DeviceRunner::measure(const Config& config) {
  auto turn = timer_.take_turn();
  BoundKernel kernel = jit_.with(config.values);
  LaunchDims dims{problem_->grid(kernel.constants()), {}};
  auto launch = [&](Stream& stream) { kernel.launch_args(stream, dims, args_); };
  problem_->poison_outputs();
  launch(device_.default_stream());
  device_.default_stream().synchronize();
  if (std::string mismatch = problem_->check_outputs(); !mismatch.empty()) return {false, mismatch, 0};
  return {true, "", timer_.median_ms(launch)};
}

}  // namespace tilejit::autotune
