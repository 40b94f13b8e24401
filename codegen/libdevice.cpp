#include "codegen/libdevice.h"

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Support/MemoryBuffer.h>

#include "dsl/error.h"

#ifndef TILEJIT_CUDA_HOME
#define TILEJIT_CUDA_HOME "/usr/local/cuda"
#endif

namespace tilejit::codegen {

std::string libdevice_path() {
  std::vector<std::string> candidates;
  if (const char* p = std::getenv("TILEJIT_LIBDEVICE")) candidates.emplace_back(p);
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* p = std::getenv(var)) candidates.push_back(std::string(p) + "/nvvm/libdevice/libdevice.10.bc");
  candidates.push_back(std::string(TILEJIT_CUDA_HOME) + "/nvvm/libdevice/libdevice.10.bc");
  for (auto& c : candidates)
    if (std::filesystem::exists(c)) return c;
  fail("libdevice.10.bc not found (looked in: {}); set TILEJIT_LIBDEVICE or CUDA_HOME", fmt::join(candidates, ", "));
}

namespace {
// The bitcode is read once per process; each compile parses it lazily in its own context.
const llvm::MemoryBuffer& libdevice_bytes() {
  static std::once_flag once;
  static std::unique_ptr<llvm::MemoryBuffer> buffer;
  std::call_once(once, [] {
    auto file = llvm::MemoryBuffer::getFile(libdevice_path());
    if (!file) fail("cannot read {}: {}", libdevice_path(), file.getError().message());
    buffer = std::move(*file);
  });
  return *buffer;
}
}  // namespace

void link_libdevice(llvm::Module& module) {
  bool needed = false;
  for (auto& f : module.functions()) needed |= f.isDeclaration() && f.getName().starts_with("__nv_");
  if (!needed) return;
  auto lib = llvm::getLazyBitcodeModule(libdevice_bytes().getMemBufferRef(), module.getContext());
  if (!lib) fail("cannot parse libdevice: {}", llvm::toString(lib.takeError()));
  (*lib)->setTargetTriple(module.getTargetTriple());
  (*lib)->setDataLayout(module.getDataLayout());
  if (llvm::Linker::linkModules(module, std::move(*lib), llvm::Linker::LinkOnlyNeeded))
    fail("tilejit internal error: linking libdevice failed");
  for (auto& f : module.functions())
    if (!f.isDeclaration() && f.getName().starts_with("__nv_")) f.setLinkage(llvm::GlobalValue::InternalLinkage);
}

}  // namespace tilejit::codegen
