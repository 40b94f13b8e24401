// Autotuning costs: tuning one shape end to end (configs ranked by the cost model, the top 8
// compiled in parallel, checked against the reference, timed, the result stored) for the
// example GEMM kernel, the library's gemm and its attention forward, on the emulator and on a
// GPU; the host's part of it (the problem each shape is tuned on: operands and reference);
// and a cold start from a cache pack (open the pack, look up the
// tuned config, find the compiled kernel: no trace, no LLVM, no assembler), with a pack of a
// few entries and one with thousands more (opening reads the index, not the entries).
//
// The emulator's compiled kernels are never cached, so each emulator iteration is a cold
// tuning run. On a GPU the process-wide kernel cache keeps compiled candidates; run with
// TILEJIT_CACHE_DISABLE=1 for cold compiles. The GPU's module load, the last step of a cold
// start, is runtime_bench's BM_ModuleLoadFromCacheCuda.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <limits>
#include <random>

#include "autotune/config_choice.h"
#include "autotune/device_runner.h"
#include "autotune/tuner.h"
#include "codegen/target.h"
#include "ops/tunable_ops.h"
#include "runtime/cuda/cuda_compile.h"
#include "runtime/kernel_cache.h"

namespace {

using namespace tilejit;
using namespace tilejit::autotune;

// `op`: a name `tilejit tune --op` takes (the library's ops run through their own launch paths).
void BM_TuneOneShape(benchmark::State& state, const std::string& op, const std::string& device_name,
                     const ProblemShape& shape) {
  if (device_name == "cuda" && Device::cuda_device_count() == 0) {
    state.SkipWithError(("no GPU: " + cuda_driver_status()).c_str());
    return;
  }
  Device& device = Device::by_name(device_name);
  const TunableKernel& tunable = ops::find_tunable_op(op);
  TuneResult last;
  for (auto _ : state) {
    KernelCache memory_only(CacheOptions{"", true});
    TuningDatabase db(memory_only);
    auto runner = make_candidate_runner(tunable, shape, device, TimingOptions::for_device(device.info()), 1);
    last = tune(tunable, shape, *runner, db);
  }
  state.counters["configs"] = last.configs;
  state.counters["timed"] = last.timed;
  state.counters["rejected"] = last.rejected;
  state.counters["best_ms"] = last.best ? last.best->ms : -1;
  state.SetLabel(fmt::format("{} on {}", shape.str(), device.info().name));
}
ProblemShape gemm_shape(int64_t size) { return ProblemShape{{{"M", size}, {"N", size}, {"K", size}}}; }
// Batch x query heads (one kv head each), queries, keys.
ProblemShape attention_shape(int64_t heads, int64_t tokens) {
  return ProblemShape{{{"BN", heads}, {"G", 1}, {"T", tokens}, {"S", tokens}}};
}

BENCHMARK_CAPTURE(BM_TuneOneShape, example_gemm_emu_128, std::string("gemm"), std::string("emu"), gemm_shape(128))
    ->Unit(benchmark::kSecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_TuneOneShape, example_gemm_cuda_4096, std::string("gemm"), std::string("cuda"), gemm_shape(4096))
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_TuneOneShape, gemm_bf16_nt_emu_128, std::string("gemm_bf16_nt"), std::string("emu"),
                  gemm_shape(128))
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_TuneOneShape, gemm_bf16_nt_cuda_4096, std::string("gemm_bf16_nt"), std::string("cuda"),
                  gemm_shape(4096))
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_TuneOneShape, attention_bf16_h64_emu_2x128, std::string("attention_bf16_h64"),
                  std::string("emu"), attention_shape(2, 128))
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_TuneOneShape, attention_bf16_h128_cuda_32x4096, std::string("attention_bf16_h128"),
                  std::string("cuda"), attention_shape(32, 4096))
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_TuneOneShape, attention_dkdv_bf16_h128_cuda_32x4096, std::string("attention_dkdv_bf16_h128"),
                  std::string("cuda"), attention_shape(32, 4096))
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

// The host's part of tuning one shape before any candidate runs: the random operands, the
// reference and the upload (here to the emulator, whose memory is the host's; a GPU adds the
// copy over PCIe, about 10 ms a GiB). A tuning run pays it for every shape: the largest of
// caches/gemm_shapes.txt below, and the largest attention shape.
void BM_MakeTuningProblem(benchmark::State& state, const std::string& op, const ProblemShape& shape) {
  Device& device = Device::by_name("emu");
  const TunableKernel& tunable = ops::find_tunable_op(op);
  for (auto _ : state)
    benchmark::DoNotOptimize(make_candidate_runner(tunable, shape, device, TimingOptions::for_device(device.info()), 1));
  state.SetLabel(shape.str());
}
BENCHMARK_CAPTURE(BM_MakeTuningProblem, gemm_bf16_nt_16384x28672x4096, std::string("gemm_bf16_nt"),
                  ProblemShape{{{"M", 16384}, {"N", 28672}, {"K", 4096}}})
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_MakeTuningProblem, gemm_bf16_nt_4096x4096x4096, std::string("gemm_bf16_nt"), gemm_shape(4096))
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_MakeTuningProblem, attention_bf16_h128_16x16384, std::string("attention_bf16_h128"),
                  attention_shape(16, 16384))
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(1);

// How close the cost model's top 8 come to the best of the whole space (the target: within 5%
// on the default shapes). One run builds, checks and times every config that meets the
// constraints, in the model's rank order; the top 8 are the first 8 that ran, as tune() takes
// them, so both bests come from the same measurements.
void BM_TopKAgainstExhaustive(benchmark::State& state, const std::string& op, const std::string& device_name,
                              const ProblemShape& shape) {
  if (device_name == "cuda" && Device::cuda_device_count() == 0) {
    state.SkipWithError(("no GPU: " + cuda_driver_status()).c_str());
    return;
  }
  Device& device = Device::by_name(device_name);
  const TunableKernel& tunable = ops::find_tunable_op(op);
  const int top_k = TuneOptions{}.top_k;
  TuneResult all;
  for (auto _ : state) {
    KernelCache memory_only(CacheOptions{"", true});
    TuningDatabase db(memory_only);
    auto runner = make_candidate_runner(tunable, shape, device, TimingOptions::for_device(device.info()), 1);
    TuneOptions every;
    every.top_k = std::numeric_limits<int>::max();
    all = tune(tunable, shape, *runner, db, every);
  }
  double top_k_ms = 0, best_ms = 0;
  int places = 0;
  for (const CandidateResult& c : all.candidates) {
    const bool ok = c.trial.status == TrialStatus::ok;
    if (ok && (best_ms == 0 || c.trial.ms < best_ms)) best_ms = c.trial.ms;
    if (places < top_k && ok && (top_k_ms == 0 || c.trial.ms < top_k_ms)) top_k_ms = c.trial.ms;
    if (takes_a_top_k_place(c.trial.status)) ++places;
  }
  state.counters["timed"] = all.timed;
  state.counters["top_k_ms"] = top_k_ms;
  state.counters["exhaustive_ms"] = best_ms;
  state.counters["top_k_over_best"] = best_ms > 0 ? top_k_ms / best_ms : 0;
  state.SetLabel(fmt::format("{} {} on {}", op, shape.str(), device.info().name));
}
BENCHMARK_CAPTURE(BM_TopKAgainstExhaustive, gemm_bf16_nt_emu_96, std::string("gemm_bf16_nt"), std::string("emu"),
                  gemm_shape(96))
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_TopKAgainstExhaustive, gemm_bf16_nt_cuda_4096, std::string("gemm_bf16_nt"),
                  std::string("cuda"), gemm_shape(4096))
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_TopKAgainstExhaustive, gemm_f8e4m3_nt_cuda_8192x8192x4096, std::string("gemm_f8e4m3_nt"),
                  std::string("cuda"), ProblemShape{{{"M", 8192}, {"N", 8192}, {"K", 4096}}})
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_TopKAgainstExhaustive, attention_bf16_h128_cuda_32x4096, std::string("attention_bf16_h128"),
                  std::string("cuda"), attention_shape(32, 4096))
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

// A pack made from a cache holding the GEMM's tuned config and its sm_90a image, plus
// `filler` other entries of 16 KiB.
struct GemmPack {
  std::string path;
  TuningKey key;
  ProblemShape shape;
};

GemmPack make_gemm_pack(const std::filesystem::path& dir, int filler) {
  const TunableKernel& gemm = ops::find_tunable_op("gemm");
  ProblemShape shape{{{"M", 4096}, {"N", 4096}, {"K", 4096}}};
  DeviceInfo h100;
  h100.name = "NVIDIA H100 80GB HBM3";
  h100.arch = "sm_90a";
  h100.sm_count = 132;
  GemmPack pack{(dir / "gemm.tjpack").string(), TuningKey::of(gemm, shape, h100), shape};
  KernelCache made(CacheOptions{(dir / "made").string(), true});
  Config best = gemm.heuristic_config(shape, h100);
  dsl::Kernel kernel = gemm.kernel();
  dsl::Constants constants = kernel.constants(best.values);
  KernelRequest request{&kernel, &constants, kernel.aligned_facts()};
  KernelReport built = cuda::compile_cuda_kernel(request, codegen::find_target("sm_90a"), made).report;
  TuningDatabase(made).offer_best(pack.key, {best, 1.0, shape, 0, built.cache_entries});
  std::mt19937 rng(1);
  for (int i = 0; i < filler; ++i) {
    std::string value(16 * 1024, '\0');
    for (char& c : value) c = static_cast<char>(rng());
    made.put(cache_key({"filler", std::to_string(i)}), "filler", std::move(value));
  }
  write_cache_pack(made, PackManifest::current("sm_90a", h100.name), pack.path);
  return pack;
}

// From nothing in memory and an empty local cache to the kernel image of the tuned config. The
// local cache is in memory only (local_dir:0) or an empty directory (local_dir:1), whose
// misses, each counted in its stats file, come before the pack's hits.
void BM_ColdStartFromPack(benchmark::State& state) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "tilejit_bench_pack";
  std::filesystem::remove_all(dir);
  GemmPack pack = make_gemm_pack(dir, static_cast<int>(state.range(0)));
  const TunableKernel& gemm = ops::find_tunable_op("gemm");
  dsl::Kernel kernel = gemm.kernel();
  const codegen::Target& target = codegen::find_target("sm_90a");
  for (auto _ : state) {
    KernelCache empty(CacheOptions{state.range(1) ? (dir / "local").string() : "", true});
    empty.attach_pack(CachePack::open(pack.path, PackRequirements::for_arch("sm_90a")));
    auto best = result_serving(gemm, pack.shape, TuningDatabase(empty).results(pack.key));
    if (!best) state.SkipWithError("the tuned config is not in the pack");
    dsl::Constants constants = kernel.constants(best->config.values);
    KernelRequest request{&kernel, &constants, kernel.aligned_facts()};
    cuda::CudaKernelImage image = cuda::compile_cuda_kernel(request, target, empty);
    if (!image.report.from_disk_cache) state.SkipWithError("the kernel was compiled, not found in the pack");
    benchmark::DoNotOptimize(image.cubin.data());
  }
  state.counters["pack_MiB"] = double(std::filesystem::file_size(pack.path)) / (1 << 20);
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_ColdStartFromPack)
    ->ArgsProduct({{0, 4000}, {0, 1}})
    ->ArgNames({"filler", "local_dir"})
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
