#include "runtime/kernel_dump.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "codegen/compiler.h"
#include "dsl/error.h"
#include "runtime/kernel_cache.h"

namespace tilejit {
namespace {

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out.flush()) fail("TILEJIT_DUMP_DIR: cannot write {}", path.string());
}

}  // namespace

void dump_kernel_if_requested(const ir::Function& fn, const codegen::Target& target) {
  const char* dir = std::getenv("TILEJIT_DUMP_DIR");
  if (!dir || !*dir) return;
  std::string ir = fn.str();
  std::filesystem::path stem = std::filesystem::path(dir) / (fn.name + "-" + cache_key({ir, target.arch}).substr(0, 12));
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) fail("TILEJIT_DUMP_DIR: cannot create {}: {}", dir, error.message());
  write_text(stem.string() + ".ttir", ir);
  write_text(stem.string() + ".ptx", codegen::compile_to_ptx(fn, target).ptx);
}

}  // namespace tilejit
