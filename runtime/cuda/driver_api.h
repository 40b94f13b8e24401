// The CUDA Driver API, loaded with dlopen("libcuda.so.1") at first use, so tilejit builds,
// links and runs on machines with no GPU and no driver. The toolkit's cuda.h gives the types;
// this header is internal to runtime/ (no header users include may include it).
//
// Each function is resolved with cuGetProcAddress at the CUDA version of its declaration in
// cuda.h (or the driver's, when older), so each pointer has exactly the ABI it is called with.
// That version is per function, not cuda.h's CUDA_VERSION: CUDA 13.0's cuda.h still declares
// cuCtxSynchronize(void), while "cuCtxSynchronize" at 13.0 is cuCtxSynchronize_v2(CUcontext).
// driver_api.cpp checks each version against the toolkit's PFN_<name>_v<version> typedef at
// compile time.
#pragma once

#include <cuda.h>

#include <string>
#include <string_view>

// Every driver function tilejit calls besides the bootstrap ones (cuInit, cuDriverGetVersion,
// cuGetProcAddress), which driver_api.cpp resolves with dlsym, with the CUDA version of the
// ABI cuda.h declares for it (cuMemAlloc is cuMemAlloc_v2, of CUDA 3.2).
#define TILEJIT_CUDA_DRIVER_FUNCTIONS(X)     \
  X(cuDeviceGetCount, 2000)                  \
  X(cuDeviceGet, 2000)                       \
  X(cuDeviceGetName, 2000)                   \
  X(cuDeviceGetAttribute, 2000)              \
  X(cuDeviceTotalMem, 3020)                  \
  X(cuDevicePrimaryCtxRetain, 7000)          \
  X(cuDevicePrimaryCtxRelease, 11000)        \
  X(cuCtxSetCurrent, 4000)                   \
  X(cuCtxSynchronize, 2000)                  \
  X(cuStreamCreate, 2000)                    \
  X(cuStreamDestroy, 4000)                   \
  X(cuStreamSynchronize, 2000)               \
  X(cuStreamQuery, 2000)                     \
  X(cuEventCreate, 2000)                     \
  X(cuEventRecord, 2000)                     \
  X(cuEventSynchronize, 2000)                \
  X(cuEventElapsedTime, 12080)               \
  X(cuEventDestroy, 4000)                    \
  X(cuMemAlloc, 3020)                        \
  X(cuMemFree, 3020)                         \
  X(cuMemPoolCreate, 11020)                  \
  X(cuMemPoolSetAttribute, 11020)            \
  X(cuMemAllocFromPoolAsync, 11020)          \
  X(cuMemFreeAsync, 11020)                   \
  X(cuMemPoolTrimTo, 11020)                  \
  X(cuMemsetD8Async, 3020)                   \
  X(cuMemcpyHtoDAsync, 3020)                 \
  X(cuMemcpyDtoHAsync, 3020)                 \
  X(cuMemcpyDtoDAsync, 3020)                 \
  X(cuModuleLoadDataEx, 2010)                \
  X(cuModuleUnload, 2000)                    \
  X(cuModuleGetFunction, 2000)               \
  X(cuFuncSetAttribute, 9000)                \
  X(cuFuncGetAttribute, 2020)                \
  X(cuLaunchKernel, 4000)                    \
  X(cuLaunchKernelEx, 11060)                 \
  X(cuTensorMapEncodeTiled, 12000)           \
  X(cuGetErrorName, 6000)                    \
  X(cuGetErrorString, 6000)

namespace tilejit::cuda {

// One pointer per function. A member is named after the macro-expanded name (cuMemAlloc_v2),
// and so is every use of `api.cuMemAlloc`, so the two always agree.
struct DriverApi {
#define TILEJIT_CUDA_DECLARE_MEMBER(name, version) decltype(&::name) name = nullptr;
  TILEJIT_CUDA_DRIVER_FUNCTIONS(TILEJIT_CUDA_DECLARE_MEMBER)
#undef TILEJIT_CUDA_DECLARE_MEMBER
  int version = 0;  // cuDriverGetVersion: 1000 * major + 10 * minor
};

// The loaded and initialized driver. Throws tilejit::Error when there is none (the message
// names libcuda.so.1 and the loader's reason) or cuInit failed; the outcome of the first
// attempt is kept for the process.
const DriverApi& driver();

// Throws "CUDA driver: <call> failed: <NAME> (<text>)", then `context` when given.
[[noreturn]] void fail_call(CUresult result, const char* call, std::string_view context = {});

// The result's name ("CUDA_ERROR_INVALID_IMAGE").
std::string result_name(CUresult result);

// Whether `result`, from loading a module or finding its function, says the image itself is
// unusable here (made for another GPU or by a newer toolkit, PTX the driver's JIT cannot
// compile, a missing entry point), rather than the device or its memory failing.
bool rejects_module_image(CUresult result);

inline void check(CUresult result, const char* call) {
  if (result != CUDA_SUCCESS) [[unlikely]]
    fail_call(result, call);
}

}  // namespace tilejit::cuda

namespace tilejit {

// True when libcuda.so.1 loads and cuInit succeeds. Never throws.
bool cuda_driver_available();
// The driver's CUDA version (12080 for 12.8), 0 without a driver. Never throws.
int cuda_driver_version();

}  // namespace tilejit

// Calls a driver function and turns a failure into a tilejit::Error naming the call:
//   TJ_CU(cuMemAlloc, &ptr, bytes);
#define TJ_CU(fn, ...) ::tilejit::cuda::check(::tilejit::cuda::driver().fn(__VA_ARGS__), #fn)
