// A tensor-parallel MLP block with sequence parallelism, as Megatron-LM and Transformer Engine
// run it, on N ranks: emulated ranks by default, or the GPUs of this machine through NCCL.
//
//   rank r holds          x_r  [S/N, H]   its slice of the sequence
//                         w1_r [H, F/N]   its columns of the first weight
//                         w2_r [F/N, H]   its rows of the second weight
//   x    = all_gather(x_r, axis 0, tiled)          [S, H]    the whole sequence
//   h    = gelu(x @ w1_r)                          [S, F/N]  (ops::gemm, gelu fused in its epilogue)
//   z_r  = h @ w2_r                                [S, H]    a partial sum over F
//   y_r  = reduce_scatter(z_r, dimension 0, tiled) [S/N, H]  summed, rank r's rows
//
// Every rank's y_r is checked against gelu(X @ W1) @ W2 computed in double on the host.
//
//   tp_mlp [ranks] [--device emu|cuda]     (default: 4 emulated ranks; cuda: one rank per GPU)
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ops/collectives.h"
#include "ops/gemm.h"
#include "runtime/tensor.h"

namespace {

using namespace tilejit;

constexpr int64_t kTokens = 128, kHidden = 64, kFfn = 256;  // S, H, F

double gelu(double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }

// Row-major host matrix.
struct Matrix {
  int64_t rows, cols;
  std::vector<float> values;
  float& at(int64_t r, int64_t c) { return values[static_cast<size_t>(r * cols + c)]; }
  float at(int64_t r, int64_t c) const { return values[static_cast<size_t>(r * cols + c)]; }
  Matrix block(int64_t row0, int64_t nrows, int64_t col0, int64_t ncols) const {
    Matrix b{nrows, ncols, std::vector<float>(static_cast<size_t>(nrows * ncols))};
    for (int64_t r = 0; r < nrows; ++r)
      for (int64_t c = 0; c < ncols; ++c) b.at(r, c) = at(row0 + r, col0 + c);
    return b;
  }
};

Matrix random_matrix(int64_t rows, int64_t cols, double scale, std::mt19937& gen) {
  std::uniform_real_distribution<float> dist(-1, 1);
  Matrix m{rows, cols, std::vector<float>(static_cast<size_t>(rows * cols))};
  for (float& v : m.values) v = static_cast<float>(scale) * dist(gen);
  return m;
}

// gelu(x @ w1) @ w2 in double.
std::vector<double> reference_mlp(const Matrix& x, const Matrix& w1, const Matrix& w2) {
  std::vector<double> h(static_cast<size_t>(x.rows * w1.cols)), y(static_cast<size_t>(x.rows * w2.cols));
  for (int64_t i = 0; i < x.rows; ++i)
    for (int64_t j = 0; j < w1.cols; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < x.cols; ++k) acc += double{x.at(i, k)} * w1.at(k, j);
      h[static_cast<size_t>(i * w1.cols + j)] = gelu(acc);
    }
  for (int64_t i = 0; i < x.rows; ++i)
    for (int64_t j = 0; j < w2.cols; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < w2.rows; ++k) acc += h[static_cast<size_t>(i * w2.rows + k)] * w2.at(k, j);
      y[static_cast<size_t>(i * w2.cols + j)] = acc;
    }
  return y;
}

Tensor upload(Device& device, const Matrix& m) {
  Tensor t = Tensor::empty(device, DType::f32, {m.rows, m.cols});
  t.copy_from_host(std::span<const float>(m.values));
  return t;
}

struct Options {
  int ranks = 4;
  bool on_gpus = false;
};

Options parse(int argc, char** argv) {
  Options o;
  bool ranks_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--device" && i + 1 < argc) {
      std::string device = argv[++i];
      if (device != "emu" && device != "cuda") fail("--device {}: use emu or cuda", device);
      o.on_gpus = device == "cuda";
    } else if (!arg.empty() && arg.find_first_not_of("0123456789") == std::string::npos) {
      o.ranks = std::stoi(arg);
      ranks_given = true;
    } else {
      fail("unknown argument '{}' (usage: tp_mlp [ranks] [--device emu|cuda])", arg);
    }
  }
  if (o.on_gpus && Device::cuda_device_count() == 0)
    fail("--device cuda, but there is no GPU: {}", cuda_driver_status());
  if (o.on_gpus && !ranks_given) o.ranks = Device::cuda_device_count();
  if (o.ranks < 1 || kTokens % o.ranks != 0 || kFfn % o.ranks != 0)
    fail("{} ranks: the ranks must divide the {} tokens and the {} FFN columns", o.ranks, kTokens, kFfn);
  return o;
}

std::vector<ops::Communicator> make_ranks(const Options& o) {
  if (!o.on_gpus) return ops::Communicator::emulated(o.ranks);
  if (o.ranks > Device::cuda_device_count())
    fail("{} ranks on GPUs, but this machine has {}", o.ranks, Device::cuda_device_count());
  std::vector<Device*> gpus;
  for (int r = 0; r < o.ranks; ++r) gpus.push_back(&Device::cuda(r));
  return ops::Communicator::local(gpus);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options options = parse(argc, argv);
    const int n = options.ranks;
    std::mt19937 gen(std::random_device{}());
    const Matrix x = random_matrix(kTokens, kHidden, 1.0, gen);
    const Matrix w1 = random_matrix(kHidden, kFfn, 1.0 / std::sqrt(double{kHidden}), gen);
    const Matrix w2 = random_matrix(kFfn, kHidden, 1.0 / std::sqrt(double{kFfn}), gen);
    const std::vector<double> want = reference_mlp(x, w1, w2);

    std::vector<ops::Communicator> ranks = make_ranks(options);
    fmt::print("tensor-parallel MLP, S={} H={} F={}, on {} {}\n", kTokens, kHidden, kFfn, n,
               options.on_gpus ? "GPUs (NCCL)" : "emulated ranks");
    // f32 products on the tensor cores, accurate to f32 (three tf32 products each).
    ops::GemmOptions up, down;
    up.precision = down.precision = dsl::Precision::tf32x3;
    up.activation = ops::Activation::gelu_erf;
    const int64_t s_local = kTokens / n, f_local = kFfn / n;
    std::vector<double> max_error(static_cast<size_t>(n));
    auto start = std::chrono::steady_clock::now();
    ops::run_ranks(ranks, [&](ops::Communicator& comm) {
      const int r = comm.rank();
      Device& device = comm.device();
      Stream& stream = device.default_stream();
      Tensor x_r = upload(device, x.block(r * s_local, s_local, 0, kHidden));    // [S/N, H]
      Tensor w1_r = upload(device, w1.block(0, kHidden, r * f_local, f_local));  // [H, F/N]
      Tensor w2_r = upload(device, w2.block(r * f_local, f_local, 0, kHidden));  // [F/N, H]

      ops::AllGatherOptions gather;
      gather.tiled = true;
      Tensor x_all = ops::all_gather(x_r, comm, gather, &stream);  // [S, H]
      Tensor h = ops::gemm(x_all, w1_r, up, &stream);  // [S, F/N], gelu applied
      Tensor z = ops::gemm(h, w2_r, down, &stream);    // [S, H], partial over F
      ops::ReduceScatterOptions scatter;
      scatter.tiled = true;
      Tensor y_r = ops::reduce_scatter(z, comm, scatter, &stream);  // [S/N, H]
      comm.synchronize(stream);

      std::vector<float> got = y_r.to_host<float>();
      double worst = 0;
      for (int64_t i = 0; i < s_local; ++i)
        for (int64_t j = 0; j < kHidden; ++j) {
          double w = want[static_cast<size_t>((r * s_local + i) * kHidden + j)];
          double g = got[static_cast<size_t>(i * kHidden + j)];
          worst = std::max(worst, std::isnan(g) ? INFINITY : std::fabs(g - w) / (1 + std::fabs(w)));
        }
      max_error[static_cast<size_t>(r)] = worst;
    });
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    bool ok = true;
    for (int r = 0; r < n; ++r) {
      bool rank_ok = max_error[static_cast<size_t>(r)] <= 1e-4;
      ok = ok && rank_ok;
      fmt::print("  rank {}: {} rows, max error {:.2e} {}\n", r, s_local, max_error[static_cast<size_t>(r)],
                 rank_ok ? "ok" : "WRONG");
    }
    fmt::print("{} in {:.1f} ms (kernels loaded or compiled on the first use)\n",
               ok ? "every rank matches the reference" : "SOME RANKS ARE WRONG", 1e3 * seconds);
    return ok ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "tp_mlp: %s\n", e.what());
    return 1;
  }
}
