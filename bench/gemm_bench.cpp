// GEMM speed against cuBLASLt in the same binary, on a GPU (skipped without one): bf16 and
// f16 4096³ and 8192³, tf32 4096³, fp8 e4m3 8192 x 8192 x 4096 (both ways each: each K
// block's product added in f32, and fast accumulation, .../fast_accum) and int8 4096³ (B as
// (N, K), the layout cuBLASLt's fp8 and int8 kernels take) and 8192³, and FJFormer's q_matmul_int8
// on bf16 4096³ and 8192³ end to end (both operands quantized in the call, then the i8 product
// dequantized), whose peer is cuBLASLt's int8 product of the same size alone. Each iteration is
// one call timed between events on the stream; the TFLOP/s counter is 2·M·N·K over that time.
// tilejit_schedule/... runs the heuristic's tiles in each schedule of the sm_90 pipeline: as they are, with a
// producer warpgroup, persistent with one, and those two in clusters of two CTAs that share B
// by TMA multicast (see schedule_config).
//
//   gemm_bench --benchmark_filter=bf16 --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include <map>
#include <random>
#include <string>

#include <fmt/format.h>

#include "bench/cublaslt_peer.h"
#include "ops/common/host_values.h"
#include "ops/gemm.h"
#include "ops/gemm/gemm_launch.h"
#include "ops/int8.h"

namespace {

using namespace tilejit;

struct GemmCase {
  DType operands, out;
  int64_t m, n, k;
  bool b_transposed = false;
  dsl::Precision precision = dsl::Precision::tf32;
  bool fast_accumulation = false;  // fp8: chained in the tensor cores' own sum
};

struct Operands {
  Tensor a, b, out;
};

std::map<std::string, Operands> operand_sets;  // emptied in main, while the driver is still up

// One set of random operands per problem, made at its first use and shared by every
// benchmark and repetition of it: drawing 8192 x 8192 random elements on the host takes
// seconds, longer than the timing itself.

const Operands& operands_for(Device& gpu, const GemmCase& c) {
  std::string key = fmt::format("{} {} {}x{}x{} {}", dtype_name(c.operands), dtype_name(c.out), c.m, c.n, c.k,
                                c.b_transposed ? "(N, K)" : "(K, N)");
  if (auto it = operand_sets.find(key); it != operand_sets.end()) return it->second;
  std::mt19937_64 rng(42);
  auto random = [&](std::vector<int64_t> shape) {
    Tensor t = Tensor::empty(gpu, c.operands, shape);
    std::vector<uint8_t> bytes = ops::random_elements(c.operands, t.numel(), rng);
    t.copy_from_host(bytes.data(), bytes.size());
    return t;
  };
  Tensor a = random({c.m, c.k});
  Tensor b = c.b_transposed ? random({c.n, c.k}) : random({c.k, c.n});
  return operand_sets.emplace(key, Operands{a, b, Tensor::empty(gpu, c.out, {c.m, c.n})}).first->second;
}

// Times `call` once per iteration between events; reports TFLOP/s.
void time_on_gpu(benchmark::State& state, Device& gpu, const GemmCase& c, const std::function<void(Stream&)>& call) {
  Stream& s = gpu.default_stream();
  for (int i = 0; i < 3; ++i) call(s);  // compiled, loaded, clocks up
  s.synchronize();
  Event start = gpu.create_event(), stop = gpu.create_event();
  for (auto _ : state) {
    start.record(s);
    call(s);
    stop.record(s);
    stop.synchronize();
    state.SetIterationTime(start.elapsed_ms(stop) / 1e3);
  }
  double flops = 2.0 * static_cast<double>(c.m) * static_cast<double>(c.n) * static_cast<double>(c.k);
  state.counters["TFLOP/s"] = benchmark::Counter(flops / 1e12, benchmark::Counter::kIsIterationInvariantRate);
}

bool skip_without_gpu(benchmark::State& state) {
  if (Device::cuda_device_count() > 0) return false;
  state.SkipWithError(("no GPU: " + cuda_driver_status()).c_str());
  return true;
}

ops::GemmOptions options_of(const GemmCase& c) {
  ops::GemmOptions o;
  o.transpose_b = c.b_transposed;
  o.out_dtype = c.out;
  o.precision = c.precision;
  o.fp8_fast_accumulation = c.fast_accumulation;
  return o;
}

void BM_Tilejit(benchmark::State& state, GemmCase c) {
  if (skip_without_gpu(state)) return;
  Device& gpu = Device::cuda(0);
  const Operands& x = operands_for(gpu, c);
  ops::GemmOptions o = options_of(c);
  time_on_gpu(state, gpu, c, [&](Stream& s) { ops::gemm(x.a, x.b, x.out, o, &s); });
}

// The whole of q_matmul_int8: a (M, K) and w (K, N) in bf16 quantized per row / column, the i8
// product, its dequantizing epilogue.
void BM_QMatmulInt8(benchmark::State& state, GemmCase c) {
  if (skip_without_gpu(state)) return;
  Device& gpu = Device::cuda(0);
  const Operands& x = operands_for(gpu, c);
  time_on_gpu(state, gpu, c, [&](Stream& s) { ops::q_matmul_int8(x.a, x.b, x.out, &s); });
}

enum class Schedule {
  pipelined,
  warp_specialized,
  persistent_warp_specialized,
  clustered_warp_specialized,
  clustered_persistent_warp_specialized
};

namespace gd = ops::gemm_detail;

// The heuristic's config for `p` in `schedule`, with the deepest pipeline (from the
// heuristic's down to two stages) that fits the device: persistent with a producer, the
// epilogue's scratch cannot reuse the operand rings, which the producer refills meanwhile.
gd::GemmConfig schedule_config(const gd::GemmProblem& p, Schedule schedule, Device& gpu) {
  gd::GemmConfig config = gd::heuristic_gemm_config(p, gpu.info());
  config.warp_specialize = schedule != Schedule::pipelined;
  config.persistent = schedule == Schedule::persistent_warp_specialized ||
                      schedule == Schedule::clustered_persistent_warp_specialized;
  bool clustered = schedule == Schedule::clustered_warp_specialized ||
                   schedule == Schedule::clustered_persistent_warp_specialized;
  config.cluster_m = clustered ? 2 : 1;
  Tensor workspace_like = Tensor::empty(gpu, p.features.accumulator(), {1});
  auto fits = [&] {
    try {
      return gd::prepare_gemm_with(p, config, gpu, workspace_like).shared_bytes <= gpu.info().shared_per_block_optin;
    } catch (const Error&) {
      return false;
    }
  };
  while (config.num_stages > 2 && !fits()) --config.num_stages;
  return config;
}

void BM_TilejitSchedule(benchmark::State& state, GemmCase c, Schedule schedule) {
  if (skip_without_gpu(state)) return;
  Device& gpu = Device::cuda(0);
  const Operands& x = operands_for(gpu, c);
  ops::GemmOptions o = options_of(c);  // the problem points to it
  gd::GemmProblem p = gd::check_gemm(x.a, x.b, o, &x.out);
  gd::set_output(p, x.out);
  try {
    gd::GemmConfig config = schedule_config(p, schedule, gpu);
    state.SetLabel(fmt::format("{}x{}x{} tiles, {} warps{}, {} stages{}", config.block_m, config.block_n,
                               config.block_k, config.num_warps,
                               config.warp_specialize ? " + a producer warpgroup" : "", config.num_stages,
                               config.cluster_m > 1 ? ", clusters of 2" : ""));
    time_on_gpu(state, gpu, c, [&](Stream& s) { gd::launch_gemm_with(p, config, s); });
  } catch (const Error& e) {
    state.SkipWithError(e.what());
  }
}

void BM_CublasLt(benchmark::State& state, GemmCase c) {
  if (skip_without_gpu(state)) return;
  Device& gpu = Device::cuda(0);
  const Operands& x = operands_for(gpu, c);
  try {
    bench::CublasLtGemm peer(
        gpu, {c.operands, c.out, c.operands == DType::f32, c.m, c.n, c.k, c.b_transposed, c.fast_accumulation});
    state.SetLabel(peer.version());
    time_on_gpu(state, gpu, c, [&](Stream& s) { peer.run(x.a, x.b, x.out, s); });
  } catch (const Error& e) {
    state.SkipWithError(e.what());
  }
}

void register_case(const std::string& name, const GemmCase& c) {
  benchmark::RegisterBenchmark(("tilejit/" + name).c_str(), BM_Tilejit, c)->UseManualTime()->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark(("cublaslt/" + name).c_str(), BM_CublasLt, c)
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
  // fp8 the other way too: both libraries add each K block's product into f32 registers by
  // default; fast accumulation chains all of K in the tensor cores' own sum.
  if (c.operands != DType::f8e4m3 || c.fast_accumulation) return;
  GemmCase fast = c;
  fast.fast_accumulation = true;
  register_case(name + "/fast_accum", fast);
}

void register_schedules(const std::string& name, const GemmCase& c) {
  for (auto [schedule, label] : {std::pair{Schedule::pipelined, "pipelined"},
                                 std::pair{Schedule::warp_specialized, "warp_specialized"},
                                 std::pair{Schedule::persistent_warp_specialized, "persistent_warp_specialized"},
                                 std::pair{Schedule::clustered_warp_specialized, "clustered_warp_specialized"},
                                 std::pair{Schedule::clustered_persistent_warp_specialized,
                                           "clustered_persistent_warp_specialized"}})
    benchmark::RegisterBenchmark(("tilejit_schedule/" + name + "/" + label).c_str(), BM_TilejitSchedule, c, schedule)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
}

}  // namespace

int main(int argc, char** argv) {
  register_case("bf16_4096", {DType::bf16, DType::bf16, 4096, 4096, 4096});
  register_case("bf16_8192", {DType::bf16, DType::bf16, 8192, 8192, 8192});
  register_case("f16_4096", {DType::f16, DType::f16, 4096, 4096, 4096});
  register_case("tf32_4096", {DType::f32, DType::f32, 4096, 4096, 4096});
  register_case("fp8_e4m3_8192x8192x4096", {DType::f8e4m3, DType::bf16, 8192, 8192, 4096, true});
  register_case("int8_4096", {DType::i8, DType::i32, 4096, 4096, 4096, true});
  register_case("int8_8192", {DType::i8, DType::i32, 8192, 8192, 8192, true});
  for (int64_t size : {4096, 8192})
    benchmark::RegisterBenchmark(fmt::format("tilejit/q_matmul_int8_bf16_{}", size).c_str(), BM_QMatmulInt8,
                                 GemmCase{DType::bf16, DType::bf16, size, size, size})
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  register_schedules("bf16_8192", {DType::bf16, DType::bf16, 8192, 8192, 8192});
  register_schedules("fp8_e4m3_8192x8192x4096", {DType::f8e4m3, DType::bf16, 8192, 8192, 4096, true});
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  operand_sets.clear();
  benchmark::Shutdown();
  return 0;
}
