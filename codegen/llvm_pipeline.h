// Internal to codegen/: the LLVM pieces both finalisations (NVPTX and host) share.
#pragma once

#include <string>

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

namespace tilejit::codegen {

// LLVM's default module pipeline at `opt_level`. `vectorize` off keeps the memory accesses
// the lowering chose (the host must not invent vector accesses the GPU code does not make).
void optimize_module(llvm::Module& m, llvm::TargetMachine& tm, int opt_level, bool vectorize = true);

std::string module_text(const llvm::Module& m);

// Throws tilejit internal error with the verifier's message and the module when invalid.
void verify_module(const llvm::Module& m, const std::string& what);

}  // namespace tilejit::codegen
