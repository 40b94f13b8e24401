// The emulator's half of "one lowering, two executors": the per-thread LLVM module that the
// NVPTX backend turns into PTX is finalised for the host instead and JIT-compiled with LLVM
// ORC. Finalisation
//   - turns the kernel into a plain host function and adds an entry that takes its
//     arguments the way cuLaunchKernel does (an array of pointers to the values);
//   - binds every GPU operation to the emulation runtime: each `llvm.nvvm.X.Y` intrinsic
//     becomes a call to `tilejit_emu_X_Y`, inline PTX a call to its interpreter,
//     libdevice's `__nv_*` and `vprintf` are looked up by name, and shared-memory variables
//     become offsets into the CTA's shared block;
//   - instruments every global and shared memory access with a call to
//     `tilejit_emu_check_global` / `tilejit_emu_check_shared` / `..._check_cluster_shared`
//     (pointer, bytes, flags), after optimisation, so the accesses checked are the ones that run.
// The runtime supplies the implementations as a name -> address table; no LLVM type appears
// in this header.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "codegen/target.h"
#include "dsl/ir.h"

namespace tilejit::codegen {

// NVPTX's address spaces, as the kernels' IR uses them.
inline constexpr unsigned kGlobalSpace = 1;
inline constexpr unsigned kSharedSpace = 3;
inline constexpr unsigned kClusterSharedSpace = 7;  // shared::cluster: any CTA of the cluster's

// Flags passed to the access checks.
enum HostAccessFlags : uint32_t { kAccessWrite = 1, kAccessAtomic = 2 };

// Names the finalised module calls into (implemented by the emulation runtime).
inline constexpr const char* kHostSharedBase = "tilejit_emu_shared_base";   // () -> ptr addrspace(3)
inline constexpr const char* kHostCheckGlobal = "tilejit_emu_check_global"; // (ptr, i64, i32)
inline constexpr const char* kHostCheckShared = "tilejit_emu_check_shared"; // (ptr, i64, i32)
inline constexpr const char* kHostCheckClusterShared = "tilejit_emu_check_cluster_shared";  // (ptr, i64, i32)
inline constexpr const char* kHostIntToBf16 = "tilejit_emu_i64_to_bf16";    // (i64) -> bfloat, one rounding
inline constexpr const char* kHostFmaBf16 = "tilejit_emu_fma_bf16";  // (bfloat x3) -> bfloat, one rounding
// (ptr text, ptr constraints, ptr inputs, i32 n, ptr outputs, i32 n): runs one inline PTX
// block, operands as 64-bit words (floats as their bits), $0.. the outputs, then the inputs.
inline constexpr const char* kHostInlinePtx = "tilejit_emu_inline_ptx";
inline constexpr const char* kHostIntrinsicPrefix = "tilejit_emu_";

// The runtime name an NVVM intrinsic binds to: "llvm.nvvm.shfl.sync.bfly.i32" ->
// "tilejit_emu_shfl_sync_bfly_i32".
std::string host_intrinsic_name(const std::string& nvvm_intrinsic);

using HostSymbols = std::vector<std::pair<std::string, void*>>;

// A kernel compiled for the host. Calling entry(args) runs one GPU thread of it; the
// emulation runtime provides which thread and CTA that is.
class HostKernel {
 public:
  using Entry = void (*)(void** args);
  virtual ~HostKernel() = default;
  Entry entry() const { return entry_; }
  const std::string& name() const { return name_; }
  int num_threads() const { return num_threads_; }
  int64_t shared_bytes() const { return shared_bytes_; }  // static + dynamic shared memory per CTA
  const std::string& llvm_ir() const { return llvm_ir_; }  // the finalised module, when kept

 protected:
  Entry entry_ = nullptr;
  std::string name_;
  int num_threads_ = 0;
  int64_t shared_bytes_ = 0;
  std::string llvm_ir_;
};

struct HostCompileOptions {
  bool check_accesses = true;  // instrument global and shared accesses
  bool keep_llvm_ir = false;
};

// Lowers `fn` as for `target` (so the host runs the instructions that target's PTX would) and
// JIT-compiles it for the host. Throws tilejit::Error when the module uses a GPU operation
// `symbols` does not implement.
std::unique_ptr<HostKernel> compile_for_host(const ir::Function& fn, const Target& target, const HostSymbols& symbols,
                                             const HostCompileOptions& options = {});

// The same for a hand-written per-thread module in LLVM's text form (a `ptx_kernel`
// function named `kernel_name`, NVVM intrinsics, shared memory in address space 3): lets
// tests plant bugs the lowering never makes.
// `dynamic_shared_bytes` sizes the module's extern shared array, if any.
std::unique_ptr<HostKernel> compile_llvm_text_for_host(const std::string& llvm_ir, const std::string& kernel_name,
                                                       int num_threads, int64_t dynamic_shared_bytes,
                                                       const HostSymbols& symbols,
                                                       const HostCompileOptions& options = {});

}  // namespace tilejit::codegen
