#include "ops/kernels/example_problems.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "autotune/parallel.h"

namespace tilejit::ops {
namespace {

constexpr uint8_t kPoison = 0xff;  // outputs start as NaN (f32) / -1 (i32)

// The programs that cover n elements in blocks of constant `name` (a setting a user may give).
uint32_t blocks(int64_t n, const dsl::Constants& c, const char* name) {
  const int64_t block = c[name];
  if (block < 1) fail("example problem: {}={} must be at least 1", name, block);
  return static_cast<uint32_t>(n / block + (n % block != 0));
}

// A dimension as the i32 the kernels take.
int32_t extent(const autotune::ProblemShape& shape, const char* dim) {
  int64_t v = shape[dim];
  if (v < 1 || v > std::numeric_limits<int32_t>::max()) fail("example problem: {}={} is out of range", dim, v);
  return static_cast<int32_t>(v);
}

// The example kernels index a tensor in 32-bit integers, and their last block reaches past its
// end (masked): a tensor leaves room for a block.
void check_indexable(const char* tensor, int64_t rows, int64_t cols) {
  constexpr int64_t kMaxElements = std::numeric_limits<int32_t>::max() - (int64_t{1} << 16);
  if (rows * cols > kMaxElements)
    fail("example problem: {} ({} x {}) has over {} elements, beyond the example kernels' 32-bit indexing", tensor,
         rows, cols, kMaxElements);
}

// Per-element comparison of one output with its reference; accumulates into `result`.
template <typename T>
void compare_output(const Tensor& out, const std::vector<double>& reference, double atol, double rtol, bool keep,
                    ExampleProblem::Comparison& result) {
  std::vector<T> got = out.to_host<T>();
  if (keep) result.outputs.emplace_back(got.begin(), got.end());
  bool ok = got.size() == reference.size();
  for (size_t i = 0; ok && i < got.size(); ++i) {
    double g = static_cast<double>(got[i]), r = reference[i], e = std::fabs(g - r);
    if (std::isnan(g) || !(e <= atol + rtol * std::fabs(r))) ok = false;
    if (std::isnan(g)) e = std::numeric_limits<double>::infinity();
    result.max_abs_error = std::max(result.max_abs_error, e);
  }
  result.ok = result.ok && ok;
}

class VectorAdd final : public ExampleProblem {
 public:
  VectorAdd(Device& device, const autotune::ProblemShape& shape, uint64_t seed) : ExampleProblem(device, seed) {
    n_ = extent(shape, "n");
    check_indexable("x", 1, n_);
    Tensor x = random_f32({n_}, hx_), y = random_f32({n_}, hy_), out = output(DType::f32, {n_});
    args_ = {x, y, out, n_};
    description_ = fmt::format("n={}", n_);
    bytes_ = 3.0 * n_ * 4;
    atol_ = 0, rtol_ = 1e-6;
  }
  Dim3 grid(const dsl::Constants& c) const override { return {blocks(n_, c, "BLOCK")}; }

 private:
  std::vector<std::vector<double>> reference() const override {
    std::vector<double> ref(hx_.size());
    for (size_t i = 0; i < ref.size(); ++i) ref[i] = double(hx_[i]) + double(hy_[i]);
    return {ref};
  }
  int32_t n_;
  std::vector<float> hx_, hy_;
};

// The row-wise kernels: one program per row of an (rows, cols) matrix.
class RowProblem : public ExampleProblem {
 public:
  RowProblem(Device& device, const autotune::ProblemShape& shape, uint64_t seed) : ExampleProblem(device, seed) {
    rows_ = extent(shape, "rows"), cols_ = extent(shape, "cols");
    check_indexable("x", rows_, cols_);
    description_ = fmt::format("rows={} cols={}", rows_, cols_);
  }
  Dim3 grid(const dsl::Constants&) const override { return {static_cast<uint32_t>(rows_)}; }

 protected:
  const float* row(size_t r) const { return &hx_[r * size_t(cols_)]; }
  int32_t rows_, cols_;
  std::vector<float> hx_;
};

class Softmax final : public RowProblem {
 public:
  Softmax(Device& device, const autotune::ProblemShape& shape, uint64_t seed) : RowProblem(device, shape, seed) {
    Tensor x = random_f32({rows_, cols_}, hx_), out = output(DType::f32, {rows_, cols_});
    args_ = {x, out, cols_, cols_};
    bytes_ = 2.0 * rows_ * cols_ * 4;
    atol_ = 1e-7, rtol_ = 1e-5;
  }

 private:
  std::vector<std::vector<double>> reference() const override {
    std::vector<double> ref(hx_.size());
    for (size_t r = 0; r < size_t(rows_); ++r) {
      const float* x = row(r);
      double m = -INFINITY, sum = 0;
      for (int32_t c = 0; c < cols_; ++c) m = std::max(m, double(x[c]));
      for (int32_t c = 0; c < cols_; ++c) sum += std::exp(double(x[c]) - m);
      for (int32_t c = 0; c < cols_; ++c) ref[r * size_t(cols_) + size_t(c)] = std::exp(double(x[c]) - m) / sum;
    }
    return {ref};
  }
};

class Layernorm final : public RowProblem {
 public:
  Layernorm(Device& device, const autotune::ProblemShape& shape, uint64_t seed) : RowProblem(device, shape, seed) {
    Tensor x = random_f32({rows_, cols_}, hx_), gamma = random_f32({cols_}, hg_), beta = random_f32({cols_}, hb_);
    Tensor y = output(DType::f32, {rows_, cols_}), mean = output(DType::f32, {rows_}),
           rsigma = output(DType::f32, {rows_});
    args_ = {x, gamma, beta, y, mean, rsigma, cols_, cols_, kEps};
    bytes_ = 2.0 * rows_ * cols_ * 4;
    atol_ = 1e-5, rtol_ = 1e-4;
  }

 private:
  static constexpr float kEps = 1e-5f;
  std::vector<std::vector<double>> reference() const override {
    std::vector<double> ry(hx_.size()), rm(static_cast<size_t>(rows_)), rr(static_cast<size_t>(rows_));
    for (size_t r = 0; r < size_t(rows_); ++r) {
      const float* x = row(r);
      double m = 0, var = 0;
      for (int32_t c = 0; c < cols_; ++c) m += x[c];
      m /= cols_;
      for (int32_t c = 0; c < cols_; ++c) var += (x[c] - m) * (x[c] - m);
      double rs = 1.0 / std::sqrt(var / cols_ + kEps);
      rm[r] = m, rr[r] = rs;
      for (int32_t c = 0; c < cols_; ++c)
        ry[r * size_t(cols_) + size_t(c)] = (x[c] - m) * rs * hg_[size_t(c)] + hb_[size_t(c)];
    }
    return {ry, rm, rr};
  }
  std::vector<float> hg_, hb_;
};

class Argmax final : public RowProblem {
 public:
  Argmax(Device& device, const autotune::ProblemShape& shape, uint64_t seed) : RowProblem(device, shape, seed) {
    Tensor x = random_f32({rows_, cols_}, hx_), out = output(DType::i32, {rows_});
    args_ = {x, out, cols_, cols_};
    bytes_ = 1.0 * rows_ * cols_ * 4;
    atol_ = 0, rtol_ = 0;
  }

 private:
  std::vector<std::vector<double>> reference() const override {
    std::vector<double> ref(static_cast<size_t>(rows_));
    for (size_t r = 0; r < ref.size(); ++r)
      ref[r] = double(std::max_element(row(r), row(r) + cols_) - row(r));  // the first maximum
    return {ref};
  }
};

class Gemm final : public ExampleProblem {
 public:
  Gemm(Device& device, const autotune::ProblemShape& shape, uint64_t seed) : ExampleProblem(device, seed) {
    m_ = extent(shape, "M"), n_ = extent(shape, "N"), k_ = extent(shape, "K");
    check_indexable("a", m_, k_), check_indexable("b", k_, n_), check_indexable("c", m_, n_);
    Tensor a = random_f32({m_, k_}, ha_), b = random_f32({k_, n_}, hb_), c = output(DType::f32, {m_, n_});
    args_ = {a, b, c, m_, n_, k_, k_, n_, n_};
    description_ = fmt::format("M={} N={} K={}", m_, n_, k_);
    flops_ = 2.0 * m_ * n_ * k_;
    bytes_ = 4.0 * (double(m_) * k_ + double(k_) * n_ + double(m_) * n_);
    // f32 sums of K products of U(-1, 1) values, each step rounded by up to 2^-24 of a partial
    // sum that grows as sqrt(k / 9): the error's spread grows as 2^-24 K / 7, and its largest
    // over millions of outputs is near 0.8 * 2^-24 K (1.8e-4 at K = 4089 on an H100). 4 * 2^-24 K
    // keeps a margin of 5 over that; a dropped or repeated K block errs by far more.
    atol_ = std::max(1e-5, 4.0 * std::ldexp(double(k_), -24)), rtol_ = 1e-4;
  }
  Dim3 grid(const dsl::Constants& c) const override { return {blocks(m_, c, "BLOCK_M"), blocks(n_, c, "BLOCK_N")}; }

 private:
  std::vector<std::vector<double>> reference() const override {
    std::vector<double> ref(size_t(m_) * size_t(n_));
    // Rows on every core: the default shape is 7e10 multiply-adds.
    autotune::run_in_parallel(size_t(m_), 0, [&](size_t i) {
      for (size_t kk = 0; kk < size_t(k_); ++kk) {
        double av = ha_[i * size_t(k_) + kk];
        for (size_t j = 0; j < size_t(n_); ++j) ref[i * size_t(n_) + j] += av * hb_[kk * size_t(n_) + j];
      }
    });
    return {ref};
  }
  int32_t m_, n_, k_;
  std::vector<float> ha_, hb_;
};

struct ExampleKind {
  std::string name;
  std::vector<std::string> dims;
  std::function<std::unique_ptr<ExampleProblem>(Device&, const autotune::ProblemShape&, uint64_t)> make;
};

template <typename P>
std::unique_ptr<ExampleProblem> make(Device& device, const autotune::ProblemShape& shape, uint64_t seed) {
  return std::make_unique<P>(device, shape, seed);
}

const ExampleKind& find_kind(const std::string& kernel) {
  static const std::vector<ExampleKind> kinds = {
      {"vector_add", {"n"}, make<VectorAdd>},         {"softmax", {"rows", "cols"}, make<Softmax>},
      {"layernorm", {"rows", "cols"}, make<Layernorm>}, {"gemm", {"M", "N", "K"}, make<Gemm>},
      {"argmax", {"rows", "cols"}, make<Argmax>},
  };
  std::string names;
  for (const ExampleKind& kind : kinds) {
    if (kind.name == kernel) return kind;
    names += (names.empty() ? "" : ", ") + kind.name;
  }
  fail("no example run for kernel '{}' (examples: {})", kernel, names);
}

}  // namespace

Tensor ExampleProblem::random_f32(std::vector<int64_t> shape, std::vector<float>& host) {
  Tensor t = Tensor::empty(device_, DType::f32, std::move(shape));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  host.resize(static_cast<size_t>(t.numel()));
  for (float& v : host) v = dist(rng_);
  t.copy_from_host(std::span<const float>(host));
  inputs_.push_back(t);
  return t;
}

Tensor ExampleProblem::output(DType dtype, std::vector<int64_t> shape) {
  Tensor t = Tensor::empty(device_, dtype, std::move(shape));
  t.fill_bytes(kPoison);
  outputs_.push_back(t);
  return t;
}

void ExampleProblem::poison_outputs() {
  for (Tensor& t : outputs_) t.fill_bytes(kPoison);
}

ExampleProblem::Comparison ExampleProblem::compare(bool keep_outputs) {
  if (reference_.empty()) reference_ = reference();
  Comparison result;
  for (size_t i = 0; i < outputs_.size(); ++i) {
    if (outputs_[i].dtype() == DType::i32)
      compare_output<int32_t>(outputs_[i], reference_[i], atol_, rtol_, keep_outputs, result);
    else
      compare_output<float>(outputs_[i], reference_[i], atol_, rtol_, keep_outputs, result);
  }
  return result;
}

std::string ExampleProblem::check_outputs() {
  Comparison c = compare(false);
  if (c.ok) return "";
  return fmt::format("max error {:.3g} exceeds {:.0e} + {:.0e} * |reference|", c.max_abs_error, atol_, rtol_);
}

const std::vector<std::string>& example_dims(const std::string& kernel) { return find_kind(kernel).dims; }

std::unique_ptr<ExampleProblem> make_example_problem(const std::string& kernel, Device& device,
                                                     const autotune::ProblemShape& shape, uint64_t seed) {
  const ExampleKind& kind = find_kind(kernel);
  for (const std::string& dim : kind.dims)
    if (!shape.has(dim)) fail("example problem {}: shape '{}' lacks {}", kernel, shape.str(), dim);
  return kind.make(device, shape, seed);
}

autotune::ProblemShape example_shape(const std::string& kernel, const dsl::Constants& constants, bool small) {
  if (kernel == "vector_add") return {{{"n", small ? 100'003 : 1 << 26}}};
  if (kernel == "gemm") {
    if (small) return {{{"M", 157}, {"N", 143}, {"K", 131}}};
    return {{{"M", 4093}, {"N", 4091}, {"K", 4089}}};
  }
  find_kind(kernel);  // an unknown name is an error
  // Not a multiple of the block: masks at work.
  return {{{"rows", small ? 97 : 16384}, {"cols", std::max<int64_t>(1, constants["BLOCK_N"] - 24)}}};
}

}  // namespace tilejit::ops
