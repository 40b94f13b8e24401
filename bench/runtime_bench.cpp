// The runtime's costs: warm launch host overhead and module load from the kernel cache on a
// GPU (skipped without one), a cold start's cache lookup with no compiler work (CPU only),
// and the emulator's throughput (elementwise elements/s, SIMT GEMM FLOP/s).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "codegen/target.h"
#include "ops/kernels/examples.h"
#include "runtime/cuda/cuda_compile.h"
#include "runtime/jit.h"
#include "runtime/kernel_cache.h"
#include "runtime/tensor.h"

namespace {

using namespace tilejit;

bool skip_without_gpu(benchmark::State& state) {
  if (Device::cuda_device_count() > 0) return false;
  state.SkipWithError(("no GPU: " + cuda_driver_status()).c_str());
  return true;
}

// Host time of one launch call, from the call to the driver's return: batches of launches of
// a one-CTA kernel, synchronizing (untimed) between batches so the queue never fills.
void BM_WarmLaunchCuda(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  Device& gpu = Device::cuda(0);
  JitKernel add(ops::vector_add_kernel());
  BoundKernel k = add.with({{"BLOCK", 128}});
  Tensor x = Tensor::empty(gpu, DType::f32, {128}), out = Tensor::empty(gpu, DType::f32, {128});
  Stream& s = gpu.default_stream();
  k.launch(s, {1}, x, x, out, int32_t{128});
  s.synchronize();
  constexpr int kBatch = 256;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kBatch; ++i) k.launch(s, {1}, x, x, out, int32_t{128});
    auto stop = std::chrono::steady_clock::now();
    s.synchronize();
    state.SetIterationTime(std::chrono::duration<double>(stop - start).count() / kBatch);
  }
}
BENCHMARK(BM_WarmLaunchCuda)->UseManualTime()->Unit(benchmark::kMicrosecond);

// A cold start's lookup: a new cache object (nothing in memory) on a directory holding the
// kernel, then the two-level lookup; no trace, no LLVM, no assembler.
void BM_ColdStartCacheLookup(benchmark::State& state) {
  std::string dir = (std::filesystem::temp_directory_path() / "tilejit_bench_cache").string();
  std::filesystem::remove_all(dir);
  dsl::Kernel kernel = ops::gemm_kernel();
  dsl::Constants constants = kernel.constants();
  KernelRequest request{&kernel, &constants, kernel.aligned_facts()};
  const codegen::Target& target = codegen::find_target("sm_90a");
  {
    KernelCache warm(CacheOptions{dir, true});
    cuda::compile_cuda_kernel(request, target, warm);
  }
  for (auto _ : state) {
    KernelCache cache(CacheOptions{dir, true});
    cuda::CudaKernelImage image = cuda::compile_cuda_kernel(request, target, cache);
    if (!image.report.from_disk_cache) state.SkipWithError("the kernel was not served from the disk cache");
    benchmark::DoNotOptimize(image.cubin.data());
  }
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_ColdStartCacheLookup)->Unit(benchmark::kMicrosecond);

// A new kernel object's first launch preparation on the GPU when the cache holds the binary:
// cache lookup plus module load.
void BM_ModuleLoadFromCacheCuda(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  Device& gpu = Device::cuda(0);
  Tensor x = Tensor::empty(gpu, DType::f32, {1024});
  const KernelArg args[] = {x, x, x, int32_t{1024}};
  JitKernel(ops::vector_add_kernel()).with().prepare(gpu, args);
  for (auto _ : state) benchmark::DoNotOptimize(JitKernel(ops::vector_add_kernel()).with().prepare(gpu, args));
}
BENCHMARK(BM_ModuleLoadFromCacheCuda)->Unit(benchmark::kMicrosecond);

void BM_EmulatorVectorAdd(benchmark::State& state) {
  Device& emu = Device::emu();
  const auto n = static_cast<int32_t>(state.range(0));
  JitKernel add(ops::vector_add_kernel());
  Tensor x = Tensor::empty(emu, DType::f32, {n}), out = Tensor::empty(emu, DType::f32, {n});
  x.fill_bytes(0);
  auto grid = static_cast<uint32_t>((n + 1023) / 1024);
  add.launch(emu.default_stream(), {grid}, x, x, out, n);  // compile outside the timing
  for (auto _ : state) add.launch(emu.default_stream(), {grid}, x, x, out, n);
  state.counters["elements_per_s"] = benchmark::Counter(double(n) * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EmulatorVectorAdd)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

void BM_EmulatorGemm(benchmark::State& state) {
  Device& emu = Device::emu();
  const auto n = static_cast<int32_t>(state.range(0));
  JitKernel gemm(ops::gemm_kernel());
  Tensor a = Tensor::empty(emu, DType::f32, {n, n}), c = Tensor::empty(emu, DType::f32, {n, n});
  a.fill_bytes(0);
  auto grid = static_cast<uint32_t>((n + 63) / 64);
  auto run = [&] { gemm.launch(emu.default_stream(), {grid, grid}, a, a, c, n, n, n, n, n, n); };
  run();
  for (auto _ : state) run();
  state.counters["FLOP_per_s"] = benchmark::Counter(2.0 * n * n * n * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EmulatorGemm)->Arg(512)->Unit(benchmark::kMillisecond)->Iterations(2);

}  // namespace

BENCHMARK_MAIN();
