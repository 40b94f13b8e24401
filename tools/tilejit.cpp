// The tilejit command line: list, emit, run and tune kernels; inspect devices; inspect, pack
// and import the kernel cache.
#include <cstdio>
#include <exception>
#include <iostream>
#include <new>

#include <CLI/CLI.hpp>

#include "codegen/compiler.h"
#include "ops/kernels/registry.h"
#include "ops/library_runs.h"
#include "runtime/version.h"
#include "tools/commands.h"
#include "tools/settings.h"

namespace {

using namespace tilejit;

int run_list(bool kernels, bool library_ops) {
  if (!kernels && !library_ops) kernels = library_ops = true;
  if (kernels)
    for (auto& k : ops::registered_kernels()) fmt::print("{:<14} {}\n", k.kernel.name(), k.summary);
  if (library_ops)
    for (auto& op : ops::library_runs()) fmt::print("{:<14} {}\n", op.op, op.summary);
  return 0;
}

int run_emit(const std::string& name, const std::string& arch, const std::vector<std::string>& settings,
             const std::string& format, bool generic) {
  const auto& entry = ops::find_kernel(name);
  auto fn = entry.kernel.trace(entry.kernel.constants(tools::parse_settings(settings)), generic ? std::vector<ir::ArgFacts>{} : entry.kernel.aligned_facts());
  if (format == "ir") {
    fmt::print("{}", fn->str());
  } else if (format == "llvm") {
    fmt::print("{}", codegen::lower_to_llvm_text(*fn, codegen::find_target(arch)));
  } else {
    auto compiled = codegen::compile_to_ptx(*fn, codegen::find_target(arch));
    fmt::print("{}", compiled.ptx);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tilejit: a tile-level GPU kernel compiler for C++"};
  app.set_version_flag("--version", fmt::format("tilejit {} (LLVM {})", tilejit_version(), codegen::llvm_version()));
  app.require_subcommand(1);

  std::vector<tools::Command> commands = {tools::add_info_command(app), tools::add_run_command(app),
                                          tools::add_cache_command(app), tools::add_tune_command(app)};
  auto* list = app.add_subcommand("list", "Print the registered kernels and library ops, one per line, name first");
  bool list_kernels = false, list_ops = false;
  list->add_flag("--kernels", list_kernels, "Only the registered kernels (what emit takes)");
  list->add_flag("--ops", list_ops, "Only the library ops");

  auto* emit = app.add_subcommand("emit", "Write a kernel's tile IR, LLVM IR or PTX to stdout");
  std::string kernel, arch = "sm_90a", format = "ptx";
  std::vector<std::string> settings;
  emit->add_option("kernel", kernel, "Registered kernel name")->required();
  emit->add_option("--arch", arch, "Target: sm_80, sm_89, sm_90a, sm_100a")->capture_default_str();
  emit->add_option("--set", settings, "Override a constant: NAME=VALUE (repeatable)");
  bool generic = false;
  emit->add_flag("--generic", generic, "Assume nothing about alignment and divisibility of the arguments");
  emit->add_option("--format", format, "ir, llvm or ptx")->check(CLI::IsMember({"ir", "llvm", "ptx"}))->capture_default_str();

  CLI11_PARSE(app, argc, argv);
  try {
    if (list->parsed()) return run_list(list_kernels, list_ops);
    if (emit->parsed()) return run_emit(kernel, arch, settings, format, generic);
    for (auto& command : commands)
      if (int status = command(); status >= 0) return status;
  } catch (const tilejit::Error& e) {
    std::fprintf(stderr, "tilejit: error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "tilejit: error: out of host memory (a problem too large for this machine?)\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tilejit: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
