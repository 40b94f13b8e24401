// The analytic cost model that ranks configurations before anything is compiled, so only the
// top k are compiled and timed. A kernel's cost function describes one launch for a config and
// a shape (CTAs, warps, floating-point work, memory traffic, live values per thread); this
// turns that into an estimated time on a device: a roofline over the waves of CTAs the device
// runs at once, with wave quantization, a fixed cost per wave and per wait inside a program, a
// penalty when too few warps hide latency and one when the live values cannot fit in registers.
//
// Absolute numbers are rough (peak rates per architecture from public specifications); what
// matters is the ranking. Tuning times the top k, so a model that is wrong by a constant
// factor costs nothing and one that misranks costs only when the best config falls out of the
// top k.
#pragma once

#include <cstdint>

#include "runtime/device.h"

namespace tilejit::autotune {

struct LaunchWork {
  int64_t programs = 1;           // CTAs in the grid
  int num_warps = 4;              // per CTA
  double flops = 0;               // floating-point operations of the launch, padding included
  double bytes = 0;               // global memory traffic of the launch
  double values_per_thread = 0;   // live values per thread (accumulators and operand tiles)
  double tensor_flops = 0;        // how many of the flops run on tensor cores with 16-bit inputs
  double register_values = 128;   // how many of those fit in registers without spills (by the same count)
  // Points in each program where its warps wait, on each other or on the tensor cores (a loop
  // iteration's barrier, a product issued as a group of its own): each costs a fixed time
  // beside the work, so of two tilings with the same work, the one that waits less often wins.
  int64_t waits_per_program = 0;
};

// Estimated time of one launch in milliseconds.
double estimate_ms(const LaunchWork& work, const DeviceInfo& device);

}  // namespace tilejit::autotune
