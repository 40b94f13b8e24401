// GEMM speed against cuBLASLt in the same binary, on a GPU (skipped without one): bf16 and
// f16 4096³ and 8192³, tf32 4096³, fp8 e4m3 8192 x 8192 x 4096 and int8 4096³ (B as (N, K),
// the layout cuBLASLt's fp8 and int8 kernels take). Each iteration is one call timed between
// events on the stream; the TFLOP/s counter is 2·M·N·K over that time.
//
//   gemm_bench --benchmark_filter=bf16 --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include <random>

#include "bench/cublaslt_peer.h"
#include "ops/common/host_values.h"
#include "ops/gemm.h"

namespace {

using namespace tilejit;

struct GemmCase {
  DType operands, out;
  int64_t m, n, k;
  bool b_transposed = false;
  dsl::Precision precision = dsl::Precision::tf32;
};

struct Operands {
  Tensor a, b, out;
};

Operands make_operands(Device& gpu, const GemmCase& c) {
  std::mt19937_64 rng(42);
  auto random = [&](std::vector<int64_t> shape) {
    Tensor t = Tensor::empty(gpu, c.operands, shape);
    std::vector<uint8_t> bytes = ops::random_elements(c.operands, t.numel(), rng);
    t.copy_from_host(bytes.data(), bytes.size());
    return t;
  };
  Tensor a = random({c.m, c.k});
  Tensor b = c.b_transposed ? random({c.n, c.k}) : random({c.k, c.n});
  return {a, b, Tensor::empty(gpu, c.out, {c.m, c.n})};
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

void BM_Tilejit(benchmark::State& state, GemmCase c) {
  if (skip_without_gpu(state)) return;
  Device& gpu = Device::cuda(0);
  Operands x = make_operands(gpu, c);
  ops::GemmOptions o;
  o.transpose_b = c.b_transposed;
  o.out_dtype = c.out;
  o.precision = c.precision;
  time_on_gpu(state, gpu, c, [&](Stream& s) { ops::gemm(x.a, x.b, x.out, o, &s); });
}

void BM_CublasLt(benchmark::State& state, GemmCase c) {
  if (skip_without_gpu(state)) return;
  Device& gpu = Device::cuda(0);
  Operands x = make_operands(gpu, c);
  try {
    bench::CublasLtGemm peer(gpu, {c.operands, c.out, c.operands == DType::f32, c.m, c.n, c.k, c.b_transposed});
    state.SetLabel(peer.version());
    time_on_gpu(state, gpu, c, [&](Stream& s) { peer.run(x.a, x.b, x.out, s); });
  } catch (const Error& e) {
    state.SkipWithError(e.what());
  }
}

void register_case(const std::string& name, const GemmCase& c) {
  benchmark::RegisterBenchmark(("tilejit/" + name).c_str(), BM_Tilejit, c)->UseManualTime()->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark(("cublaslt/" + name).c_str(), BM_CublasLt, c)->UseManualTime()->Unit(benchmark::kMicrosecond);
}

}  // namespace

int main(int argc, char** argv) {
  register_case("bf16_4096", {DType::bf16, DType::bf16, 4096, 4096, 4096});
  register_case("bf16_8192", {DType::bf16, DType::bf16, 8192, 8192, 8192});
  register_case("f16_4096", {DType::f16, DType::f16, 4096, 4096, 4096});
  register_case("tf32_4096", {DType::f32, DType::f32, 4096, 4096, 4096});
  register_case("fp8_e4m3_8192x8192x4096", {DType::f8e4m3, DType::bf16, 8192, 8192, 4096, true});
  register_case("int8_4096", {DType::i8, DType::i32, 4096, 4096, 4096, true});
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
