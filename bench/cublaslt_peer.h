// cuBLASLt as the GEMM peer of the benchmarks: the CUDA toolkit's libcublasLt, loaded at run
// time so the benchmarks build and run (skipping) where it is missing. One object is one
// GEMM shape with its algorithm chosen once by cuBLASLt's heuristic, as a framework would.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/device.h"
#include "runtime/tensor.h"

namespace tilejit::bench {

struct PeerGemmShape {
  DType operands = DType::bf16;  // A and B
  DType out = DType::bf16;
  bool tf32 = false;             // f32 operands through tf32 tensor cores
  int64_t m = 0, n = 0, k = 0;
  bool b_transposed = false;     // B given as (N, K) (cuBLASLt's fp8 and int8 kernels want it)
  // fp8: sums each run of K in the tensor cores' accumulator, as tilejit's kernels do, instead
  // of moving it into f32 registers every few steps (CUBLASLT_MATMUL_DESC_FAST_ACCUM).
  bool fast_accumulation = false;
};

class CublasLtGemm {
 public:
  // Throws tilejit::Error when cuBLASLt cannot be loaded or has no algorithm for the shape.
  CublasLtGemm(Device& gpu, const PeerGemmShape& shape);
  ~CublasLtGemm();
  // out (M, N) = a (M, K) @ b, all row-major, on `stream`.
  void run(const Tensor& a, const Tensor& b, const Tensor& out, Stream& stream);
  // The library's version, e.g. "cuBLASLt 130001".
  std::string version() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tilejit::bench
