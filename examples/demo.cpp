// The quick-start demo: a tiled GEMM written with the DSL, traced to tile IR, compiled
// through LLVM to PTX for sm_90a, and assembled by ptxas, with each stage's size and time.
#include <chrono>
#include <cstdio>

#include "codegen/compiler.h"
#include "codegen/ptxas.h"
#include "ops/kernels/examples.h"

int main() {
  using namespace tilejit;
  using clock = std::chrono::steady_clock;
  try {
    dsl::Kernel gemm = ops::gemm_kernel();
    auto t0 = clock::now();
    auto fn = gemm.trace(gemm.constants());
    auto t1 = clock::now();
    auto compiled = codegen::compile_to_ptx(*fn, codegen::find_target("sm_90a"));
    auto t2 = clock::now();
    auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };

    fmt::print("== tile IR of {} ({:.2f} ms to trace)\n{}\n", fn->name, ms(t1 - t0), fn->str());
    fmt::print("== PTX for sm_90a ({:.1f} ms through LLVM, {} lines); the kernel's entry:\n", ms(t2 - t1),
               std::count(compiled.ptx.begin(), compiled.ptx.end(), '\n'));
    size_t entry = compiled.ptx.find(".visible .entry");
    fmt::print("{}\n", compiled.ptx.substr(entry, compiled.ptx.find('{', entry) - entry + 1));
    if (auto ptxas = codegen::find_ptxas()) {
      auto result = codegen::run_ptxas(compiled.ptx, "sm_90a");
      fmt::print("== ptxas -v -arch=sm_90a ({}):\n{}", result.ok ? "accepted" : "REJECTED", result.log);
      return result.ok ? 0 : 1;
    }
    fmt::print("== ptxas is not installed: skipping assembly (install the CUDA toolkit to see it)\n");
  } catch (const Error& e) {
    std::fprintf(stderr, "demo: %s\n", e.what());
    return 1;
  }
  return 0;
}
