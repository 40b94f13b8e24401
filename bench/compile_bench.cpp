// Cold compile time, DSL -> tile IR -> LLVM IR -> PTX, on the host CPU (no GPU involved):
// one kernel at a time, and 8 compiles in parallel on host threads.
#include <benchmark/benchmark.h>

#include <thread>

#include "codegen/compiler.h"
#include "ops/kernels/registry.h"

namespace {

using namespace tilejit;

void compile_once(const dsl::Kernel& kernel, const codegen::Target& target) {
  auto fn = kernel.trace(kernel.constants());
  auto compiled = codegen::compile_to_ptx(*fn, target);
  benchmark::DoNotOptimize(compiled.ptx.data());
}

void BM_Compile(benchmark::State& state, const std::string& name, const std::string& arch) {
  const dsl::Kernel& kernel = ops::find_kernel(name).kernel;
  const codegen::Target& target = codegen::find_target(arch);
  compile_once(kernel, target);  // loads libdevice and initializes LLVM once, outside the timing
  for (auto _ : state) compile_once(kernel, target);
  state.counters["kernels_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_CompileParallel8(benchmark::State& state, const std::string& name) {
  const dsl::Kernel& kernel = ops::find_kernel(name).kernel;
  const codegen::Target& target = codegen::find_target("sm_90a");
  compile_once(kernel, target);
  for (auto _ : state) {
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i) threads.emplace_back([&] { compile_once(kernel, target); });
    for (auto& t : threads) t.join();
  }
  state.counters["kernels_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * 8, benchmark::Counter::kIsRate);
}

BENCHMARK_CAPTURE(BM_Compile, gemm_sm90a, std::string("gemm"), std::string("sm_90a"))->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Compile, gemm_sm80, std::string("gemm"), std::string("sm_80"))->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Compile, softmax_sm90a, std::string("softmax"), std::string("sm_90a"))->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_CompileParallel8, gemm_sm90a, std::string("gemm"))->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
