// Internal to codegen/: locating and linking NVIDIA's libdevice (the math library as LLVM
// bitcode that ships with the CUDA toolkit).
#pragma once

#include <string>

#include <llvm/IR/Module.h>

namespace tilejit::codegen {

// The path of libdevice.10.bc: $TILEJIT_LIBDEVICE, else under $CUDA_HOME or the default
// toolkit location. Throws tilejit::Error when none exists.
std::string libdevice_path();

// Links the libdevice functions `module` calls into it (nothing else) and internalizes them.
void link_libdevice(llvm::Module& module);

}  // namespace tilejit::codegen
