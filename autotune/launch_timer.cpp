#include "autotune/launch_timer.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "dsl/error.h"

namespace tilejit::autotune {

TimingOptions TimingOptions::for_device(const DeviceInfo& device) {
  TimingOptions options;
  if (device.kind == DeviceKind::emu) {
    options.warmup = 1;
    options.repeats = 3;
  }
  return options;
}

namespace {

// One lock a device: see take_turn(). Recursive, so that median_ms() within a turn (and a
// timer within a launch) takes it again.
std::recursive_mutex& device_turns(const Device& device) {
  static std::mutex guard;
  static std::map<const Device*, std::recursive_mutex> locks;
  std::lock_guard lock(guard);
  return locks[&device];
}

}  // namespace

LaunchTimer::LaunchTimer(Device& device, TimingOptions options)
    : device_(device), options_(options), turns_(device_turns(device)) {
  if (options_.warmup < 0 || options_.repeats < 1)
    fail("launch timing: needs at least one timed run and no negative count, got {} warm-up and {} timed runs",
         options_.warmup, options_.repeats);
  if (options_.flush_l2 && device.info().l2_bytes > 0) {
    l2_bytes_ = static_cast<size_t>(device.info().l2_bytes);
    l2_scratch_ = device.allocate(l2_bytes_);
  }
}

LaunchTimer::~LaunchTimer() {
  if (l2_scratch_) device_.release(l2_scratch_);
}

std::unique_lock<std::recursive_mutex> LaunchTimer::take_turn() const { return std::unique_lock(turns_); }

double LaunchTimer::median_ms(const std::function<void(Stream&)>& launch) {
  auto turn = take_turn();
  Stream& stream = device_.default_stream();
  for (int i = 0; i < options_.warmup; ++i) launch(stream);
  std::vector<Event> starts, stops;
  starts.reserve(size_t(options_.repeats));
  stops.reserve(size_t(options_.repeats));
  for (int i = 0; i < options_.repeats; ++i) {
    starts.push_back(device_.create_event());
    stops.push_back(device_.create_event());
  }
  for (int i = 0; i < options_.repeats; ++i) {
    if (l2_scratch_) device_.memset_async(l2_scratch_, uint8_t(i), l2_bytes_, stream);
    starts[size_t(i)].record(stream);
    launch(stream);
    stops[size_t(i)].record(stream);
  }
  stream.synchronize();
  std::vector<double> times;
  for (int i = 0; i < options_.repeats; ++i) times.push_back(starts[size_t(i)].elapsed_ms(stops[size_t(i)]));
  return median(std::move(times));
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + long(mid), values.end());
  double upper = values[mid];
  if (values.size() % 2) return upper;
  double lower = *std::max_element(values.begin(), values.begin() + long(mid));
  return (lower + upper) / 2;
}

}  // namespace tilejit::autotune
