#include "codegen/compiler.h"

#include <mutex>

#include <llvm/Config/llvm-config.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Triple.h>

#include "codegen/libdevice.h"
#include "codegen/llvm_pipeline.h"
#include "codegen/lowering/lowering.h"

namespace tilejit::codegen {
namespace {

constexpr const char* kTriple = "nvptx64-nvidia-cuda";

void initialize_nvptx() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

std::unique_ptr<llvm::TargetMachine> make_target_machine(const Target& target) {
  initialize_nvptx();
  llvm::Triple triple(kTriple);
  std::string error;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!t) fail("tilejit internal error: LLVM has no NVPTX target: {}", error);
  llvm::TargetOptions options;
  return std::unique_ptr<llvm::TargetMachine>(t->createTargetMachine(
      triple, target.arch, target.ptx_feature, options, llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
}

}  // namespace

std::string llvm_version() { return LLVM_VERSION_STRING; }

std::string lower_to_llvm_text(const ir::Function& fn, const Target& target) {
  llvm::LLVMContext context;
  return module_text(*lower_to_llvm(fn, target, context).module);
}

CompiledKernel compile_to_ptx(const ir::Function& fn, const Target& target, const CompileOptions& options) {
  llvm::LLVMContext context;  // one per compile: compiles on different threads share nothing
  LoweredKernel lowered = lower_to_llvm(fn, target, context);
  llvm::Module& m = *lowered.module;
  auto tm = make_target_machine(target);
  m.setTargetTriple(llvm::Triple(kTriple));
  m.setDataLayout(tm->createDataLayout());
  m.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t{0});
  link_libdevice(m);
  optimize_module(m, *tm, options.opt_level);
  verify_module(m, "optimized module of kernel " + fn.name);

  CompiledKernel out;
  out.name = fn.name;
  out.arch = target.arch;
  out.num_warps = lowered.num_threads / 32;
  out.shared_bytes = lowered.shared_bytes;
  if (options.keep_llvm_ir) out.llvm_ir = module_text(m);

  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream os(ptx);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile))
    fail("tilejit internal error: NVPTX cannot emit assembly for {}", target.arch);
  pm.run(m);
  out.ptx = ptx.str().str();
  // Older NVPTX backends drop the function attribute that carries the cluster shape.
  if (fn.cluster_ctas() > 1 && out.ptx.find(".reqnctapercluster") == std::string::npos)
    fail("kernel {}: LLVM {} did not emit the kernel's cluster shape (.reqnctapercluster); thread-block clusters "
         "need a newer LLVM",
         fn.name, llvm_version());
  return out;
}

}  // namespace tilejit::codegen
