// The CUDA Driver API, loaded with dlopen("libcuda.so.1") at first use, so tilejit builds,
// links and runs on machines with no GPU and no driver. The toolkit's cuda.h gives the types;
// this header is internal to runtime/ (no header users include may include it).
//
// Functions are resolved with cuGetProcAddress at the CUDA version cuda.h declares (or the
// driver's, when older), so each pointer has exactly the ABI of its declaration in cuda.h
// (cuMemAlloc is cuMemAlloc_v2, and so on).
#pragma once

#include <cuda.h>

#include <string>
#include <string_view>

// Every driver function tilejit calls besides the bootstrap ones (cuInit, cuDriverGetVersion,
// cuGetProcAddress), which driver_api.cpp resolves with dlsym.
#define TILEJIT_CUDA_DRIVER_FUNCTIONS(X) \
  X(cuDeviceGetCount)                    \
  X(cuDeviceGet)                         \
  X(cuDeviceGetName)                     \
  X(cuDeviceGetAttribute)                \
  X(cuDeviceTotalMem)                    \
  X(cuDevicePrimaryCtxRetain)            \
  X(cuDevicePrimaryCtxRelease)           \
  X(cuCtxSetCurrent)                     \
  X(cuCtxSynchronize)                    \
  X(cuStreamCreate)                      \
  X(cuStreamDestroy)                     \
  X(cuStreamSynchronize)                 \
  X(cuStreamQuery)                       \
  X(cuEventCreate)                       \
  X(cuEventRecord)                       \
  X(cuEventSynchronize)                  \
  X(cuEventElapsedTime)                  \
  X(cuEventDestroy)                      \
  X(cuMemAlloc)                          \
  X(cuMemFree)                           \
  X(cuMemPoolCreate)                     \
  X(cuMemPoolSetAttribute)               \
  X(cuMemAllocFromPoolAsync)             \
  X(cuMemFreeAsync)                      \
  X(cuMemPoolTrimTo)                     \
  X(cuMemsetD8Async)                     \
  X(cuMemcpyHtoDAsync)                   \
  X(cuMemcpyDtoHAsync)                   \
  X(cuMemcpyDtoDAsync)                   \
  X(cuModuleLoadDataEx)                  \
  X(cuModuleUnload)                      \
  X(cuModuleGetFunction)                 \
  X(cuFuncSetAttribute)                  \
  X(cuFuncGetAttribute)                  \
  X(cuLaunchKernel)                      \
  X(cuLaunchKernelEx)                    \
  X(cuTensorMapEncodeTiled)              \
  X(cuGetErrorName)                      \
  X(cuGetErrorString)

namespace tilejit::cuda {

// One pointer per function. A member is named after the macro-expanded name (cuMemAlloc_v2),
// and so is every use of `api.cuMemAlloc`, so the two always agree.
struct DriverApi {
#define TILEJIT_CUDA_DECLARE_MEMBER(name) decltype(&::name) name = nullptr;
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
