// Problem instances of the registered example kernels, of any size: fresh random inputs on a
// device, poisoned outputs, the launch grid for any constants, and a comparison of every
// output with a C++ reference computed in double precision (once, when first needed).
// `tilejit run` and the tests run them (example_runs.h); the tuner checks and times every
// candidate config on one (example_tuning.h).
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "autotune/tunable.h"
#include "runtime/tensor.h"

namespace tilejit::ops {

class ExampleProblem : public autotune::TuningProblem {
 public:
  struct Comparison {
    bool ok = true;            // every element within atol + rtol * |reference|, no NaN
    double max_abs_error = 0;  // over every output element
    std::vector<std::vector<double>> outputs;  // when kept
  };

  std::vector<KernelArg> arguments() const override { return args_; }
  void poison_outputs() override;
  std::string check_outputs() override;
  Comparison compare(bool keep_outputs);

  const std::string& description() const { return description_; }  // "M=157 N=143 K=131"
  double bytes() const { return bytes_; }  // global memory traffic of one launch, at least
  double flops() const { return flops_; }  // floating-point operations of one launch (GEMM)
  double atol() const { return atol_; }
  double rtol() const { return rtol_; }

 protected:
  ExampleProblem(Device& device, uint64_t seed) : device_(device), rng_(seed) {}
  // A new input of uniform random values in [-1, 1), also copied into `host`.
  Tensor random_f32(std::vector<int64_t> shape, std::vector<float>& host);
  // A new output, poisoned; outputs are compared in the order they are made.
  Tensor output(DType dtype, std::vector<int64_t> shape);
  // Each output's reference values, in the order the outputs were made.
  virtual std::vector<std::vector<double>> reference() const = 0;

  Device& device_;
  std::mt19937_64 rng_;
  std::vector<KernelArg> args_;
  std::string description_;
  double bytes_ = 0, flops_ = 0, atol_ = 0, rtol_ = 0;

 private:
  std::vector<Tensor> inputs_;  // alive as long as the problem: the arguments point into them
  std::vector<Tensor> outputs_;
  std::vector<std::vector<double>> reference_;  // computed on the first comparison
};

// The dimensions of `kernel`'s problems: vector_add {n}; softmax, layernorm, argmax {rows,
// cols}; gemm {M, N, K}. Throws tilejit::Error for a kernel with no example problem.
const std::vector<std::string>& example_dims(const std::string& kernel);

// A problem of `shape` (exactly the kernel's dimensions) with inputs drawn from `seed`.
std::unique_ptr<ExampleProblem> make_example_problem(const std::string& kernel, Device& device,
                                                     const autotune::ProblemShape& shape, uint64_t seed);

// The shape `tilejit run` uses for `kernel` with `constants`: sizes that are not multiples of
// the tiles, so masks are at work; small ones for the emulator, large ones for a GPU.
autotune::ProblemShape example_shape(const std::string& kernel, const dsl::Constants& constants, bool small);

}  // namespace tilejit::ops
