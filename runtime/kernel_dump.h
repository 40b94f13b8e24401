// TILEJIT_DUMP_DIR=dir: every kernel a device builds writes its tile IR (NAME-DIGEST.ttir) and
// its PTX for the device's target (NAME-DIGEST.ptx) into dir, DIGEST naming the traced IR, so
// each specialization of a kernel gets its own files. The emulator compiles the PTX only for
// the dump. A CUDA device dumps what it builds, not what it finds in the kernel cache
// (TILEJIT_CACHE_DISABLE=1 builds everything).
#pragma once

#include "codegen/target.h"
#include "dsl/ir.h"

namespace tilejit {

void dump_kernel_if_requested(const ir::Function& fn, const codegen::Target& target);

}  // namespace tilejit
