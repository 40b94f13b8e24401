// The tensor-core lowering as PTX: the GEMM of every operand pairing uses the mma.sync
// instruction the target's tensor cores have for it (or none: fp8 on sm_80, ieee f32) with
// operands loaded by ldmatrix where it applies,
// ptxas accepts it for sm_80, sm_89 and sm_90a, and the default tile spills nothing on the
// tensor cores.
#include <gtest/gtest.h>

#include "codegen/mma_layout.h"
#include "ptxas_check.h"
#include "tests/tensor_core_gemm.h"

namespace tilejit::codegen {
namespace {

struct Case {
  DType a, b;
  int precision;  // 0 tf32, 1 ieee, 2 tf32x3
  dsl::Kernel (*kernel)();
};

template <DType A, DType B>
dsl::Kernel gemm() {
  return testing_kernels::tensor_core_gemm<A, B>();
}

const Case kCases[] = {
    {DType::f16, DType::f16, 0, gemm<DType::f16, DType::f16>},
    {DType::bf16, DType::bf16, 0, gemm<DType::bf16, DType::bf16>},
    {DType::f32, DType::f32, 0, gemm<DType::f32, DType::f32>},
    {DType::f32, DType::f32, 1, gemm<DType::f32, DType::f32>},
    {DType::f32, DType::f32, 2, gemm<DType::f32, DType::f32>},
    {DType::i8, DType::i8, 0, gemm<DType::i8, DType::i8>},
    {DType::f8e4m3, DType::f8e4m3, 0, gemm<DType::f8e4m3, DType::f8e4m3>},
    {DType::f8e4m3, DType::f8e5m2, 0, gemm<DType::f8e4m3, DType::f8e5m2>},
    {DType::f8e5m2, DType::f8e4m3, 0, gemm<DType::f8e5m2, DType::f8e4m3>},
    {DType::f8e5m2, DType::f8e5m2, 0, gemm<DType::f8e5m2, DType::f8e5m2>},
};

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(TensorCoreCompile, EveryPairingUsesItsInstructionAndAssemblesWithoutSpills) {
  for (const Case& c : kCases)
    for (const char* arch : {"sm_80", "sm_89", "sm_90a"}) {
      dsl::Kernel kernel = c.kernel();
      SCOPED_TRACE(kernel.name() + " precision " + std::to_string(c.precision) + " " + arch);
      auto fn = kernel.trace(kernel.constants({{"PRECISION", c.precision}}), kernel.aligned_facts());
      CompiledKernel k = compile_to_ptx(*fn, find_target(arch));
      auto instr = select_mma(c.a, c.b, find_target(arch));
      bool tensor_cores = instr && c.precision != 1;
      if (tensor_cores) {
        // 64x64x32 on 4 warps: each warp computes 32x32, 2 x 4 instructions per K step.
        size_t per_k_step = 2 * 4 * static_cast<size_t>(32 / instr->k) * (c.precision == 2 ? 3 : 1);
        EXPECT_EQ(count(k.ptx, instr->ptx_name()), per_k_step);
        // Operands staged in shared memory come back through ldmatrix: A as 2 x (32 / k)
        // x4 loads for 16- and 8-bit elements, B as (32 / k) x 2 transposing x4 loads for
        // 16-bit elements.
        size_t a_loads = instr->element_bits == 32 ? 0 : 2 * static_cast<size_t>(32 / instr->k);
        size_t b_loads = instr->element_bits == 16 ? 2 * static_cast<size_t>(32 / instr->k) : 0;
        EXPECT_EQ(count(k.ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"), a_loads);
        EXPECT_EQ(count(k.ptx, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"), b_loads);
      } else {
        EXPECT_EQ(count(k.ptx, "mma.sync"), 0u);
      }
      // The CUDA-core fallback holds whole K rows per thread: this tile is not its default.
      expect_ptxas_accepts(k, tensor_cores);
    }
}

}  // namespace
}  // namespace tilejit::codegen
