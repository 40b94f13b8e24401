#include "ops/kernels/example_runs.h"

#include <functional>
#include <map>
#include <mutex>
#include <random>

#include "ops/kernels/example_problems.h"
#include "ops/kernels/registry.h"
#include "runtime/jit.h"

namespace tilejit::ops {
namespace {

// One JitKernel per example for the process: repeated runs reuse its compiled kernels.
const JitKernel& jitted(const std::string& kernel) {
  static std::mutex mutex;
  static std::map<std::string, JitKernel> jitted;
  std::lock_guard lock(mutex);
  return jitted.try_emplace(kernel, find_kernel(kernel).kernel).first->second;
}

}  // namespace

// Launches once for the check (compiled, cached, caches warm), then times repeats.
void time_launches(ExampleRun& result, Device& device, const std::function<void(Stream&)>& launch) {
  Stream& s = device.default_stream();
  int repeats = device.info().kind == DeviceKind::emu ? 1 : 20;
  Event start = device.create_event(), stop = device.create_event();
  launch(s);
  start.record(s);
  for (int i = 0; i < repeats; ++i) launch(s);
  stop.record(s);
  stop.synchronize();
  result.ms = start.elapsed_ms(stop) / repeats;
  result.launches = repeats;
}

std::string describe(const ExampleRun& r) {
  std::string rate;
  if (r.flops > 0) rate = fmt::format("{:.2f} GFLOP/s", r.flops / r.ms / 1e6);
  else if (r.bytes > 0) rate = fmt::format("{:.2f} GB/s", r.bytes / r.ms / 1e6);
  return fmt::format("{:<11} {:<6} {:<22} max error {:.3g} (atol {:.0e}, rtol {:.0e})  {:8.3f} ms  {:>16}  on {}", r.kernel,
                     r.ok ? "ok" : "WRONG", r.problem, r.max_abs_error, r.atol, r.rtol, r.ms, rate, r.device);
}

ExampleRun run_example(const std::string& kernel, Device& device, const ExampleOptions& options) {
  example_dims(kernel);  // an unknown example is an error before anything else
  BoundKernel k = jitted(kernel).with(options.overrides);
  uint64_t seed = options.seed ? options.seed : std::random_device{}();
  bool small = options.small || device.info().kind == DeviceKind::emu;
  auto problem = make_example_problem(kernel, device, example_shape(kernel, k.constants(), small), seed);

  ExampleRun r;
  r.kernel = kernel;
  r.device = device.info().name;
  r.problem = problem->description();
  r.bytes = problem->bytes();
  r.flops = problem->flops();
  r.atol = problem->atol();
  r.rtol = problem->rtol();
  std::vector<KernelArg> args = problem->arguments();
  LaunchDims dims{problem->grid(k.constants()), {}};
  time_launches(r, device, [&](Stream& s) { k.launch_args(s, dims, args); });
  ExampleProblem::Comparison comparison = problem->compare(options.keep_outputs);
  r.ok = comparison.ok;
  r.max_abs_error = comparison.max_abs_error;
  r.outputs = std::move(comparison.outputs);
  return r;
}

}  // namespace tilejit::ops
