// A synthetic op for the tuner's tests: a config space (BLOCK x num_warps) whose every timing
// the test knows (one minimum, at BLOCK=64 num_warps=4), and a candidate runner that returns
// those timings instead of running anything, and can be told to fail a compile, fail a launch,
// compute a wrong result or report a kernel too big for the device. It counts what it is asked.
#pragma once

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "autotune/candidate_runner.h"
#include "autotune/tunable.h"
#include "dsl/error.h"
#include "runtime/device_lost.h"
#include "runtime/kernel_cache.h"

namespace tilejit::testing_util {

using autotune::Config;
using autotune::ProblemShape;

// Never launched: the synthetic op needs a kernel only for its declared constants.
inline dsl::Kernel synthetic_kernel() {
  using namespace tilejit::dsl;
  return define_kernel("synthetic", {"out"}, {{"BLOCK", 32}}, [](const Constants& c, Ptr<f32> out) {
    store(out + arange(0, c["BLOCK"]), zeros({c["BLOCK"]}, DType::f32));
  });
}

inline autotune::TunableKernel synthetic_op() {
  autotune::TunableKernel op;
  op.name = "synthetic";
  op.kernel = synthetic_kernel;
  op.dims = {"n"};
  op.space.add("BLOCK", {16, 32, 64, 128, 256}).add("num_warps", {1, 2, 4, 8});
  op.bucketing.power_of_two("n");
  return op;
}

// The known time of a config: a bowl with its minimum, 1 ms, at BLOCK=64 num_warps=4.
inline double synthetic_ms(const Config& c) {
  double b = std::log2(double(c["BLOCK"]) / 64), w = std::log2(double(c["num_warps"]) / 4);
  return 1.0 + 0.3 * b * b + 0.2 * w * w + 0.05 * b * w;
}

inline Config synthetic_config(int64_t block, int64_t warps) { return Config{{{"BLOCK", block}, {"num_warps", warps}}}; }

// The kernel cache entry the synthetic runner says a config was built into.
inline std::string synthetic_entry(const Config& c) { return cache_key({"synthetic kernel", c.str()}); }

class SyntheticRunner : public autotune::CandidateRunner {
 public:
  explicit SyntheticRunner(double time_scale = 1.0) : time_scale_(time_scale) {
    info_.kind = DeviceKind::emu;
    info_.name = "synthetic device";
    info_.arch = "sm_90a";
    info_.sm_count = 4;
    info_.shared_per_block_optin = 227 * 1024;
  }

  const DeviceInfo& device() const override { return info_; }

  KernelReport prepare(const Config& config) override {
    ++prepares;
    int now = ++running;
    for (int seen = max_running.load(); now > seen && !max_running.compare_exchange_weak(seen, now);) {
    }
    std::this_thread::sleep_for(compile_time);
    --running;
    if (compile_errors.count(config.str())) fail("synthetic compile error for {}", config.str());
    if (compile_throws.count(config.str())) throw std::bad_alloc();
    if (device_lost_when_built.count(config.str())) throw DeviceLost("synthetic fault loading " + config.str());
    KernelReport report;
    report.num_threads = int(32 * config["num_warps"]);
    report.cache_entries = {synthetic_entry(config)};
    if (auto it = shared_bytes.find(config.str()); it != shared_bytes.end()) report.shared_bytes = it->second;
    return report;
  }

  autotune::Measurement measure(const Config& config) override {
    {
      std::lock_guard lock(mutex_);
      measured_.push_back(config.str());
    }
    if (launch_errors.count(config.str())) fail("synthetic launch failure for {}", config.str());
    if (device_lost_by.count(config.str())) throw DeviceLost("synthetic fault of " + config.str());
    if (ends_process_in.count(config.str())) std::_Exit(kEndedProcessStatus);
    double ms = synthetic_ms(config) * time_scale_;
    if (wrong_outputs.count(config.str())) return {false, "max error 2 exceeds 1e-05", 0};
    return {true, "", ms};
  }

  std::vector<std::string> measured_configs() const {
    std::lock_guard lock(mutex_);
    return measured_;
  }

  std::set<std::string> compile_errors, launch_errors, wrong_outputs;
  std::set<std::string> device_lost_by;  // configs whose launch leaves the device unusable
  std::set<std::string> compile_throws;          // configs whose build throws std::bad_alloc
  std::set<std::string> device_lost_when_built;  // configs whose build (module load) loses the device
  // Configs whose measurement ends the process (as a crash would), with this status.
  std::set<std::string> ends_process_in;
  static constexpr int kEndedProcessStatus = 86;
  std::map<std::string, int64_t> shared_bytes;
  std::chrono::milliseconds compile_time{0};
  std::atomic<int> prepares{0}, running{0}, max_running{0};

 private:
  DeviceInfo info_;
  double time_scale_;
  mutable std::mutex mutex_;
  std::vector<std::string> measured_;  // guarded by mutex_
};

}  // namespace tilejit::testing_util
