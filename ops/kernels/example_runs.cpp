#include "ops/kernels/example_runs.h"

#include <cmath>
#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <random>

#include "ops/kernels/examples.h"
#include "runtime/jit.h"
#include "runtime/tensor.h"

namespace tilejit::ops {
namespace {

constexpr uint8_t kPoison = 0xff;  // outputs start as NaN (f32) / -1 (i32)

struct Problem {
  ExampleRun result;
  std::mt19937_64 rng;
  Device& device;
  bool small;
  bool keep_outputs;

  Tensor random_f32(std::vector<int64_t> shape, std::vector<float>& host) {
    Tensor t = Tensor::empty(device, DType::f32, std::move(shape));
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    host.resize(static_cast<size_t>(t.numel()));
    for (float& v : host) v = dist(rng);
    t.copy_from_host(std::span<const float>(host));
    return t;
  }
  Tensor output(DType dtype, std::vector<int64_t> shape) {
    Tensor t = Tensor::empty(device, dtype, std::move(shape));
    t.fill_bytes(kPoison);
    return t;
  }
  void tolerance(double atol, double rtol) { result.atol = atol, result.rtol = rtol; }
  // Compares one output with its reference; every element must be within tolerance.
  template <typename T>
  void compare(const Tensor& out, const std::vector<double>& reference) {
    std::vector<T> got = out.to_host<T>();
    if (keep_outputs) result.outputs.emplace_back(got.begin(), got.end());
    bool ok = got.size() == reference.size();
    for (size_t i = 0; ok && i < got.size(); ++i) {
      double g = static_cast<double>(got[i]), r = reference[i], e = std::fabs(g - r);
      if (std::isnan(g) || !(e <= result.atol + result.rtol * std::fabs(r))) ok = false;
      if (std::isnan(g)) e = std::numeric_limits<double>::infinity();
      result.max_abs_error = std::max(result.max_abs_error, e);
    }
    result.ok = result.ok && ok;
  }
  // Runs `launch` once for the check (the caller compares after), then times repeats.
  void time(const std::function<void(Stream&)>& launch) {
    Stream& s = device.default_stream();
    int repeats = device.info().kind == DeviceKind::emu ? 1 : 20;
    Event start = device.create_event(), stop = device.create_event();
    launch(s);  // warm: compiled, cached, caches warm
    start.record(s);
    for (int i = 0; i < repeats; ++i) launch(s);
    stop.record(s);
    stop.synchronize();
    result.ms = start.elapsed_ms(stop) / repeats;
    result.launches = repeats;
  }
};

void vector_add(Problem& p, const BoundKernel& k) {
  int32_t n = p.small ? 100'003 : 1 << 26;
  std::vector<float> hx, hy;
  Tensor x = p.random_f32({n}, hx), y = p.random_f32({n}, hy);
  Tensor out = p.output(DType::f32, {n});
  int32_t block = static_cast<int32_t>(k.constants()["BLOCK"]);
  p.result.problem = fmt::format("n={}", n);
  p.result.bytes = 3.0 * n * 4;
  p.time([&](Stream& s) { k.launch(s, {static_cast<uint32_t>((n + block - 1) / block)}, x, y, out, n); });
  std::vector<double> ref(static_cast<size_t>(n));
  for (size_t i = 0; i < ref.size(); ++i) ref[i] = double(hx[i]) + double(hy[i]);
  p.tolerance(0, 1e-6);
  p.compare<float>(out, ref);
}

// Rows of `cols` columns, one program per row, for the row-wise kernels.
struct Rows {
  int32_t rows, cols;
};
Rows row_problem(Problem& p, const BoundKernel& k) {
  int32_t block = static_cast<int32_t>(k.constants()["BLOCK_N"]);
  Rows r{p.small ? 97 : 16384, std::max(1, block - 24)};  // not a multiple of the block: masks at work
  p.result.problem = fmt::format("rows={} cols={}", r.rows, r.cols);
  return r;
}

void softmax(Problem& p, const BoundKernel& k) {
  auto [rows, cols] = row_problem(p, k);
  std::vector<float> hx;
  Tensor x = p.random_f32({rows, cols}, hx);
  Tensor out = p.output(DType::f32, {rows, cols});
  p.result.bytes = 2.0 * rows * cols * 4;
  p.time([&](Stream& s) { k.launch(s, {static_cast<uint32_t>(rows)}, x, out, cols, cols); });
  std::vector<double> ref(hx.size());
  for (int32_t r = 0; r < rows; ++r) {
    const float* row = &hx[size_t(r) * cols];
    double m = -INFINITY, sum = 0;
    for (int32_t c = 0; c < cols; ++c) m = std::max(m, double(row[c]));
    for (int32_t c = 0; c < cols; ++c) sum += std::exp(double(row[c]) - m);
    for (int32_t c = 0; c < cols; ++c) ref[size_t(r) * cols + c] = std::exp(double(row[c]) - m) / sum;
  }
  p.tolerance(1e-7, 1e-5);
  p.compare<float>(out, ref);
}

void layernorm(Problem& p, const BoundKernel& k) {
  auto [rows, cols] = row_problem(p, k);
  const float eps = 1e-5f;
  std::vector<float> hx, hg, hb;
  Tensor x = p.random_f32({rows, cols}, hx), gamma = p.random_f32({cols}, hg), beta = p.random_f32({cols}, hb);
  Tensor y = p.output(DType::f32, {rows, cols}), mean = p.output(DType::f32, {rows}), rsigma = p.output(DType::f32, {rows});
  p.result.bytes = 2.0 * rows * cols * 4;
  p.time([&](Stream& s) {
    k.launch(s, {static_cast<uint32_t>(rows)}, x, gamma, beta, y, mean, rsigma, cols, cols, eps);
  });
  std::vector<double> ry(hx.size()), rm(static_cast<size_t>(rows)), rr(static_cast<size_t>(rows));
  for (int32_t r = 0; r < rows; ++r) {
    const float* row = &hx[size_t(r) * cols];
    double m = 0, var = 0;
    for (int32_t c = 0; c < cols; ++c) m += row[c];
    m /= cols;
    for (int32_t c = 0; c < cols; ++c) var += (row[c] - m) * (row[c] - m);
    double rs = 1.0 / std::sqrt(var / cols + eps);
    rm[size_t(r)] = m, rr[size_t(r)] = rs;
    for (int32_t c = 0; c < cols; ++c) ry[size_t(r) * cols + c] = (row[c] - m) * rs * hg[size_t(c)] + hb[size_t(c)];
  }
  p.tolerance(1e-5, 1e-4);
  p.compare<float>(y, ry);
  p.compare<float>(mean, rm);
  p.compare<float>(rsigma, rr);
}

void gemm(Problem& p, const BoundKernel& k) {
  int32_t M = p.small ? 157 : 4093, N = p.small ? 143 : 4091, K = p.small ? 131 : 4089;  // not tile multiples
  std::vector<float> ha, hb;
  Tensor a = p.random_f32({M, K}, ha), b = p.random_f32({K, N}, hb);
  Tensor c = p.output(DType::f32, {M, N});
  auto bm = static_cast<uint32_t>(k.constants()["BLOCK_M"]), bn = static_cast<uint32_t>(k.constants()["BLOCK_N"]);
  p.result.problem = fmt::format("M={} N={} K={}", M, N, K);
  p.result.flops = 2.0 * M * N * K;
  p.result.bytes = 4.0 * (double(M) * K + double(K) * N + double(M) * N);
  p.time([&](Stream& s) {
    k.launch(s, {(uint32_t(M) + bm - 1) / bm, (uint32_t(N) + bn - 1) / bn}, a, b, c, M, N, K, K, N, N);
  });
  std::vector<double> ref(size_t(M) * N);
  for (int32_t i = 0; i < M; ++i)
    for (int32_t kk = 0; kk < K; ++kk) {
      double av = ha[size_t(i) * K + kk];
      for (int32_t j = 0; j < N; ++j) ref[size_t(i) * N + j] += av * hb[size_t(kk) * N + j];
    }
  p.tolerance(1e-5, 1e-4);
  p.compare<float>(c, ref);
}

void argmax(Problem& p, const BoundKernel& k) {
  auto [rows, cols] = row_problem(p, k);
  std::vector<float> hx;
  Tensor x = p.random_f32({rows, cols}, hx);
  Tensor out = p.output(DType::i32, {rows});
  p.result.bytes = 1.0 * rows * cols * 4;
  p.time([&](Stream& s) { k.launch(s, {static_cast<uint32_t>(rows)}, x, out, cols, cols); });
  std::vector<double> ref(static_cast<size_t>(rows));
  for (int32_t r = 0; r < rows; ++r) {
    const float* row = &hx[size_t(r) * cols];
    ref[size_t(r)] = double(std::max_element(row, row + cols) - row);  // the first maximum
  }
  p.tolerance(0, 0);
  p.compare<int32_t>(out, ref);
}

struct Example {
  dsl::Kernel (*kernel)();
  void (*run)(Problem&, const BoundKernel&);
};

const Example& find_example(const std::string& name) {
  static const std::vector<std::pair<std::string, Example>> examples = {
      {"vector_add", {vector_add_kernel, vector_add}}, {"softmax", {softmax_kernel, softmax}},
      {"layernorm", {layernorm_kernel, layernorm}},    {"gemm", {gemm_kernel, gemm}},
      {"argmax", {argmax_kernel, argmax}},
  };
  std::string names;
  for (auto& [n, e] : examples) {
    if (n == name) return e;
    names += (names.empty() ? "" : ", ") + n;
  }
  fail("no example run for kernel '{}' (examples: {})", name, names);
}

}  // namespace

std::string describe(const ExampleRun& r) {
  std::string rate;
  if (r.flops > 0) rate = fmt::format("{:.2f} GFLOP/s", r.flops / r.ms / 1e6);
  else if (r.bytes > 0) rate = fmt::format("{:.2f} GB/s", r.bytes / r.ms / 1e6);
  return fmt::format("{:<11} {:<6} {:<22} max error {:.3g} (atol {:.0e}, rtol {:.0e})  {:8.3f} ms  {:>16}  on {}", r.kernel,
                     r.ok ? "ok" : "WRONG", r.problem, r.max_abs_error, r.atol, r.rtol, r.ms, rate, r.device);
}

ExampleRun run_example(const std::string& kernel, Device& device, const ExampleOptions& options) {
  const Example& example = find_example(kernel);
  // One JitKernel per example for the process: repeated runs reuse its compiled kernels.
  static std::mutex mutex;
  static std::map<std::string, JitKernel> jitted;
  const JitKernel* jit;
  {
    std::lock_guard lock(mutex);
    jit = &jitted.try_emplace(kernel, example.kernel()).first->second;
  }
  uint64_t seed = options.seed ? options.seed : std::random_device{}();
  Problem p{{}, std::mt19937_64(seed), device, options.small || device.info().kind == DeviceKind::emu,
            options.keep_outputs};
  p.result.kernel = kernel;
  p.result.device = device.info().name;
  p.result.ok = true;
  example.run(p, jit->with(options.overrides));
  return p.result;
}

}  // namespace tilejit::ops
