#include "runtime/cuda/driver_api.h"

#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <algorithm>
#include <memory>
#include <string>
#include <type_traits>

#include "dsl/error.h"
#include "dsl/log.h"
#include "runtime/device_lost.h"

namespace tilejit::cuda {
namespace {

// Each function's version is the one whose ABI cuda.h declares: the toolkit's typedef of that
// version has the same type as the declaration (a toolkit that changes a declaration stops
// the build here instead of calling through the wrong ABI).
#define TILEJIT_CUDA_CHECK_ABI(name, version)                            \
  static_assert(std::is_same_v<decltype(&::name), PFN_##name##_v##version>, \
                #name ": cuda.h declares another ABI than that of CUDA version " #version);
TILEJIT_CUDA_DRIVER_FUNCTIONS(TILEJIT_CUDA_CHECK_ABI)
#undef TILEJIT_CUDA_CHECK_ABI

// The outcome of loading the driver: the table, or why there is none.
struct LoadedDriver {
  std::unique_ptr<DriverApi> api;
  std::string error;
};

std::string error_name(const DriverApi& api, CUresult result) {
  const char* name = nullptr;
  if (api.cuGetErrorName && api.cuGetErrorName(result, &name) == CUDA_SUCCESS && name) return name;
  return fmt::format("CUresult {}", static_cast<int>(result));
}

std::string error_text(const DriverApi& api, CUresult result) {
  const char* text = nullptr;
  if (api.cuGetErrorString && api.cuGetErrorString(result, &text) == CUDA_SUCCESS && text) return text;
  return "no description";
}

// The errors cuda.h says leave the process's context unusable ("any further CUDA work will
// return the same error"), a device-side assert among them.
bool leaves_context_unusable(CUresult result) {
  switch (result) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_CONTAINED:
      return true;
    default:
      return false;
  }
}

std::string call_failure(const DriverApi& api, CUresult result, const char* call) {
  return fmt::format("CUDA driver: {} failed: {} ({})", call, error_name(api, result), error_text(api, result));
}

LoadedDriver load_driver() {
  LoadedDriver out;
  // Never dlclose'd: the function pointers live as long as the process.
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    out.error = fmt::format("no CUDA driver: libcuda.so.1 could not be loaded ({}); use the emulator (Device::emu())",
                            why ? why : "unknown reason");
    return out;
  }
  // The bootstrap functions have had one ABI since CUDA 12.0, so plain dlsym finds them.
  auto init = reinterpret_cast<decltype(&::cuInit)>(dlsym(lib, "cuInit"));
  auto get_version = reinterpret_cast<decltype(&::cuDriverGetVersion)>(dlsym(lib, "cuDriverGetVersion"));
  auto get_proc = reinterpret_cast<decltype(&::cuGetProcAddress)>(dlsym(lib, "cuGetProcAddress_v2"));
  if (!init || !get_version || !get_proc) {
    out.error = "CUDA driver too old: libcuda.so.1 has no cuGetProcAddress_v2 (a CUDA 12.0 or newer driver is needed)";
    return out;
  }
  auto api = std::make_unique<DriverApi>();
  CUresult init_result = init(0);
  if (get_version(&api->version) != CUDA_SUCCESS) api->version = 0;
  std::string missing;
  // Asking for a version newer than the driver's is an error, so ask for the older of the two.
  auto resolve = [&](const char* name, int declared_version, void** slot) {
    CUdriverProcAddressQueryResult status{};
    const int version = std::min(declared_version, api->version);
    if (get_proc(name, slot, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status) != CUDA_SUCCESS || !*slot) {
      *slot = nullptr;
      missing += missing.empty() ? name : fmt::format(", {}", name);
    }
  };
  // #name is the base name cuGetProcAddress wants ("cuMemAlloc"); the member is the versioned one.
#define TILEJIT_CUDA_RESOLVE(name, version) resolve(#name, version, reinterpret_cast<void**>(&api->name));
  TILEJIT_CUDA_DRIVER_FUNCTIONS(TILEJIT_CUDA_RESOLVE)
#undef TILEJIT_CUDA_RESOLVE
  if (init_result != CUDA_SUCCESS) {
    out.error = call_failure(*api, init_result, "cuInit");
    return out;
  }
  if (!missing.empty()) {
    out.error = fmt::format("CUDA driver {}.{} lacks functions tilejit needs: {}", api->version / 1000,
                            api->version % 1000 / 10, missing);
    return out;
  }
  log::info("CUDA driver {}.{} loaded", api->version / 1000, api->version % 1000 / 10);
  out.api = std::move(api);
  return out;
}

// Never destroyed: kernels and streams released during exit still call the driver.
const LoadedDriver& loaded_driver() {
  static const LoadedDriver* loaded = new LoadedDriver(load_driver());
  return *loaded;
}

}  // namespace

const DriverApi& driver() {
  const LoadedDriver& loaded = loaded_driver();
  if (!loaded.api) [[unlikely]]
    throw Error(loaded.error);
  return *loaded.api;
}

void fail_call(CUresult result, const char* call, std::string_view context) {
  std::string message = call_failure(driver(), result, call);
  if (!context.empty()) message += fmt::format(" ({})", context);
  if (leaves_context_unusable(result))
    throw DeviceLost(message + "; the device cannot be used again in this process");
  throw Error(message);
}

std::string result_name(CUresult result) { return error_name(driver(), result); }

bool rejects_module_image(CUresult result) {
  switch (result) {
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case CUDA_ERROR_JIT_COMPILER_NOT_FOUND:
    case CUDA_ERROR_JIT_COMPILATION_DISABLED:
    case CUDA_ERROR_INVALID_SOURCE:
    case CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND:
    case CUDA_ERROR_NOT_FOUND:  // the entry point the report names is not in the module
      return true;
    default:
      return false;
  }
}

}  // namespace tilejit::cuda

namespace tilejit {

bool cuda_driver_available() { return cuda::loaded_driver().api != nullptr; }

int cuda_driver_version() {
  const auto& loaded = cuda::loaded_driver();
  return loaded.api ? loaded.api->version : 0;
}

}  // namespace tilejit
