// The launch timer: warm-up runs, then the timed ones; counts it refuses; timers of one device
// taking turns (tuners on several threads must not time each other's launches).
#include "autotune/launch_timer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "tests/error_message.h"

namespace tilejit::autotune {
namespace {

using ::testing::HasSubstr;
using testing_util::error_of;

TEST(LaunchTimer, RunsTheWarmUpThenEveryTimedRun) {
  TimingOptions options;
  options.warmup = 2, options.repeats = 5;
  LaunchTimer timer(Device::emu(), options);
  int runs = 0;
  double ms = timer.median_ms([&](Stream&) {
    ++runs;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  });
  EXPECT_EQ(runs, 7);
  EXPECT_GE(ms, 1.5);  // each timed run slept 2 ms between its events
}

TEST(LaunchTimer, RefusesCountsThatTimeNothing) {
  for (auto [warmup, repeats] : {std::pair{1, 0}, std::pair{1, -3}, std::pair{-1, 5}}) {
    TimingOptions options;
    options.warmup = warmup, options.repeats = repeats;
    EXPECT_THAT(error_of([&] { LaunchTimer timer(Device::emu(), options); }),
                HasSubstr("launch timing: needs at least one timed run"))
        << warmup << " " << repeats;
  }
}

TEST(LaunchTimer, TimersOfOneDeviceTakeTurns) {
  std::atomic<int> inside{0}, most{0};
  auto time_one = [&] {
    TimingOptions options;
    options.warmup = 1, options.repeats = 5;
    LaunchTimer timer(Device::emu(), options);
    timer.median_ms([&](Stream&) {
      int now = ++inside;
      for (int seen = most; now > seen && !most.compare_exchange_weak(seen, now);) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      --inside;
    });
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back(time_one);
  for (auto& t : threads) t.join();
  EXPECT_EQ(most, 1);
}

}  // namespace
}  // namespace tilejit::autotune
