// Timing one candidate: warm-up launches, then each timed launch between its own pair of
// device events (device time on a GPU, host time in the emulator), the median of the repeats
// as the result (robust to the odd slow run). Before each timed launch the L2 cache is
// flushed by writing a scratch buffer of the device's L2 size, so every run reads its inputs
// from memory as a cold call in an application would, not from what the last run left in L2.
#pragma once

#include <functional>
#include <mutex>
#include <vector>

#include "runtime/device.h"

namespace tilejit::autotune {

struct TimingOptions {
  int warmup = 2;
  int repeats = 25;  // at least 1
  bool flush_l2 = true;  // on devices that report an L2 size (the emulator has none)

  // Fewer runs on the emulator, where a launch takes milliseconds of host time.
  static TimingOptions for_device(const DeviceInfo& device);
};

class LaunchTimer {
 public:
  LaunchTimer(Device& device, TimingOptions options);
  LaunchTimer(const LaunchTimer&) = delete;
  LaunchTimer& operator=(const LaunchTimer&) = delete;
  ~LaunchTimer();

  // The median time of `launch` in milliseconds, within a turn. Errors from the launches
  // propagate.
  double median_ms(const std::function<void(Stream&)>& launch);
  // The timers of one device take turns: while one holds its turn, no other in this process
  // runs. Tuners on several threads (buckets tuned on first use go on at once) would otherwise
  // put their kernels, checks and flushes between each other's events on the one default
  // stream. A runner holds a turn for all the device work of a measurement.
  std::unique_lock<std::recursive_mutex> take_turn() const;

 private:
  Device& device_;
  TimingOptions options_;
  std::recursive_mutex& turns_;  // the device's, shared by every timer of it
  void* l2_scratch_ = nullptr;
  size_t l2_bytes_ = 0;
};

// The median of `values` (the mean of the middle two for an even count); 0 when empty.
double median(std::vector<double> values);

}  // namespace tilejit::autotune
