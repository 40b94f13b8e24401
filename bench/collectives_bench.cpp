// The collectives' costs. On a GPU (skipped without one, or without NCCL): what reduce_scatter
// adds over a raw ncclReduceScatter of the same bytes, measured interleaved in one run on a
// world of one rank (host time per call, and time per call with the device's work at 64 MiB),
// and the packing kernel against a device-to-device copy of the same bytes. Everywhere: the
// emulated ranks' throughput.
#include <benchmark/benchmark.h>

#include <chrono>

#include "ops/collectives.h"
#include "ops/collectives/chunk_transpose.h"
#include "runtime/nccl/nccl_api.h"
#include "runtime/nccl/nccl_comm.h"
#include "runtime/tensor.h"

namespace {

using namespace tilejit;
using Clock = std::chrono::steady_clock;

bool skip_without_gpu(benchmark::State& state) {
  if (Device::cuda_device_count() > 0) return false;
  state.SkipWithError(("no GPU: " + cuda_driver_status()).c_str());
  return true;
}

bool skip_without_gpu_or_nccl(benchmark::State& state) {
  if (skip_without_gpu(state)) return true;
  if (nccl::available()) return false;
  state.SkipWithError(("no NCCL: " + nccl::status()).c_str());
  return true;
}

// A world of one NCCL rank on the GPU, made with NCCL's own calls: the baseline.
class RawNcclComm {
 public:
  explicit RawNcclComm(Device& gpu) {
    gpu.synchronize();  // makes the GPU's context current on this thread, for NCCL
    const nccl::NcclApi& api = nccl::api();
    ncclUniqueId id;
    check(api.ncclGetUniqueId(&id), "ncclGetUniqueId");
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;  // blocking, as most programs use NCCL
    check(api.ncclCommInitRankConfig(&comm_, 1, id, 0, &config), "ncclCommInitRankConfig");
  }
  ~RawNcclComm() { nccl::api().ncclCommDestroy(comm_); }
  ncclComm_t get() const { return comm_; }
  static void check(ncclResult_t r, const char* call) {
    if (r != ncclSuccess) throw Error(nccl::describe_failure(r, call, nullptr));
  }

 private:
  ncclComm_t comm_ = nullptr;
};

struct CallTimes {
  double enqueue_s = 0;  // host time of the calls
  double total_s = 0;    // until the stream finished them
};

// `calls` calls of `call` back to back on `stream`, from an idle stream.
template <typename Call>
CallTimes time_calls(Stream& stream, int calls, const Call& call) {
  stream.synchronize();
  auto start = Clock::now();
  for (int i = 0; i < calls; ++i) call();
  auto enqueued = Clock::now();
  stream.synchronize();
  auto done = Clock::now();
  return {std::chrono::duration<double>(enqueued - start).count(), std::chrono::duration<double>(done - start).count()};
}

void BM_ReduceScatterOverRawNccl(benchmark::State& state) {
  if (skip_without_gpu_or_nccl(state)) return;
  const int64_t n = state.range(0) / 4;
  Device& gpu = Device::cuda(0);
  std::vector<ops::Communicator> comms = ops::Communicator::local({&gpu});
  RawNcclComm raw(gpu);
  Tensor x = Tensor::empty(gpu, DType::f32, {n}), out = Tensor::empty(gpu, DType::f32, {n});
  Stream& stream = gpu.default_stream();
  ops::ReduceScatterOptions options;
  options.tiled = true;
  auto ours = [&] { ops::reduce_scatter(x, out, comms[0], options, &stream); };
  auto theirs = [&] {
    RawNcclComm::check(nccl::api().ncclReduceScatter(x.data(), out.data(), static_cast<size_t>(n), ncclFloat32, ncclSum,
                                                     raw.get(), static_cast<cudaStream_t>(stream.handle())),
                       "ncclReduceScatter");
  };
  const int calls = n >= (1 << 22) ? 10 : 200;
  time_calls(stream, calls, ours);  // warm-up: connections, the group lookup
  time_calls(stream, calls, theirs);
  CallTimes sum_ours, sum_theirs;
  for (auto _ : state) {
    CallTimes t = time_calls(stream, calls, theirs), o = time_calls(stream, calls, ours);
    sum_theirs.enqueue_s += t.enqueue_s;
    sum_theirs.total_s += t.total_s;
    sum_ours.enqueue_s += o.enqueue_s;
    sum_ours.total_s += o.total_s;
    state.SetIterationTime(o.total_s / calls);
  }
  const double per_call = 1e6 / (static_cast<double>(state.iterations()) * calls);
  state.counters["nccl_call_us"] = sum_theirs.enqueue_s * per_call;
  state.counters["tilejit_call_us"] = sum_ours.enqueue_s * per_call;
  state.counters["overhead_call_us"] = (sum_ours.enqueue_s - sum_theirs.enqueue_s) * per_call;
  state.counters["nccl_us"] = sum_theirs.total_s * per_call;
  state.counters["tilejit_us"] = sum_ours.total_s * per_call;
  state.counters["overhead_pct"] = 100 * (sum_ours.total_s - sum_theirs.total_s) / sum_theirs.total_s;
}
BENCHMARK(BM_ReduceScatterOverRawNccl)
    ->Arg(4096)
    ->Arg(1 << 20)
    ->Arg(64 << 20)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

// The packing step alone on the GPU, (a, b, m) -> (b, a, m) of 4-byte elements, against a copy
// of the same bytes: what a non-leading scatter dimension costs.
void BM_PackingOnGpu(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const int64_t bytes = state.range(0), a = 64, b = 8, m = bytes / 4 / (a * b);
  Device& gpu = Device::cuda(0);
  Tensor src = Tensor::empty(gpu, DType::f32, {a * b * m}), dst = Tensor::empty(gpu, DType::f32, {a * b * m});
  Stream& stream = gpu.default_stream();
  auto pack = [&] { ops::swap_leading_axes(src.data(), dst.data(), a, b, m, DType::f32, stream); };
  auto copy = [&] {
    gpu.copy_async(dst.data(), src.data(), static_cast<size_t>(bytes), CopyKind::device_to_device, stream);
  };
  time_calls(stream, 3, pack);
  double copy_s = 0;
  for (auto _ : state) {
    copy_s += time_calls(stream, 10, copy).total_s / 10;
    state.SetIterationTime(time_calls(stream, 10, pack).total_s / 10);
  }
  state.SetBytesProcessed(2 * bytes * static_cast<int64_t>(state.iterations()));  // read and written
  state.counters["copy_us"] = 1e6 * copy_s / static_cast<double>(state.iterations());
}
BENCHMARK(BM_PackingOnGpu)->Arg(1 << 20)->Arg(64 << 20)->UseManualTime()->Unit(benchmark::kMicrosecond);

// reduce_scatter of f32 [rows, 1024] per rank on emulated ranks, along rows (no packing) or
// columns (packing with the DSL kernel in the emulator): time per call, and every rank's input
// bytes per second. The ranks' threads start once per batch of calls.
void BM_EmulatedReduceScatter(benchmark::State& state) {
  const auto ranks = static_cast<int>(state.range(0));
  const int64_t bytes = state.range(1), rows = bytes / 4 / 1024;
  ops::ReduceScatterOptions options;
  options.scatter_dimension = static_cast<int>(state.range(2));
  options.tiled = true;
  std::vector<ops::Communicator> comms = ops::Communicator::emulated(ranks);
  std::vector<Tensor> inputs, outputs;
  for (int r = 0; r < ranks; ++r) {
    inputs.push_back(Tensor::empty(Device::emu(), DType::f32, {rows, 1024}));
    inputs.back().fill_bytes(0);
    outputs.push_back(Tensor::empty(Device::emu(), DType::f32,
                                    options.scatter_dimension == 0 ? std::vector<int64_t>{rows / ranks, 1024}
                                                                   : std::vector<int64_t>{rows, 1024 / ranks}));
  }
  constexpr int kCalls = 10;
  auto batch = [&] {
    ops::run_ranks(comms, [&](ops::Communicator& comm) {
      const auto r = static_cast<size_t>(comm.rank());
      for (int i = 0; i < kCalls; ++i) ops::reduce_scatter(inputs[r], outputs[r], comm, options);
    });
  };
  batch();  // warm-up: the packing kernel is compiled or loaded once
  for (auto _ : state) {
    auto start = Clock::now();
    batch();
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count() / kCalls);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * ranks * bytes);
}
BENCHMARK(BM_EmulatedReduceScatter)
    ->ArgsProduct({{2, 4, 8}, {1 << 20, 16 << 20}, {0, 1}})
    ->ArgNames({"ranks", "bytes", "dim"})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
