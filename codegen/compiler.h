// The compiler's entry point: tile IR -> LLVM IR -> PTX for one target. Each compile uses
// its own LLVMContext, so kernels compile in parallel on several threads. No LLVM type
// appears in this header.
#pragma once

#include <cstdint>
#include <string>

#include "codegen/target.h"
#include "dsl/ir.h"

namespace tilejit::codegen {

struct CompileOptions {
  int opt_level = 3;
  bool keep_llvm_ir = false;  // fill CompiledKernel::llvm_ir (the optimized module's text)
};

struct CompiledKernel {
  std::string name;         // the PTX entry point
  std::string arch;
  std::string ptx;
  std::string llvm_ir;      // when requested
  int num_warps = 4;         // launched per CTA, a warp-specialized kernel's producer warps included
  int64_t shared_bytes = 0; // dynamic shared memory per CTA
};

CompiledKernel compile_to_ptx(const ir::Function& fn, const Target& target, const CompileOptions& options = {});

// The LLVM IR of the kernel right after lowering (before libdevice and optimization), as text.
std::string lower_to_llvm_text(const ir::Function& fn, const Target& target);

// LLVM's version string, part of every cache key.
std::string llvm_version();

}  // namespace tilejit::codegen
