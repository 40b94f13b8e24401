#include "runtime/nccl/nccl_api.h"

#include <dlfcn.h>

#include <cstdlib>
#include <memory>
#include <vector>

#include "dsl/error.h"
#include "dsl/log.h"

#ifndef TILEJIT_CUDA_HOME
#define TILEJIT_CUDA_HOME "/usr/local/cuda"
#endif

namespace tilejit::nccl {
namespace {

struct LoadedNccl {
  std::unique_ptr<NcclApi> api;
  std::string error;
};

std::string version_text(int code) {
  // NCCL_VERSION(X, Y, Z) is X * 10000 + Y * 100 + Z since 2.9.
  return fmt::format("{}.{}.{}", code / 10000, code / 100 % 100, code % 100);
}

std::vector<std::string> library_candidates() {
  if (const char* path = std::getenv("TILEJIT_NCCL_LIBRARY"); path && *path) return {path};
  std::vector<std::string> names = {"libnccl.so.2"};  // the loader's search path
  std::vector<std::string> homes;
  if (const char* home = std::getenv("CUDA_HOME"); home && *home) homes.emplace_back(home);
  homes.emplace_back(TILEJIT_CUDA_HOME);
  for (const std::string& home : homes)
    for (const char* dir : {"/lib64/", "/lib/"}) names.push_back(home + dir + "libnccl.so.2");
  return names;
}

// Resolves every function of the table from `lib`; returns the names it lacks.
std::string resolve_functions(void* lib, NcclApi& api) {
  std::string missing;
#define TILEJIT_NCCL_RESOLVE(name)                                    \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(lib, #name)); \
  if (!api.name) missing += missing.empty() ? #name : ", " #name;
  TILEJIT_NCCL_FUNCTIONS(TILEJIT_NCCL_RESOLVE)
#undef TILEJIT_NCCL_RESOLVE
  return missing;
}

LoadedNccl load_nccl() {
  LoadedNccl out;
  std::string tried;
  for (const std::string& name : library_candidates()) {
    // Never dlclose'd once accepted: the function pointers live as long as the process.
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* why = dlerror();
      tried += fmt::format("\n  {}: {}", name, why ? why : "cannot be loaded");
      continue;
    }
    auto api = std::make_unique<NcclApi>();
    std::string missing = resolve_functions(lib, *api);
    if (missing.empty() && api->ncclGetVersion(&api->version) != ncclSuccess) missing = "a working ncclGetVersion";
    if (missing.empty() && api->version < kMinimumVersion)
      missing =
          fmt::format("version {} or newer (it is {})", version_text(kMinimumVersion), version_text(api->version));
    if (!missing.empty()) {
      tried += fmt::format("\n  {}: lacks {}", name, missing);
      dlclose(lib);
      continue;
    }
    api->path = name;
    log::info("NCCL {} loaded from {}", version_text(api->version), name);
    out.api = std::move(api);
    return out;
  }
  out.error = "no usable NCCL (libnccl.so.2); set TILEJIT_NCCL_LIBRARY to its path. Tried:" + tried;
  return out;
}

// Never destroyed: communicators released during exit still call NCCL.
const LoadedNccl& loaded_nccl() {
  static const LoadedNccl* loaded = new LoadedNccl(load_nccl());
  return *loaded;
}

}  // namespace

const NcclApi& api() {
  const LoadedNccl& loaded = loaded_nccl();
  if (!loaded.api) [[unlikely]]
    throw Error(loaded.error);
  return *loaded.api;
}

std::string describe_failure(ncclResult_t result, const char* call, ncclComm_t comm) {
  const NcclApi& nccl = api();
  const char* name = nccl.ncclGetErrorString(result);
  const char* last = nccl.ncclGetLastError(comm);
  std::string message = fmt::format("NCCL: {} failed: {}", call, name ? name : "unknown error");
  if (last && *last) message += fmt::format(" ({})", last);
  return message;
}

}  // namespace tilejit::nccl
