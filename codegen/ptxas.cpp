#include "codegen/ptxas.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "dsl/error.h"

#ifndef TILEJIT_CUDA_HOME
#define TILEJIT_CUDA_HOME "/usr/local/cuda"
#endif

namespace tilejit::codegen {
namespace fs = std::filesystem;

std::optional<std::string> find_ptxas() {
  std::vector<std::string> candidates;
  if (const char* p = std::getenv("TILEJIT_PTXAS")) candidates.emplace_back(p);
  if (const char* p = std::getenv("CUDA_HOME")) candidates.push_back(std::string(p) + "/bin/ptxas");
  candidates.push_back(std::string(TILEJIT_CUDA_HOME) + "/bin/ptxas");
  if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    std::string dir;
    while (std::getline(dirs, dir, ':'))
      if (!dir.empty()) candidates.push_back(dir + "/ptxas");
  }
  for (auto& c : candidates)
    if (access(c.c_str(), X_OK) == 0) return c;
  return std::nullopt;
}

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

int parse_int(const std::string& log, const std::regex& re) {
  std::smatch m;
  return std::regex_search(log, m, re) ? std::stoi(m[1]) : -1;
}

}  // namespace

PtxasResult run_ptxas(const std::string& ptx, const std::string& arch) {
  auto ptxas = find_ptxas();
  if (!ptxas) fail("ptxas not found: install the CUDA toolkit, or set TILEJIT_PTXAS or CUDA_HOME");
  std::string dir_template = (fs::temp_directory_path() / "tilejit-ptxas-XXXXXX").string();
  if (!mkdtemp(dir_template.data())) fail("cannot create a temporary directory for ptxas");
  fs::path dir = dir_template;
  fs::path in = dir / "kernel.ptx", out = dir / "kernel.cubin", log = dir / "log.txt";
  std::ofstream(in, std::ios::binary) << ptx;

  PtxasResult result;
  std::fflush(nullptr);  // the child must not inherit (and flush again) our buffered output
  pid_t pid = fork();
  if (pid == 0) {
    FILE* f = std::freopen(log.c_str(), "w", stdout);
    if (f) dup2(fileno(stdout), STDERR_FILENO);
    execl(ptxas->c_str(), "ptxas", "-v", ("-arch=" + arch).c_str(), in.c_str(), "-o", out.c_str(), nullptr);
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0) {
    fs::remove_all(dir);
    fail("cannot run {}", *ptxas);
  }
  result.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  result.log = read_file(log);
  if (result.ok) result.cubin = read_file(out);
  result.registers = parse_int(result.log, std::regex(R"(Used (\d+) registers)"));
  result.spill_stores = parse_int(result.log, std::regex(R"((\d+) bytes spill stores)"));
  result.spill_loads = parse_int(result.log, std::regex(R"((\d+) bytes spill loads)"));
  fs::remove_all(dir);
  return result;
}

}  // namespace tilejit::codegen
