#include "runtime/device.h"

#include "codegen/tma_box.h"
#include "dsl/log.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/driver_api.h"
#include "runtime/emu/emu_device.h"

namespace tilejit {

void record_launch_needs(KernelReport& report, const ir::Function& fn) {
  report.cluster = {static_cast<uint32_t>(fn.cluster[0]), static_cast<uint32_t>(fn.cluster[1]),
                    static_cast<uint32_t>(fn.cluster[2])};
  report.descriptor_row_slices = codegen::descriptor_row_slices(fn);
}

std::string cuda_driver_status() {
  try {
    cuda::driver();
    return "ready";
  } catch (const Error& e) {
    return e.what();
  }
}

const char* device_kind_name(DeviceKind kind) { return kind == DeviceKind::cuda ? "cuda" : "emu"; }

Stream::Stream(Stream&& other) noexcept : device_(other.device_), handle_(other.handle_), owned_(other.owned_) {
  other.owned_ = false;
}

Stream::~Stream() {
  if (owned_) device_->destroy_stream(handle_);
}

void Stream::synchronize() { device_->synchronize_stream(handle_); }

Event::Event(Event&& other) noexcept : device_(other.device_), handle_(other.handle_) { other.handle_ = nullptr; }

Event::~Event() {
  if (handle_) device_->destroy_event(handle_);
}

// A moved-from event has no handle: using it is an error, not a null dereference.
void* Event::live_handle(const char* use) const {
  if (!handle_) fail("{} of an event that was moved from", use);
  return handle_;
}

void Event::record(Stream& stream) {
  if (&stream.device() != device_)
    fail("event of {} recorded on a stream of {}", device_->info().name, stream.device().info().name);
  device_->record_event(live_handle("record"), stream.handle());
}

void Event::synchronize() { device_->synchronize_event(live_handle("synchronize")); }

float Event::elapsed_ms(const Event& end) const {
  if (end.device_ != device_)
    fail("elapsed_ms from an event of {} to one of {}", device_->info().name, end.device_->info().name);
  return device_->elapsed_ms(live_handle("elapsed_ms"), end.live_handle("elapsed_ms"));
}

void Device::copy(void* dst, const void* src, size_t bytes, CopyKind kind) {
  copy_async(dst, src, bytes, kind, default_stream());
  default_stream().synchronize();
}

namespace {

template <typename Free>
void logging_failures(const Device& device, void* ptr, const Free& free) noexcept {
  try {
    free();
  } catch (const std::exception& e) {
    log::warn("freeing {} on {} failed: {}", ptr, device.info().name, e.what());
  }
}

}  // namespace

void Device::release(void* ptr) noexcept {
  logging_failures(*this, ptr, [&] { free(ptr); });
}

void Device::release_on(Stream& stream, void* ptr) noexcept {
  logging_failures(*this, ptr, [&] { free_on(stream, ptr); });
}

Device& Device::emu() { return emu_device(); }

Device& Device::cuda(int ordinal) { return cuda_device(ordinal); }

int Device::cuda_device_count() { return tilejit::cuda_device_count(); }

Device& Device::best() { return cuda_device_count() > 0 ? cuda(0) : emu(); }

Device& Device::by_name(const std::string& name) {
  if (name == "emu") return emu();
  if (name.rfind("emu:", 0) == 0) return emu_device(name.substr(4));
  if (name == "cuda") return cuda(0);
  if (name.rfind("cuda:", 0) == 0) {
    std::string digits = name.substr(5);
    // Digits only, and few enough for an int.
    if (!digits.empty() && digits.size() <= 9 && digits.find_first_not_of("0123456789") == std::string::npos)
      return cuda(std::stoi(digits));
  }
  if (name == "best") return best();
  fail("unknown device '{}': use emu, emu:ARCH, cuda, cuda:N or best", name);
}

}  // namespace tilejit
