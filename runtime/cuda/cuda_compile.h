// A kernel specialization -> a loadable image for a CUDA target, through the kernel cache.
//
// Two cache levels make a warm start free of tracing and LLVM:
//   launch key (the code that defines the kernel, what its body captures, its name,
//               constants, parameters and argument facts, target, options, versions, cubin
//               tool) -> the IR key
//   IR key     (the traced tile IR, target, options, versions, cubin tool) -> the image
// A launch-key hit needs no trace. A miss traces, then the IR key still saves the compile when
// another kernel (or another build of the program) traced to the same IR.
//
// The launch key assumes a kernel's IR follows from what it names (dsl::BodyOrigin): a lambda
// that captures state is described by the code that made it (ops: their memo key), and a body
// that reads a global must put it into a constant or the name. Without a known origin
// (Kernel::code_anchor() null: no anchor, or captures nobody described) only the IR level is
// used.
#pragma once

#include <string>

#include "codegen/target.h"
#include "runtime/device.h"
#include "runtime/kernel_cache.h"

namespace tilejit::cuda {

struct CudaKernelImage {
  KernelReport report;  // report.name is the PTX entry point
  std::string ptx;
  std::string cubin;    // empty when the driver must JIT-compile the PTX at load
};

// The versions every cache key names, so that another tilejit or LLVM never reads this one's
// entries. Tests pass others to check exactly that.
struct ToolchainVersions {
  std::string tilejit, llvm;
  static ToolchainVersions current();
};

// The image's report names the entries it was found by or stored under (launch key, when
// used, then IR key): what a pack must hold for a later process to skip the compile.
CudaKernelImage compile_cuda_kernel(const KernelRequest& request, const codegen::Target& target, KernelCache& cache,
                                    const ToolchainVersions& versions = ToolchainVersions::current());

// Compiles without reading the cache and replaces its entries: for an image the cache served
// that the driver then refused (one a newer toolkit made, in a pack or a shared directory).
// The replacement shadows a pack's entry, which stays as it is.
CudaKernelImage recompile_cuda_kernel(const KernelRequest& request, const codegen::Target& target,
                                      KernelCache& cache,
                                      const ToolchainVersions& versions = ToolchainVersions::current());

}  // namespace tilejit::cuda
