// The analytic cost model that ranks configurations before anything is compiled, so only the
// top k are compiled and timed. A kernel's cost function describes one launch for a config and
// a shape (CTAs, warps, floating-point work, memory traffic, live values per thread, its loop's
// copies and pipeline, the exponentials its products wait for); this turns that into an
// estimated time on a device: a roofline (tensor cores, FMA pipes, DRAM and L2) over the waves
// of CTAs the device runs at once (as many as its warps and registers allow), with wave
// quantization, the memory latency a pipeline does not hide, the part of the special functions'
// time no product runs under, a fixed cost per wave and per wait inside a program, and a
// penalty when the live values cannot fit in registers.
//
// Absolute numbers are rough (peak rates per architecture from public specifications); what
// matters is the ranking. Tuning times the top k, so a model that is wrong by a constant
// factor costs nothing and one that misranks costs only when the best config falls out of the
// top k.
#pragma once

#include <cstdint>

#include "runtime/device.h"

namespace tilejit::autotune {

// Live values per thread that ptxas assembles without spills where wgmma (sm_90a) keeps the
// operands in shared memory and the registers hold accumulators and computed tiles: measured
// on the attention kernels (ops/attention/tuning.cpp), about 255 registers.
constexpr double kWgmmaRegisterValues = 176;

struct LaunchWork {
  int64_t programs = 1;           // CTAs in the grid
  int num_warps = 4;              // per CTA
  double flops = 0;               // floating-point operations of the launch, padding included
  double bytes = 0;               // global memory traffic of the launch (DRAM)
  double values_per_thread = 0;   // live values per thread (accumulators and operand tiles)
  double l2_bytes = 0;            // reads that L2 serves (tiles other programs read too)
  double tensor_flops = 0;        // how many of the flops run on tensor cores
  // The tensor cores' rate for these inputs against 16-bit ones: 2 for 8-bit inputs (fp8,
  // int8), 0.5 for tf32, less where one product takes several (tf32x3).
  double tensor_rate = 1;
  double register_values = 128;   // how many values fit in registers without spills (by the same count)
  // Points in each program where its warps wait, on each other or on the tensor cores (a loop
  // iteration's barrier, a product issued as a group of its own): each costs a fixed time
  // beside the work, so of two tilings with the same work, the one that waits less often wins.
  int64_t waits_per_program = 0;
  // A program's loop steps that each consume copies from global memory, and the stages of its
  // pipeline (1: a step waits for its own copies; s: s - 1 steps' copies are in flight ahead of
  // it). Zero steps: the model takes the warps resident on an SM as what hides the latency.
  int64_t copy_steps_per_program = 0;
  int stages = 1;
  // DRAM traffic of a kernel the call launches after this one (split-K's sum of its slices),
  // which nothing overlaps.
  double follow_up_bytes = 0;
  // Special-function operations (exponentials) of the launch that the tensor cores wait for,
  // and the fraction of their time that no product runs under (schedules that overlap them
  // with products hide the rest).
  double special_ops = 0;
  double special_exposed = 1;
};

// Estimated time of one launch in milliseconds.
double estimate_ms(const LaunchWork& work, const DeviceInfo& device);

}  // namespace tilejit::autotune
