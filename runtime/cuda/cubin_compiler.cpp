#include "runtime/cuda/cubin_compiler.h"

#include <dlfcn.h>
#include <nvJitLink.h>

#include <cstdlib>
#include <cstring>
#include <regex>
#include <vector>

#include "codegen/ptxas.h"
#include "dsl/error.h"
#include "dsl/log.h"

#ifndef TILEJIT_CUDA_HOME
#define TILEJIT_CUDA_HOME "/usr/local/cuda"
#endif

namespace tilejit::cuda {
namespace {

// The nvJitLink functions tilejit uses: (member, exported symbol). The header's inline
// wrappers call these versioned symbols, so the types below are the ABI of the header.
#define TILEJIT_NVJITLINK_FUNCTIONS(X)                          \
  X(create, __nvJitLinkCreate_13_0)                             \
  X(destroy, __nvJitLinkDestroy_13_0)                           \
  X(add_data, __nvJitLinkAddData_13_0)                          \
  X(complete, __nvJitLinkComplete_13_0)                         \
  X(cubin_size, __nvJitLinkGetLinkedCubinSize_13_0)             \
  X(cubin, __nvJitLinkGetLinkedCubin_13_0)                      \
  X(error_log_size, __nvJitLinkGetErrorLogSize_13_0)            \
  X(error_log, __nvJitLinkGetErrorLog_13_0)                     \
  X(info_log_size, __nvJitLinkGetInfoLogSize_13_0)              \
  X(info_log, __nvJitLinkGetInfoLog_13_0)

struct NvJitLinkApi {
#define TILEJIT_NVJITLINK_MEMBER(member, symbol) decltype(&::symbol) member = nullptr;
  TILEJIT_NVJITLINK_FUNCTIONS(TILEJIT_NVJITLINK_MEMBER)
#undef TILEJIT_NVJITLINK_MEMBER
};

struct LoadedNvJitLink {
  NvJitLinkApi api;
  bool ok = false;
  std::string error;
};

std::vector<std::string> nvjitlink_candidates() {
  std::vector<std::string> names;
  if (const char* path = std::getenv("TILEJIT_NVJITLINK"); path && *path) names.emplace_back(path);
  std::vector<std::string> dirs;
  if (const char* home = std::getenv("CUDA_HOME"); home && *home) dirs.push_back(std::string(home) + "/lib64/");
  dirs.push_back(TILEJIT_CUDA_HOME "/lib64/");
  dirs.emplace_back();  // the loader's default search path
  for (auto& dir : dirs)
    for (const char* file : {"libnvJitLink.so.13", "libnvJitLink.so"}) names.push_back(dir + file);
  return names;
}

LoadedNvJitLink load_nvjitlink() {
  LoadedNvJitLink out;
  std::string tried;
  for (const std::string& name : nvjitlink_candidates()) {
    // Never dlclose'd: the function pointers live as long as the process.
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* why = dlerror();
      tried += fmt::format("\n  {}: {}", name, why ? why : "cannot be loaded");
      continue;
    }
    std::string missing;
#define TILEJIT_NVJITLINK_RESOLVE(member, symbol)                                  \
  out.api.member = reinterpret_cast<decltype(out.api.member)>(dlsym(lib, #symbol)); \
  if (!out.api.member) missing += " " #symbol;
    TILEJIT_NVJITLINK_FUNCTIONS(TILEJIT_NVJITLINK_RESOLVE)
#undef TILEJIT_NVJITLINK_RESOLVE
    if (missing.empty()) {
      log::info("nvJitLink loaded from {}", name);
      out.ok = true;
      return out;
    }
    // Another major version: its symbols carry another version suffix.
    tried += fmt::format("\n  {}: lacks{}", name, missing);
    dlclose(lib);
  }
  out.error = "nvJitLink could not be loaded; tried:" + tried;
  return out;
}

const LoadedNvJitLink& nvjitlink() {
  static const LoadedNvJitLink loaded = load_nvjitlink();
  return loaded;
}

int parse_int(const std::string& log, const char* pattern) {
  std::smatch m;
  return std::regex_search(log, m, std::regex(pattern)) ? std::stoi(m[1]) : -1;
}

int spill_bytes(int stores, int loads) { return stores < 0 || loads < 0 ? -1 : stores + loads; }

CubinResult compile_with_nvjitlink(const std::string& ptx, const std::string& arch) {
  const LoadedNvJitLink& lib = nvjitlink();
  if (!lib.ok) fail("TILEJIT_CUBIN_TOOL=nvjitlink, but {}", lib.error);
  const NvJitLinkApi& api = lib.api;
  std::string arch_option = "-arch=" + arch;
  // -verbose makes the info log carry ptxas's resource report (registers, spills).
  const char* options[] = {arch_option.c_str(), "-O3", "-verbose"};
  nvJitLinkHandle handle = nullptr;
  if (nvJitLinkResult r = api.create(&handle, 3, options); r != NVJITLINK_SUCCESS)
    fail("nvJitLink: cannot create a link for {} (nvJitLinkResult {})", arch, static_cast<int>(r));

  auto read_log = [&](auto size_fn, auto log_fn) {
    size_t size = 0;
    if (size_fn(handle, &size) != NVJITLINK_SUCCESS || size == 0) return std::string();
    std::string log(size, '\0');
    if (log_fn(handle, log.data()) != NVJITLINK_SUCCESS) return std::string();
    log.resize(std::strlen(log.c_str()));  // the size counts the terminating NUL
    return log;
  };
  CubinResult result;
  result.format = "cubin";
  result.tool = "nvjitlink";
  nvJitLinkResult r = api.add_data(handle, NVJITLINK_INPUT_PTX, ptx.data(), ptx.size(), "kernel.ptx");
  if (r == NVJITLINK_SUCCESS) r = api.complete(handle);
  result.log = read_log(api.info_log_size, api.info_log);
  if (r == NVJITLINK_SUCCESS) {
    size_t size = 0;
    r = api.cubin_size(handle, &size);
    result.bytes.resize(size);
    if (r == NVJITLINK_SUCCESS) r = api.cubin(handle, result.bytes.data());
  }
  std::string error_log = r == NVJITLINK_SUCCESS ? "" : read_log(api.error_log_size, api.error_log);
  api.destroy(&handle);
  if (r != NVJITLINK_SUCCESS)
    fail("nvJitLink failed to compile PTX for {} (nvJitLinkResult {}):\n{}{}", arch, static_cast<int>(r), error_log,
         result.log);
  result.registers = parse_int(result.log, R"(Used (\d+) registers)");
  result.spill_bytes = spill_bytes(parse_int(result.log, R"((\d+) bytes spill stores)"),
                                   parse_int(result.log, R"((\d+) bytes spill loads)"));
  return result;
}

CubinResult compile_with_ptxas(const std::string& ptx, const std::string& arch) {
  codegen::PtxasResult r = codegen::run_ptxas(ptx, arch);
  if (!r.ok) fail("ptxas failed to compile PTX for {}:\n{}", arch, r.log);
  CubinResult result;
  result.format = "cubin";
  result.tool = "ptxas";
  result.bytes = std::move(r.cubin);
  result.registers = r.registers;
  result.spill_bytes = spill_bytes(r.spill_stores, r.spill_loads);
  result.log = std::move(r.log);
  return result;
}

}  // namespace

const std::string& nvjitlink_load_error() { return nvjitlink().error; }

std::string requested_cubin_tool() {
  const char* forced = std::getenv("TILEJIT_CUBIN_TOOL");
  if (!forced || !*forced) return "auto";
  std::string tool = forced;
  if (tool != "nvjitlink" && tool != "ptxas" && tool != "driver")
    fail("TILEJIT_CUBIN_TOOL={} is not one of nvjitlink, ptxas, driver", tool);
  return tool;
}

std::string cubin_tool() {
  if (std::string tool = requested_cubin_tool(); tool != "auto") return tool;
  if (nvjitlink().ok) return "nvjitlink";
  if (codegen::find_ptxas()) return "ptxas";
  return "driver";
}

CubinResult compile_cubin(const std::string& ptx, const std::string& arch, const std::string& tool) {
  if (tool == "nvjitlink") return compile_with_nvjitlink(ptx, arch);
  if (tool == "ptxas") return compile_with_ptxas(ptx, arch);
  TJ_CHECK(tool == "driver");
  CubinResult result;
  result.format = "ptx";
  result.bytes = ptx;
  result.tool = "driver";
  return result;
}

}  // namespace tilejit::cuda
