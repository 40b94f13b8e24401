// The quick-start demo: the example GEMM, softmax and layernorm kernels (written with the
// DSL in ops/kernels/examples.cpp) JIT-compiled and run on the best device — the GPU if
// there is one, else the emulator, which runs the same generated code on the CPU — each
// checked against a C++ reference, with its error and time.
//
// Launching a DSL kernel yourself takes three lines (see runtime/jit.h):
//   JitKernel gemm(ops::gemm_kernel());
//   Tensor a = Tensor::empty(device, DType::f32, {M, K}), ...;
//   gemm.with({{"BLOCK_M", 64}}).launch(device.default_stream(), {cdiv(M, 64), cdiv(N, 64)}, a, b, c, M, N, K, K, N, N);
#include <cstdio>

#include "ops/kernels/example_runs.h"

int main() {
  using namespace tilejit;
  try {
    Device& device = Device::best();
    fmt::print("tilejit demo on {}{}\n", device.info().name,
               device.info().kind == DeviceKind::emu ? " (no GPU found: the emulator runs the generated code on the CPU)" : "");
    bool all_ok = true;
    for (const char* kernel : {"gemm", "softmax", "layernorm"}) {
      ops::ExampleRun run = ops::run_example(kernel, device);
      fmt::print("  {}\n", ops::describe(run));
      all_ok = all_ok && run.ok;
    }
    fmt::print("{}\n", all_ok ? "all results match their references" : "SOME RESULTS ARE WRONG");
    return all_ok ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "demo: %s\n", e.what());
    return 1;
  }
}
