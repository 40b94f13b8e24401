#include "runtime/emu/emu_device.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "codegen/host_compiler.h"
#include "codegen/target.h"
#include "runtime/emu/allocation_table.h"
#include "runtime/emu/cta_runner.h"
#include "runtime/emu/runtime_symbols.h"
#include "runtime/emu/tensor_map.h"
#include "runtime/kernel_dump.h"

namespace tilejit {
namespace {

constexpr size_t kAllocationAlignment = 256;  // what cuMemAlloc guarantees
constexpr size_t kPoisonedAllocationBytes = size_t(256) << 20;
constexpr int kMaxThreadsPerCta = 1024;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

class EmuKernel : public LoadedKernel {
 public:
  // `fn`: what the kernel was traced as, null for hand-written LLVM IR.
  EmuKernel(std::unique_ptr<codegen::HostKernel> host, const std::string& arch, const ir::Function* fn)
      : host_(std::move(host)) {
    report_.name = host_->name();
    report_.arch = arch;
    report_.num_threads = host_->num_threads();
    report_.shared_bytes = host_->shared_bytes();
    report_.binary_format = "host";
    if (fn) record_launch_needs(report_, *fn);
  }
  const codegen::HostKernel& host() const { return *host_; }

 private:
  std::unique_ptr<codegen::HostKernel> host_;
};

struct EmuEvent {
  std::chrono::steady_clock::time_point time;
  bool recorded = false;
};

class EmuDevice : public Device {
 public:
  explicit EmuDevice(const codegen::Target& target)
      : default_stream_(*this, nullptr, false), symbols_(emu::runtime_symbols()), target_(target) {
    int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    workers_ = std::max(1, env_int("TILEJIT_EMU_THREADS", cores));
    info_.kind = DeviceKind::emu;
    info_.arch = target.arch;
    info_.cc_major = target.compute_capability / 10;
    info_.cc_minor = target.compute_capability % 10;
    info_.sm_count = workers_;
    info_.name = fmt::format("tilejit emulator ({}, {} host thread{})", target.arch, workers_, workers_ == 1 ? "" : "s");
    info_.shared_per_block_optin = 227 * 1024;  // an H100's opt-in limit
    info_.l2_bytes = 0;
    info_.memory_bytes = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  }

  void* allocate(size_t bytes) override {
    size_t rounded = std::max<size_t>(kAllocationAlignment, (bytes + kAllocationAlignment - 1) / kAllocationAlignment * kAllocationAlignment);
    void* p = std::aligned_alloc(kAllocationAlignment, rounded);
    if (!p) fail("emulator: out of host memory allocating {} bytes", bytes);
    allocations_.add(p, bytes);  // accesses beyond `bytes` are errors, even inside the rounding
    // Fresh memory reads as 0xff bytes (NaN, -1) where a GPU's would read as anything, so an
    // output an op leaves unwritten shows as wrong, not as a lucky zero. Larger allocations
    // stay lazily mapped: tests of size limits allocate far more than they touch.
    if (bytes <= kPoisonedAllocationBytes) std::memset(p, 0xff, bytes);
    return p;
  }

  void free(void* ptr) override {
    if (!ptr) return;
    if (!allocations_.contains(ptr)) fail("emulator: free of {}, which is not an allocation of this device", ptr);
    allocations_.remove(ptr);
    std::free(ptr);
  }

  // Work runs as it is enqueued, so the stream's order is the program's.
  void* allocate_on(Stream&, size_t bytes) override { return allocate(bytes); }
  void free_on(Stream&, void* ptr) override { free(ptr); }

  void memset_async(void* dst, uint8_t value, size_t bytes, Stream&) override {
    check_range(dst, bytes, "memset destination");
    if (bytes > 0) std::memset(dst, value, bytes);  // an empty tensor's pointer may be null
  }

  void copy_async(void* dst, const void* src, size_t bytes, CopyKind kind, Stream&) override {
    if (kind != CopyKind::host_to_device) check_range(src, bytes, "copy source");
    if (kind != CopyKind::device_to_host) check_range(dst, bytes, "copy destination");
    if (bytes > 0) std::memmove(dst, src, bytes);  // an empty tensor's pointer may be null
  }

  // An import's range is added while any import of its start lives, as a range of its own
  // (the allocation checks allow overlaps), so dropping one import never unregisters another's
  // memory; a later, larger import of the start (x[0:1], then x) widens it. One that starts
  // where an allocation of this device starts (a DLPack round trip) adds nothing, however much
  // it claims: that allocation keeps its extent, and accesses past it are errors. An empty one
  // adds nothing either (its address may be no memory at all).
  void add_external_memory(const void* begin, size_t bytes) override {
    std::lock_guard lock(external_mutex_);
    External& e = external_[begin];
    ++e.imports;
    if (bytes > e.bytes && (e.added || !allocations_.contains(begin))) {
      allocations_.add(begin, e.bytes = bytes);
      e.added = true;
    }
  }
  void remove_external_memory(const void* begin) override {
    std::lock_guard lock(external_mutex_);
    auto it = external_.find(begin);
    if (it == external_.end() || --it->second.imports > 0) return;
    if (it->second.added) allocations_.remove(begin);
    external_.erase(it);
  }

  Stream& default_stream() override { return default_stream_; }
  Stream create_stream() override { return Stream(*this, nullptr, true); }
  Event create_event() override { return Event(*this, new EmuEvent); }
  void synchronize() override {}

  void destroy_stream(void*) override {}
  void synchronize_stream(void*) override {}
  void destroy_event(void* handle) override { delete static_cast<EmuEvent*>(handle); }
  void record_event(void* event, void*) override {
    auto* e = static_cast<EmuEvent*>(event);
    e->time = std::chrono::steady_clock::now();
    e->recorded = true;
  }
  void synchronize_event(void*) override {}
  float elapsed_ms(void* start, void* end) override {
    auto *a = static_cast<EmuEvent*>(start), *b = static_cast<EmuEvent*>(end);
    if (!a->recorded || !b->recorded) fail("elapsed time between events that were not both recorded");
    return std::chrono::duration<float, std::milli>(b->time - a->time).count();
  }

  std::shared_ptr<LoadedKernel> load(const KernelRequest& request) override {
    auto fn = request.kernel->trace(*request.constants, request.facts);
    dump_kernel_if_requested(*fn, target_);
    return std::make_shared<EmuKernel>(codegen::compile_for_host(*fn, target_, symbols_), info_.arch, fn.get());
  }

  std::shared_ptr<LoadedKernel> load_llvm_ir(const std::string& text, const std::string& name, int threads,
                                             int64_t dynamic_shared) {
    return std::make_shared<EmuKernel>(codegen::compile_llvm_text_for_host(text, name, threads, dynamic_shared, symbols_),
                                       info_.arch, nullptr);
  }

  TensorMap encode_tensor_map(const TensorDescriptor& descriptor, int row_slices) override {
    return emu::encode_tensor_map(descriptor, row_slices);
  }

  void launch(LoadedKernel& kernel, const LaunchDims& dims, void** args, Stream&) override {
    auto& k = dynamic_cast<EmuKernel&>(kernel);
    const KernelReport& r = k.report();
    const Dim3& g = dims.grid;
    if (g.x == 0 || g.y == 0 || g.z == 0) fail("launch of {}: empty grid ({}, {}, {})", r.name, g.x, g.y, g.z);
    if (r.num_threads > kMaxThreadsPerCta) fail("launch of {}: {} threads per CTA exceeds {}", r.name, r.num_threads, kMaxThreadsPerCta);
    if (r.shared_bytes > info_.shared_per_block_optin)
      fail("launch of {}: {} bytes of shared memory exceed the device's {} per CTA", r.name, r.shared_bytes, info_.shared_per_block_optin);
    const Dim3& c = dims.cluster;
    if (c.x == 0 || c.y == 0 || c.z == 0 || g.x % c.x || g.y % c.y || g.z % c.z)
      fail("launch of {}: clusters of ({}, {}, {}) CTAs do not tile the grid ({}, {}, {})", r.name, c.x, c.y, c.z, g.x,
           g.y, g.z);
    if (uint64_t{c.x} * c.y * c.z > ir::kMaxClusterCtas)
      fail("launch of {}: a cluster of ({}, {}, {}) CTAs exceeds the portable {} CTAs", r.name, c.x, c.y, c.z,
           ir::kMaxClusterCtas);
    emu::Launch launch;
    launch.kernel = r.name;
    launch.entry = k.host().entry();
    launch.args = args;
    launch.grid = g;
    launch.cluster = c;
    launch.num_threads = r.num_threads;
    launch.shared_bytes = r.shared_bytes;
    launch.allocations = allocations_.snapshot();
    launch.racecheck = env_flag("TILEJIT_EMU_RACECHECK");
    run_ctas(launch);
  }

 private:
  void check_range(const void* p, size_t bytes, const char* what) const {
    if (bytes > 0 && !allocations_.covers(p, bytes))  // zero bytes touch nothing
      fail("emulator: {} [{}, +{} bytes) is not inside an allocation of this device", what, p, bytes);
  }

  // Clusters (single CTAs without them) in linear order, handed out to the workers one at a
  // time. After a failure no new cluster starts; the error reported is that of the first
  // failing cluster in linear order (every cluster before it was handed out earlier and ran
  // to its end), whatever the thread timing.
  void run_ctas(emu::Launch& launch) {
    const Dim3 g = launch.clusters();
    const uint64_t total = uint64_t(g.x) * g.y * g.z;
    std::atomic<uint64_t> next{0};
    std::mutex error_mutex;
    std::string error;
    uint64_t error_cluster = total;
    auto work = [&] {
      thread_local emu::CtaRunner runner;
      for (uint64_t i; (i = next.fetch_add(1)) < total && launch.failed_at.load() > i;) {
        Dim3 id{static_cast<uint32_t>(i % g.x), static_cast<uint32_t>(i / g.x % g.y), static_cast<uint32_t>(i / (uint64_t(g.x) * g.y))};
        std::string e;
        try {
          e = runner.run(launch, id, i);
        } catch (const Error& failure) {  // a worker thread must not let an exception escape
          e = failure.what();
        }
        if (e.empty()) continue;
        std::lock_guard lock(error_mutex);
        if (i < error_cluster) error = std::move(e), error_cluster = i;
        launch.failed_at = error_cluster;
      }
    };
    int helpers = static_cast<int>(std::min<uint64_t>(static_cast<uint64_t>(workers_), total)) - 1;
    std::vector<std::thread> threads;
    for (int i = 0; i < helpers; ++i) threads.emplace_back(work);
    work();
    for (auto& t : threads) t.join();
    if (!error.empty()) throw Error(error);
  }

  Stream default_stream_;
  codegen::HostSymbols symbols_;
  emu::AllocationTable allocations_;
  struct External {
    int imports = 0;
    bool added = false;  // whether the allocation table got the range for it
    size_t bytes = 0;    // the range added: the largest import's
  };
  std::mutex external_mutex_;
  std::map<const void*, External> external_;
  const codegen::Target& target_;
  int workers_ = 1;
};

// One emulator per target; each lives as long as the process.
EmuDevice& emulator_for(const std::string& arch) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<EmuDevice>> devices;
  const codegen::Target& target = codegen::find_target(arch);
  std::lock_guard lock(mutex);
  auto& device = devices[target.arch];
  if (!device) device = std::make_unique<EmuDevice>(target);
  return *device;
}

EmuDevice& default_emulator() {
  static EmuDevice& device = [] () -> EmuDevice& {
    const char* arch = std::getenv("TILEJIT_EMU_ARCH");
    return emulator_for(arch && *arch ? arch : "sm_90a");
  }();
  return device;
}

}  // namespace

Device& emu_device() { return default_emulator(); }
Device& emu_device(const std::string& arch) { return emulator_for(arch); }

std::shared_ptr<LoadedKernel> emu_load_llvm_ir(const std::string& llvm_ir, const std::string& kernel_name,
                                               int num_threads, int64_t dynamic_shared_bytes) {
  return default_emulator().load_llvm_ir(llvm_ir, kernel_name, num_threads, dynamic_shared_bytes);
}

}  // namespace tilejit
