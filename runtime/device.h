// Devices behind one interface: a CUDA GPU through the Driver API, or the emulator, which
// runs the same lowered code on the host CPU. Memory, streams, events, kernel loading and
// launch look the same on both; runtime/jit.h builds the kernel launch API on top.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dsl/ir.h"
#include "dsl/kernel.h"
#include "runtime/tensor_descriptor.h"

namespace tilejit {

enum class DeviceKind { cuda, emu };
const char* device_kind_name(DeviceKind kind);  // "cuda" / "emu"

struct DeviceInfo {
  DeviceKind kind = DeviceKind::emu;
  int ordinal = 0;
  std::string name;                    // "NVIDIA H100 80GB HBM3", "emulator (sm_90a, 2 host threads)"
  std::string arch;                    // the code generation target, e.g. "sm_90a"
  int cc_major = 0, cc_minor = 0;      // compute capability (the emulated one for the emulator)
  int sm_count = 0;                    // multiprocessors (host worker threads for the emulator)
  int64_t shared_per_block_optin = 0;  // the most dynamic shared memory one CTA may ask for
  int64_t l2_bytes = 0;
  int64_t memory_bytes = 0;
};

class Device;

// The CUDA driver's version (12080 for 12.8); 0 when there is no usable driver. Never throws.
int cuda_driver_version();
// "ready", or why the CUDA driver cannot be used. Never throws.
std::string cuda_driver_status();

// Launches and copies on one stream run in order. The default stream of a device exists
// for the device's lifetime; streams made by create_stream() are destroyed with the object.
class Stream {
 public:
  Stream(Device& device, void* handle, bool owned) : device_(&device), handle_(handle), owned_(owned) {}
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&&) = delete;
  ~Stream();
  Device& device() const { return *device_; }
  void* handle() const { return handle_; }  // CUstream for CUDA, unused by the emulator
  void synchronize();

 private:
  Device* device_;
  void* handle_;
  bool owned_;
};

// A point in a stream's work; two recorded events give the elapsed time between them
// (device time on a GPU, host time in the emulator).
class Event {
 public:
  Event(Device& device, void* handle) : device_(&device), handle_(handle) {}
  Event(Event&& other) noexcept;
  Event& operator=(Event&&) = delete;
  ~Event();
  void record(Stream& stream);
  void synchronize();
  float elapsed_ms(const Event& end) const;  // from this event to `end`
  void* handle() const { return handle_; }

 private:
  void* live_handle(const char* use) const;
  Device* device_;
  void* handle_;
};

enum class CopyKind { host_to_device, device_to_host, device_to_device };

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  bool operator==(const Dim3&) const = default;
};

// What a compiled kernel reports about itself.
struct KernelReport {
  std::string name;
  std::string arch;
  int num_threads = 128;      // threads per CTA
  int64_t shared_bytes = 0;   // dynamic shared memory per CTA
  int registers = -1;         // per thread, from the assembler (-1: unknown)
  int spill_bytes = -1;       // spill stores + loads reported by the assembler (-1: unknown)
  std::string binary_format;  // "cubin", "ptx" (driver JIT) or "host" (emulator)
  Dim3 cluster;               // the thread-block cluster every launch runs it in ((1,1,1): none)
  // Per TensorDesc parameter, in order: the row slices its TMA box holds of a block
  // (codegen/tma_box.h), which the launch encodes the parameter's tensor map with.
  std::vector<int> descriptor_row_slices;
  bool from_disk_cache = false;
  // The kernel cache entries a later process finds this kernel by, with no compiler work
  // (cuda/cuda_compile.h); empty where kernels are not cached (the emulator's).
  std::vector<std::string> cache_entries;
};

// Records in `report` what launching the kernel traced as `fn` needs: its cluster and its
// descriptors' box slices.
void record_launch_needs(KernelReport& report, const ir::Function& fn);

// A kernel ready to launch on one device.
class LoadedKernel {
 public:
  virtual ~LoadedKernel() = default;
  const KernelReport& report() const { return report_; }

 protected:
  KernelReport report_;
};

// Everything a device needs to build one specialization of a kernel. Tracing happens only
// if the device has no cached binary for it.
struct KernelRequest {
  const dsl::Kernel* kernel = nullptr;
  const dsl::Constants* constants = nullptr;
  std::vector<ir::ArgFacts> facts;  // one per parameter
};

struct LaunchDims {
  Dim3 grid;
  Dim3 cluster;  // thread-block cluster shape; (1,1,1) launches without clusters
};

class Device {
 public:
  virtual ~Device() = default;
  const DeviceInfo& info() const { return info_; }

  // The emulator, always present.
  static Device& emu();
  // CUDA device `ordinal`; a tilejit::Error when there is no driver or no such GPU.
  static Device& cuda(int ordinal = 0);
  // The number of CUDA devices (0 without a driver or GPU; never throws).
  static int cuda_device_count();
  // The first GPU if there is one, else the emulator.
  static Device& best();
  // "cuda", "cuda:N" or "emu".
  static Device& by_name(const std::string& name);

  virtual void* allocate(size_t bytes) = 0;
  virtual void free(void* ptr) = 0;
  // free and free_on for destructors (a tensor's memory, ...): a failure, as on a device
  // already lost to a kernel fault, is logged, never thrown.
  void release(void* ptr) noexcept;
  void release_on(Stream& stream, void* ptr) noexcept;
  // Memory for work enqueued on `stream` only (an op's temporaries): allocated and freed in
  // the stream's order, so neither call waits for the device, as freeing allocate's memory
  // would. free_on takes the stream that allocate_on did.
  virtual void* allocate_on(Stream& stream, size_t bytes) = 0;
  virtual void free_on(Stream& stream, void* ptr) = 0;
  virtual void memset_async(void* dst, uint8_t value, size_t bytes, Stream& stream) = 0;
  virtual void copy_async(void* dst, const void* src, size_t bytes, CopyKind kind, Stream& stream) = 0;
  void copy(void* dst, const void* src, size_t bytes, CopyKind kind);  // on the default stream, then waits

  virtual Stream& default_stream() = 0;
  virtual Stream create_stream() = 0;
  virtual Event create_event() = 0;
  virtual void synchronize() = 0;

  // Memory the device did not allocate that kernels may use (DLPack imports): the emulator
  // checks every access against known memory, so it must be told.
  virtual void add_external_memory(const void* /*begin*/, size_t /*bytes*/) {}
  virtual void remove_external_memory(const void* /*begin*/) {}

  virtual std::shared_ptr<LoadedKernel> load(const KernelRequest& request) = 0;
  // The tensor map the TMA copies of `descriptor`'s blocks read on this device (the
  // emulator's own format; zeros on a GPU without TMA, whose kernels read blocks without it).
  // `descriptor` has passed its check(); its box holds `row_slices` of a block's rows
  // (KernelReport::descriptor_row_slices).
  virtual TensorMap encode_tensor_map(const TensorDescriptor& descriptor, int row_slices) = 0;
  // `args` follows cuLaunchKernel's convention: one pointer to each argument's value; a
  // TensorDesc parameter takes its TensorMap, then TensorDescriptorParams' data, rows, columns
  // and row stride, then the size and stride of each of its outer dims.
  virtual void launch(LoadedKernel& kernel, const LaunchDims& dims, void** args, Stream& stream) = 0;

  // Used by Stream and Event; not for users.
  virtual void destroy_stream(void* handle) = 0;
  virtual void synchronize_stream(void* handle) = 0;
  virtual void destroy_event(void* handle) = 0;
  virtual void record_event(void* event, void* stream) = 0;
  virtual void synchronize_event(void* event) = 0;
  virtual float elapsed_ms(void* start, void* end) = 0;

 protected:
  DeviceInfo info_;
};

}  // namespace tilejit
