#include "codegen/compiler.h"

#include <mutex>

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Triple.h>

#include "codegen/libdevice.h"
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

std::string module_text(const llvm::Module& m) {
  std::string text;
  llvm::raw_string_ostream os(text);
  m.print(os, nullptr);
  return text;
}

void optimize(llvm::Module& m, llvm::TargetMachine& tm, int opt_level) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = opt_level >= 3 ? llvm::OptimizationLevel::O3
                                  : opt_level == 2 ? llvm::OptimizationLevel::O2
                                  : opt_level == 1 ? llvm::OptimizationLevel::O1
                                                   : llvm::OptimizationLevel::O0;
  llvm::ModulePassManager mpm = level == llvm::OptimizationLevel::O0 ? pb.buildO0DefaultPipeline(level)
                                                                     : pb.buildPerModuleDefaultPipeline(level);
  mpm.run(m, mam);
}

}  // namespace

std::string llvm_version() { return LLVM_VERSION_STRING; }

std::string lower_to_llvm_text(const ir::Function& fn) {
  llvm::LLVMContext context;
  return module_text(*lower_to_llvm(fn, context).module);
}

CompiledKernel compile_to_ptx(const ir::Function& fn, const Target& target, const CompileOptions& options) {
  llvm::LLVMContext context;  // one per compile: compiles on different threads share nothing
  LoweredKernel lowered = lower_to_llvm(fn, context);
  llvm::Module& m = *lowered.module;
  auto tm = make_target_machine(target);
  m.setTargetTriple(llvm::Triple(kTriple));
  m.setDataLayout(tm->createDataLayout());
  m.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t{0});
  link_libdevice(m);
  optimize(m, *tm, options.opt_level);

  std::string verify_errors;
  llvm::raw_string_ostream vs(verify_errors);
  if (llvm::verifyModule(m, &vs))
    fail("tilejit internal error: optimized module of kernel {} is invalid: {}\n{}", fn.name, verify_errors, module_text(m));

  CompiledKernel out;
  out.name = fn.name;
  out.arch = target.arch;
  out.num_warps = fn.num_warps;
  out.shared_bytes = lowered.shared_bytes;
  if (options.keep_llvm_ir) out.llvm_ir = module_text(m);

  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream os(ptx);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile))
    fail("tilejit internal error: NVPTX cannot emit assembly for {}", target.arch);
  pm.run(m);
  out.ptx = ptx.str().str();
  return out;
}

}  // namespace tilejit::codegen
