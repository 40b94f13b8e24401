// What a fence.proxy.async costs beside memory operations still in flight, on the GPU. ptxas
// turns each `fence.proxy.async.shared::cta` into MEMBAR.ALL.CTA and FENCE.VIEW.ASYNC.S, and a
// membar orders the thread's earlier memory operations after it: if that means waiting for
// the global loads the thread has in flight, a loop that prefetches into registers across a
// fence gains nothing from the prefetch (scaled_dot's MX loop loads the next block's scales so,
// with three fences a step), and a cp.async pipeline would fare the same if it waits for
// those. The kernels are hand-written PTX, one CTA of 128 threads per SM; each step of their
// loop issues a copy of one word for the step kDepth steps later, stores a word to shared
// memory, fences (or not), and consumes the copy issued kDepth steps before:
//   load/no_fence       kDepth loads in flight: a step costs a load's latency / kDepth or less
//   load/fence          the same with the fence: about a load's latency a step if it drains them
//   cp_async/no_fence   the copies by cp.async into shared memory
//   cp_async/fence      ... and fenced
//   none/fence          the fence alone
// Reported per step: `ns_per_step`.
#include <benchmark/benchmark.h>

#include <cuda.h>

#include <string>

#include "runtime/cuda/driver_api.h"

namespace {

using tilejit::cuda::driver;

constexpr int kDepth = 8;         // copies in flight
constexpr int kThreads = 128;
constexpr int kSteps = 1 << 14;   // a multiple of kDepth
constexpr int kBufferWords = 1 << 23;  // 32 MiB: L2-resident after the first pass on an H100

enum class Copy { none, load, cp_async };

// The probe kernel: %rd1 walks the buffer by one word per thread of the grid each step.
std::string probe_ptx(Copy copy, bool fence) {
  std::string p = R"(.version 8.0
.target sm_90a
.address_size 64
.shared .align 16 .b32 slots[)" + std::to_string(kDepth * kThreads) + R"(];
.shared .align 16 .b32 words[)" + std::to_string(kThreads) + R"(];
.visible .entry probe(.param .u64 src, .param .u64 dst, .param .u32 steps) {
  .reg .pred %p;
  .reg .b32 %r<32>;
  .reg .b64 %rd<16>;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [dst];
  ld.param.u32 %r1, [steps];
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %nctaid.x;
  mad.lo.u32 %r5, %r3, )" + std::to_string(kThreads) + R"(, %r2;
  mul.lo.u32 %r6, %r4, )" + std::to_string(kThreads) + R"(;
  mov.u32 %r7, 0;
  mov.u32 %r8, 0;
  shl.b32 %r9, %r2, 2;
  mov.u32 %r10, words;
  add.u32 %r10, %r10, %r9;
  mov.u32 %r11, slots;
  add.u32 %r11, %r11, %r9;
)";
  // The word of step `s` (a register) for this thread: (s * grid threads + thread) mod buffer.
  auto address = [&](const char* step) {
    return std::string("  mad.lo.u32 %r12, ") + step + ", %r6, %r5;\n  and.b32 %r12, %r12, " +
           std::to_string(kBufferWords - 1) + ";\n  mul.wide.u32 %rd3, %r12, 4;\n  add.u64 %rd4, %rd1, %rd3;\n";
  };
  auto slot = [&](int i) { return "[%r11+" + std::to_string(i * kThreads * 4) + "]"; };
  auto issue = [&](int i) {  // the copy of step %r13 into slot / register i
    std::string s = address("%r13");
    if (copy == Copy::load) s += "  ld.global.u32 %r" + std::to_string(16 + i) + ", [%rd4];\n";
    if (copy == Copy::cp_async)
      s += "  cp.async.ca.shared.global " + slot(i) + ", [%rd4], 4;\n  cp.async.commit_group;\n";
    return s + "  add.u32 %r13, %r13, 1;\n";
  };
  auto consume = [&](int i) {  // the copy in slot / register i, issued kDepth steps ago
    if (copy == Copy::load) return "  add.u32 %r7, %r7, %r" + std::to_string(16 + i) + ";\n";
    if (copy == Copy::cp_async)
      return "  cp.async.wait_group " + std::to_string(kDepth - 1) + ";\n  ld.shared.u32 %r14, " + slot(i) +
             ";\n  add.u32 %r7, %r7, %r14;\n";
    return std::string();
  };
  p += "  mov.u32 %r13, 0;\n";
  for (int i = 0; i < kDepth; ++i) p += issue(i);
  p += "LOOP:\n";
  for (int i = 0; i < kDepth; ++i) {  // kDepth steps, unrolled so each copy has a register
    p += consume(i);
    p += issue(i);
    p += "  st.shared.u32 [%r10], %r8;\n";
    if (fence) p += "  fence.proxy.async.shared::cta;\n";
    p += "  add.u32 %r8, %r8, 1;\n";
  }
  p += "  setp.lt.u32 %p, %r8, %r1;\n  @%p bra LOOP;\n";
  if (copy == Copy::cp_async) p += "  cp.async.wait_all;\n";
  p += "  mul.wide.u32 %rd5, %r5, 4;\n  add.u64 %rd6, %rd2, %rd5;\n  st.global.u32 [%rd6], %r7;\n  ret;\n}\n";
  return p;
}

void BM_ProxyFence(benchmark::State& state, Copy copy, bool fence) {
  if (!tilejit::cuda_driver_available()) {
    state.SkipWithError("no CUDA driver");
    return;
  }
  const auto& cu = driver();
  int devices = 0;
  if (cu.cuDeviceGetCount(&devices) != CUDA_SUCCESS || devices == 0) {
    state.SkipWithError("no GPU");
    return;
  }
  CUdevice dev;
  CUcontext ctx;
  TJ_CU(cuDeviceGet, &dev, 0);
  int major = 0, sms = 0;
  TJ_CU(cuDeviceGetAttribute, &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  TJ_CU(cuDeviceGetAttribute, &sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  if (major != 9) {
    state.SkipWithError("the probe is sm_90a PTX");
    return;
  }
  TJ_CU(cuDevicePrimaryCtxRetain, &ctx, dev);
  TJ_CU(cuCtxSetCurrent, ctx);
  const std::string ptx = probe_ptx(copy, fence);
  CUmodule module;
  CUfunction fn;
  TJ_CU(cuModuleLoadDataEx, &module, ptx.c_str(), 0, nullptr, nullptr);
  TJ_CU(cuModuleGetFunction, &fn, module, "probe");
  CUdeviceptr src, dst;
  TJ_CU(cuMemAlloc, &src, size_t(kBufferWords) * 4);
  TJ_CU(cuMemAlloc, &dst, size_t(sms) * kThreads * 4);
  TJ_CU(cuMemsetD8Async, src, 1, size_t(kBufferWords) * 4, nullptr);
  unsigned steps = kSteps;
  void* args[] = {&src, &dst, &steps};
  CUevent start, stop;
  TJ_CU(cuEventCreate, &start, CU_EVENT_DEFAULT);
  TJ_CU(cuEventCreate, &stop, CU_EVENT_DEFAULT);
  auto launch = [&] { TJ_CU(cuLaunchKernel, fn, unsigned(sms), 1, 1, kThreads, 1, 1, 0, nullptr, args, nullptr); };
  launch();  // warm-up: the buffer into L2, the module loaded
  for (auto _ : state) {
    TJ_CU(cuEventRecord, start, nullptr);
    launch();
    TJ_CU(cuEventRecord, stop, nullptr);
    TJ_CU(cuEventSynchronize, stop);
    float ms = 0;
    TJ_CU(cuEventElapsedTime, &ms, start, stop);
    state.SetIterationTime(ms * 1e-3);
    state.counters["ns_per_step"] = ms * 1e6 / kSteps;
  }
  TJ_CU(cuEventDestroy, start);
  TJ_CU(cuEventDestroy, stop);
  TJ_CU(cuMemFree, src);
  TJ_CU(cuMemFree, dst);
  TJ_CU(cuModuleUnload, module);
  TJ_CU(cuDevicePrimaryCtxRelease, dev);
}

BENCHMARK_CAPTURE(BM_ProxyFence, load/no_fence, Copy::load, false)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ProxyFence, load/fence, Copy::load, true)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ProxyFence, cp_async/no_fence, Copy::cp_async, false)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ProxyFence, cp_async/fence, Copy::cp_async, true)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ProxyFence, none/fence, Copy::none, true)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
