// The two things the tuner asks of a candidate config: build it (compile and load, which
// yields its resource report), and run it (check its output against the reference once, then
// time it). Behind an interface so that the tuner's logic is tested with an injected,
// synthetic cost as well as on a device (autotune/device_runner.h).
#pragma once

#include <string>
#include <string_view>

#include "autotune/named_values.h"
#include "runtime/device.h"

namespace tilejit::autotune {

struct Measurement {
  bool correct = false;
  std::string mismatch;  // what differs from the reference, when not correct
  double ms = 0;         // the median time, when correct
};

class CandidateRunner {
 public:
  virtual ~CandidateRunner() = default;
  // The device the candidates run on (its limits prune configs; it is part of every key).
  virtual const DeviceInfo& device() const = 0;
  // Builds `config` and returns its compile/load report. Called from several threads at once.
  // Throws tilejit::Error when the config does not compile.
  virtual KernelReport prepare(const Config& config) = 0;
  // Runs `config` on poisoned outputs, checks them, and times it when they are right. Throws
  // tilejit::Error when a launch fails.
  virtual Measurement measure(const Config& config) = 0;
};

// Throws tilejit::Error, before a runner allocates anything, when a problem's buffers cannot
// fit: `device_bytes` in the device's memory or `host_bytes` (its reference's inputs) in this
// machine's. The sizes are long doubles: products of dims (each below 2^48) overflow int64.
void check_problem_fits(std::string_view op, const ProblemShape& shape, long double device_bytes,
                        long double host_bytes, const DeviceInfo& device);

}  // namespace tilejit::autotune
