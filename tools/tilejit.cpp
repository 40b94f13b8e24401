// The tilejit command line: list the registered kernels and show what the compiler makes
// of them at each stage.
#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>

#include "codegen/compiler.h"
#include "ops/kernels/registry.h"

namespace {

using namespace tilejit;

// "NAME=VALUE" pairs from --set.
std::vector<std::pair<std::string, int64_t>> parse_settings(const std::vector<std::string>& settings) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (auto& s : settings) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) fail("--set expects NAME=VALUE, got '{}'", s);
    std::string value = s.substr(eq + 1);
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(value, &used, 0);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != value.size()) fail("--set {}: '{}' is not an integer", s.substr(0, eq), value);
    out.emplace_back(s.substr(0, eq), v);
  }
  return out;
}

int run_list() {
  for (auto& k : ops::registered_kernels()) fmt::print("{:<12} {}\n", k.kernel.name(), k.summary);
  return 0;
}

int run_emit(const std::string& name, const std::string& arch, const std::vector<std::string>& settings,
             const std::string& format, bool generic) {
  const auto& entry = ops::find_kernel(name);
  auto fn = entry.kernel.trace(entry.kernel.constants(parse_settings(settings)), generic ? std::vector<ir::ArgFacts>{} : entry.kernel.aligned_facts());
  if (format == "ir") {
    fmt::print("{}", fn->str());
  } else if (format == "llvm") {
    fmt::print("{}", codegen::lower_to_llvm_text(*fn));
  } else {
    auto compiled = codegen::compile_to_ptx(*fn, codegen::find_target(arch));
    fmt::print("{}", compiled.ptx);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tilejit: a tile-level GPU kernel compiler for C++"};
  app.set_version_flag("--version", fmt::format("tilejit {} (LLVM {})", TILEJIT_VERSION, codegen::llvm_version()));
  app.require_subcommand(1);

  auto* list = app.add_subcommand("list", "Print the registered kernels, one per line, name first");

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
    if (list->parsed()) return run_list();
    if (emit->parsed()) return run_emit(kernel, arch, settings, format, generic);
  } catch (const tilejit::Error& e) {
    std::fprintf(stderr, "tilejit: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
