#include "runtime/cuda/cuda_device.h"

#include <fmt/ranges.h>

#include <atomic>
#include <map>
#include <mutex>
#include <typeinfo>

#include "codegen/target.h"
#include "dsl/error.h"
#include "dsl/log.h"
#include "runtime/cuda/cuda_compile.h"
#include "runtime/cuda/driver_api.h"
#include "runtime/cuda/tensor_map_encoding.h"
#include "runtime/kernel_cache.h"

namespace tilejit {
namespace cuda {
namespace {

// Dynamic shared memory a CTA may use without opting in with cuFuncSetAttribute.
constexpr int64_t kDefaultSharedLimit = 48 * 1024;

// The primary context is made current before every call, so a device can be used from any
// thread, and CUDA code that switched the thread to another context does not trip us.
void make_current(CUcontext context) { TJ_CU(cuCtxSetCurrent, context); }

CUdeviceptr device_pointer(const void* ptr) { return reinterpret_cast<CUdeviceptr>(ptr); }

// The code generation target for a compute capability. A cubin runs only on GPUs of its own
// major version, and an arch-specific ("a") one only on its exact compute capability.
const codegen::Target& target_for(const DeviceInfo& info) {
  int cc = info.cc_major * 10 + info.cc_minor;
  std::vector<std::string> known;
  for (const codegen::Target& t : codegen::targets()) {
    if (t.compute_capability == cc) return t;
    known.push_back(t.arch);
  }
  if (info.cc_major == 8) return codegen::find_target("sm_80");
  if (cc < 80)
    fail("CUDA device {} ({}) has compute capability {}.{}; tilejit generates code for 8.0 and newer", info.ordinal,
         info.name, info.cc_major, info.cc_minor);
  fail("CUDA device {} ({}) has compute capability {}.{}, for which tilejit has no code generation target (known: {})",
       info.ordinal, info.name, info.cc_major, info.cc_minor, fmt::join(known, ", "));
}

// A kernel loaded into one device's primary context; its module is unloaded with it.
class CudaKernel final : public LoadedKernel {
 public:
  CudaKernel(const Device& device, CUcontext context, KernelReport report) : device_(&device), context_(context) {
    report_ = std::move(report);
  }
  CudaKernel(const CudaKernel&) = delete;
  CudaKernel& operator=(const CudaKernel&) = delete;
  ~CudaKernel() override {
    if (!module_) return;
    // Errors are only logged: at process exit the driver may already be shut down.
    const DriverApi& api = driver();
    CUresult r = api.cuCtxSetCurrent(context_);
    if (r == CUDA_SUCCESS) r = api.cuModuleUnload(module_);
    if (r != CUDA_SUCCESS) log::debug("cuModuleUnload for {} failed: CUresult {}", report_.name, static_cast<int>(r));
  }

  // Loads the module and finds the kernel's function; the driver's result, for fail_load.
  CUresult try_load_module(const std::string& ptx, const std::string& cubin);
  [[noreturn]] void fail_load(CUresult result) const;
  const std::string& load_log() const { return load_log_; }  // the driver JIT's errors
  void set_shared_limit(int64_t optin_limit);
  void check_fits_in_a_cta();

  const Device* device() const { return device_; }
  CUfunction function() const { return function_; }

 private:
  const Device* device_;
  CUcontext context_;
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
  const char* load_call_ = "";  // the last call of try_load_module, and the driver JIT's log
  std::string load_log_;
};

CUresult CudaKernel::try_load_module(const std::string& ptx, const std::string& cubin) {
  // The JIT's logs, so a module the driver rejects (PTX it cannot compile) says why.
  char error_log[8192] = {};
  char info_log[8192] = {};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_INFO_LOG_BUFFER,
                            CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {error_log, reinterpret_cast<void*>(sizeof error_log), info_log,
                    reinterpret_cast<void*>(sizeof info_log)};
  // Without a cubin the driver compiles the PTX (NUL-terminated, as c_str() is).
  const void* image = cubin.empty() ? static_cast<const void*>(ptx.c_str()) : cubin.data();
  const DriverApi& api = driver();
  load_call_ = "cuModuleLoadDataEx";
  CUresult r = api.cuModuleLoadDataEx(&module_, image, 4, options, values);
  load_log_ = error_log;
  if (r != CUDA_SUCCESS) {
    module_ = nullptr;
    return r;
  }
  if (info_log[0]) log::debug("loading {}: {}", report_.name, info_log);
  load_call_ = "cuModuleGetFunction";
  return api.cuModuleGetFunction(&function_, module_, report_.name.c_str());
}

void CudaKernel::fail_load(CUresult result) const {
  fail_call(result, load_call_, fmt::format("loading {} ({} for {}){}{}", report_.name, report_.binary_format,
                                            report_.arch, load_log_.empty() ? "" : ":\n", load_log_));
}

void CudaKernel::set_shared_limit(int64_t optin_limit) {
  if (report_.shared_bytes <= kDefaultSharedLimit) return;
  if (report_.shared_bytes > optin_limit)
    fail("kernel {} needs {} bytes of shared memory per CTA; the GPU allows at most {}", report_.name,
         report_.shared_bytes, optin_limit);
  TJ_CU(cuFuncSetAttribute, function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        static_cast<int>(report_.shared_bytes));
}

void CudaKernel::check_fits_in_a_cta() {
  int registers = 0, max_threads = 0;
  TJ_CU(cuFuncGetAttribute, &registers, CU_FUNC_ATTRIBUTE_NUM_REGS, function_);
  TJ_CU(cuFuncGetAttribute, &max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, function_);
  // The driver JIT reports nothing else, so the loaded function tells the register count.
  if (report_.registers < 0) report_.registers = registers;
  if (report_.num_threads > max_threads)
    fail("kernel {} uses {} registers per thread, so at most {} threads fit in a CTA, but it needs {}", report_.name,
         registers, max_threads, report_.num_threads);
}

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(int ordinal);
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  void* allocate(size_t bytes) override;
  void free(void* ptr) override;
  void* allocate_on(Stream& stream, size_t bytes) override;
  void free_on(Stream& stream, void* ptr) override;
  void memset_async(void* dst, uint8_t value, size_t bytes, Stream& stream) override;
  void copy_async(void* dst, const void* src, size_t bytes, CopyKind kind, Stream& stream) override;

  Stream& default_stream() override { return default_stream_; }
  Stream create_stream() override;
  Event create_event() override;
  void synchronize() override;

  std::shared_ptr<LoadedKernel> load(const KernelRequest& request) override;
  TensorMap encode_tensor_map(const TensorDescriptor& descriptor, int row_slices) override {
    // Kernels for GPUs without TMA read the blocks through the other parameters.
    if (info_.cc_major < 9) return TensorMap{};
    // A launch encodes its maps before it makes the context current, and the driver may want
    // one (its documented errors include CUDA_ERROR_INVALID_CONTEXT).
    make_current(context_);
    return encode_tiled_tensor_map(descriptor, row_slices);
  }
  void launch(LoadedKernel& kernel, const LaunchDims& dims, void** args, Stream& stream) override;

  void destroy_stream(void* handle) override;
  void synchronize_stream(void* handle) override;
  void destroy_event(void* handle) override;
  void record_event(void* event, void* stream) override;
  void synchronize_event(void* event) override;
  float elapsed_ms(void* start, void* end) override;

 private:
  const DriverApi& api_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;  // retained for the process: devices are never destroyed
  std::atomic<CUmemoryPool> stream_ordered_pool_ = nullptr;  // allocate_on's memory, made on first use
  std::once_flag pool_made_;
  const codegen::Target* target_ = nullptr;
  Stream default_stream_;  // the legacy default stream (handle 0), which orders with all others
};

CudaDevice::CudaDevice(int ordinal) : api_(driver()), default_stream_(*this, nullptr, false) {
  int count = 0;
  TJ_CU(cuDeviceGetCount, &count);
  if (ordinal < 0 || ordinal >= count) fail("no CUDA device {}: {} device(s) present", ordinal, count);
  TJ_CU(cuDeviceGet, &device_, ordinal);
  auto attribute = [&](CUdevice_attribute which) {
    int value = 0;
    TJ_CU(cuDeviceGetAttribute, &value, which, device_);
    return value;
  };
  char name[256] = {};
  TJ_CU(cuDeviceGetName, name, static_cast<int>(sizeof name), device_);
  size_t memory_bytes = 0;
  TJ_CU(cuDeviceTotalMem, &memory_bytes, device_);
  info_.kind = DeviceKind::cuda;
  info_.ordinal = ordinal;
  info_.name = name;
  info_.cc_major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info_.cc_minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info_.sm_count = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info_.shared_per_block_optin = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  info_.l2_bytes = attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  info_.memory_bytes = static_cast<int64_t>(memory_bytes);
  target_ = &target_for(info_);
  info_.arch = target_->arch;
  TJ_CU(cuDevicePrimaryCtxRetain, &context_, device_);
  log::info("CUDA device {}: {} (compute capability {}.{}, {} SMs), code for {}", ordinal, info_.name, info_.cc_major,
            info_.cc_minor, info_.sm_count, info_.arch);
}

void* CudaDevice::allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  make_current(context_);
  CUdeviceptr ptr = 0;
  CUresult r = api_.cuMemAlloc(&ptr, bytes);
  if (CUmemoryPool pool = stream_ordered_pool_.load(); r == CUDA_ERROR_OUT_OF_MEMORY && pool) {
    // The pool keeps what scratch tensors freed: give it back, once their frees have run.
    TJ_CU(cuCtxSynchronize);
    TJ_CU(cuMemPoolTrimTo, pool, 0);
    r = api_.cuMemAlloc(&ptr, bytes);
  }
  if (r != CUDA_SUCCESS) fail_call(r, "cuMemAlloc", fmt::format("{} bytes on {}", bytes, info_.name));
  return reinterpret_cast<void*>(ptr);
}

void CudaDevice::free(void* ptr) {
  if (!ptr) return;
  make_current(context_);
  TJ_CU(cuMemFree, device_pointer(ptr));
}

// The pool keeps what is freed into it (no release threshold), so that an op's temporaries
// reuse memory from one call to the next instead of going back to the driver each time;
// allocate() takes it back when the device runs out. A GPU without memory pools gets
// allocate's memory (freeing it then waits for the device).
void* CudaDevice::allocate_on(Stream& stream, size_t bytes) {
  if (bytes == 0) return nullptr;
  make_current(context_);
  std::call_once(pool_made_, [&] {
    int supported = 0;
    TJ_CU(cuDeviceGetAttribute, &supported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, device_);
    if (!supported) return;
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = info_.ordinal;
    CUmemoryPool pool = nullptr;
    TJ_CU(cuMemPoolCreate, &pool, &props);
    cuuint64_t keep_everything = ~cuuint64_t{0};
    TJ_CU(cuMemPoolSetAttribute, pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_everything);
    stream_ordered_pool_.store(pool);
  });
  CUmemoryPool pool = stream_ordered_pool_.load();
  if (!pool) return allocate(bytes);
  CUdeviceptr ptr = 0;
  if (CUresult r = api_.cuMemAllocFromPoolAsync(&ptr, bytes, pool, static_cast<CUstream>(stream.handle()));
      r != CUDA_SUCCESS)
    fail_call(r, "cuMemAllocFromPoolAsync", fmt::format("{} bytes on {}", bytes, info_.name));
  return reinterpret_cast<void*>(ptr);
}

// Called from a tensor's deleter, so a failure (a device already in a sticky error) is
// reported, not thrown.
void CudaDevice::free_on(Stream& stream, void* ptr) {
  if (!ptr) return;
  if (!stream_ordered_pool_.load()) return free(ptr);
  make_current(context_);
  if (CUresult r = api_.cuMemFreeAsync(device_pointer(ptr), static_cast<CUstream>(stream.handle())); r != CUDA_SUCCESS)
    log::warn("CUDA driver: cuMemFreeAsync of {} on {} failed (CUresult {})", ptr, info_.name, static_cast<int>(r));
}

void CudaDevice::memset_async(void* dst, uint8_t value, size_t bytes, Stream& stream) {
  make_current(context_);
  TJ_CU(cuMemsetD8Async, device_pointer(dst), value, bytes, static_cast<CUstream>(stream.handle()));
}

void CudaDevice::copy_async(void* dst, const void* src, size_t bytes, CopyKind kind, Stream& stream) {
  make_current(context_);
  auto s = static_cast<CUstream>(stream.handle());
  switch (kind) {
    case CopyKind::host_to_device: TJ_CU(cuMemcpyHtoDAsync, device_pointer(dst), src, bytes, s); return;
    case CopyKind::device_to_host: TJ_CU(cuMemcpyDtoHAsync, dst, device_pointer(src), bytes, s); return;
    case CopyKind::device_to_device: TJ_CU(cuMemcpyDtoDAsync, device_pointer(dst), device_pointer(src), bytes, s);
      return;
  }
}

Stream CudaDevice::create_stream() {
  make_current(context_);
  CUstream stream = nullptr;
  // Blocking (CU_STREAM_DEFAULT): work on the default stream still waits for it, and it for
  // that work, as Device::copy relies on.
  TJ_CU(cuStreamCreate, &stream, CU_STREAM_DEFAULT);
  return Stream(*this, stream, true);
}

Event CudaDevice::create_event() {
  make_current(context_);
  CUevent event = nullptr;
  TJ_CU(cuEventCreate, &event, CU_EVENT_DEFAULT);
  return Event(*this, event);
}

void CudaDevice::synchronize() {
  make_current(context_);
  TJ_CU(cuCtxSynchronize);
}

// Called from destructors: failures are logged, never thrown.
void CudaDevice::destroy_stream(void* handle) {
  CUresult r = api_.cuCtxSetCurrent(context_);
  if (r == CUDA_SUCCESS) r = api_.cuStreamDestroy(static_cast<CUstream>(handle));
  if (r != CUDA_SUCCESS) log::warn("cuStreamDestroy failed: CUresult {}", static_cast<int>(r));
}

void CudaDevice::synchronize_stream(void* handle) {
  make_current(context_);
  TJ_CU(cuStreamSynchronize, static_cast<CUstream>(handle));
}

void CudaDevice::destroy_event(void* handle) {
  CUresult r = api_.cuCtxSetCurrent(context_);
  if (r == CUDA_SUCCESS) r = api_.cuEventDestroy(static_cast<CUevent>(handle));
  if (r != CUDA_SUCCESS) log::warn("cuEventDestroy failed: CUresult {}", static_cast<int>(r));
}

void CudaDevice::record_event(void* event, void* stream) {
  make_current(context_);
  TJ_CU(cuEventRecord, static_cast<CUevent>(event), static_cast<CUstream>(stream));
}

void CudaDevice::synchronize_event(void* event) {
  make_current(context_);
  TJ_CU(cuEventSynchronize, static_cast<CUevent>(event));
}

float CudaDevice::elapsed_ms(void* start, void* end) {
  make_current(context_);
  float ms = 0;
  TJ_CU(cuEventElapsedTime, &ms, static_cast<CUevent>(start), static_cast<CUevent>(end));
  return ms;
}

std::shared_ptr<LoadedKernel> CudaDevice::load(const KernelRequest& request) {
  KernelCache& cache = KernelCache::global();
  CudaKernelImage image = compile_cuda_kernel(request, *target_, cache);
  make_current(context_);
  auto kernel = std::make_shared<CudaKernel>(*this, context_, image.report);
  CUresult loaded = kernel->try_load_module(image.ptx, image.cubin);
  if (loaded != CUDA_SUCCESS && image.report.from_disk_cache && rejects_module_image(loaded)) {
    // A cached image this driver cannot use (a newer toolkit made it, say, for a pack or a
    // shared directory) is compiled here instead, and the new image replaces the entry.
    log::warn("kernel cache: the driver cannot load the cached image of {} ({}{}{}); compiling it again",
              image.report.name, result_name(loaded), kernel->load_log().empty() ? "" : ": ", kernel->load_log());
    CudaKernelImage fresh = recompile_cuda_kernel(request, *target_, cache);
    if (fresh.ptx != image.ptx || fresh.cubin != image.cubin) {  // the same bytes would fail the same way
      make_current(context_);
      kernel = std::make_shared<CudaKernel>(*this, context_, fresh.report);
      loaded = kernel->try_load_module(fresh.ptx, fresh.cubin);
    }
  }
  if (loaded != CUDA_SUCCESS) kernel->fail_load(loaded);
  kernel->set_shared_limit(info_.shared_per_block_optin);
  kernel->check_fits_in_a_cta();
  return kernel;
}

// The hot path: no allocation, no lock; a few checks and one driver call.
void CudaDevice::launch(LoadedKernel& kernel, const LaunchDims& dims, void** args, Stream& stream) {
  if (typeid(kernel) != typeid(CudaKernel) || static_cast<CudaKernel&>(kernel).device() != this) [[unlikely]]
    fail("kernel {} was not loaded on {}: load it on the device that launches it", kernel.report().name, info_.name);
  if (&stream.device() != this) [[unlikely]]
    fail("kernel {} launched on {} with a stream of {}", kernel.report().name, info_.name, stream.device().info().name);
  const auto& k = static_cast<const CudaKernel&>(kernel);
  const KernelReport& report = k.report();
  const Dim3& grid = dims.grid;
  const Dim3& cluster = dims.cluster;
  auto threads = static_cast<unsigned>(report.num_threads);
  auto shared = static_cast<unsigned>(report.shared_bytes);
  auto s = static_cast<CUstream>(stream.handle());
  make_current(context_);
  bool clustered = cluster.x != 1 || cluster.y != 1 || cluster.z != 1;
  CUresult r;
  if (!clustered) {
    r = api_.cuLaunchKernel(k.function(), grid.x, grid.y, grid.z, threads, 1, 1, shared, s, args, nullptr);
  } else {
    CUlaunchAttribute attribute{};
    attribute.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attribute.value.clusterDim.x = cluster.x;
    attribute.value.clusterDim.y = cluster.y;
    attribute.value.clusterDim.z = cluster.z;
    CUlaunchConfig config{};
    config.gridDimX = grid.x;
    config.gridDimY = grid.y;
    config.gridDimZ = grid.z;
    config.blockDimX = threads;
    config.blockDimY = config.blockDimZ = 1;
    config.sharedMemBytes = shared;
    config.hStream = s;
    config.attrs = &attribute;
    config.numAttrs = 1;
    r = api_.cuLaunchKernelEx(&config, k.function(), args, nullptr);
  }
  if (r != CUDA_SUCCESS) [[unlikely]]
    fail_call(r, clustered ? "cuLaunchKernelEx" : "cuLaunchKernel",
              fmt::format("launching {}: grid {}x{}x{}, cluster {}x{}x{}, {} threads, {} bytes of shared memory",
                          report.name, grid.x, grid.y, grid.z, cluster.x, cluster.y, cluster.z, threads, shared));
}

}  // namespace
}  // namespace cuda

Device& cuda_device(int ordinal) {
  static std::mutex mutex;
  // Never destroyed: buffers, streams and kernels held by other static objects may be
  // released during exit in any order, so the devices (and their contexts) outlive them all.
  static auto* devices = new std::map<int, std::unique_ptr<cuda::CudaDevice>>;
  std::lock_guard lock(mutex);
  auto it = devices->find(ordinal);
  if (it == devices->end()) it = devices->emplace(ordinal, std::make_unique<cuda::CudaDevice>(ordinal)).first;
  return *it->second;
}

int cuda_device_count() {
  if (!cuda_driver_available()) return 0;
  int count = 0;
  return cuda::driver().cuDeviceGetCount(&count) == CUDA_SUCCESS ? count : 0;
}

}  // namespace tilejit
