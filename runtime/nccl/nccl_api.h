// NCCL, loaded with dlopen("libnccl.so.2") at first use, so tilejit builds, links and runs
// on machines without NCCL; the toolkit's nccl.h gives the types. Internal to runtime/: only
// runtime/nccl/*.cpp include it (runtime/nccl/nccl_comm.h is the C++ face the rest uses).
//
// Where the library comes from: TILEJIT_NCCL_LIBRARY (a path) when set, else the loader's
// search path, else the toolkit's lib64/ and lib/ folders under CUDA_HOME and the CUDA home
// tilejit was built with.
#pragma once

#include <nccl.h>

#include <string>

// Every NCCL function tilejit calls. ncclCommSplit (2.18) is the newest of them.
#define TILEJIT_NCCL_FUNCTIONS(X) \
  X(ncclGetVersion)               \
  X(ncclGetUniqueId)              \
  X(ncclGetErrorString)           \
  X(ncclGetLastError)             \
  X(ncclCommInitRankConfig)       \
  X(ncclCommSplit)                \
  X(ncclCommFinalize)             \
  X(ncclCommDestroy)              \
  X(ncclCommAbort)                \
  X(ncclCommGetAsyncError)        \
  X(ncclCommCount)                \
  X(ncclCommUserRank)             \
  X(ncclGroupStart)               \
  X(ncclGroupEnd)                 \
  X(ncclReduceScatter)            \
  X(ncclAllGather)                \
  X(ncclAllReduce)

namespace tilejit::nccl {

// The oldest NCCL with every function above.
inline constexpr int kMinimumVersion = NCCL_VERSION(2, 18, 0);

struct NcclApi {
#define TILEJIT_NCCL_DECLARE_MEMBER(name) decltype(&::name) name = nullptr;
  TILEJIT_NCCL_FUNCTIONS(TILEJIT_NCCL_DECLARE_MEMBER)
#undef TILEJIT_NCCL_DECLARE_MEMBER
  int version = 0;   // NCCL_VERSION_CODE of the loaded library (22809 for 2.28.9)
  std::string path;  // where it was loaded from
};

// The loaded library. Throws tilejit::Error naming every place tried when there is none, or
// when it is older than kMinimumVersion; the outcome of the first attempt is kept.
const NcclApi& api();

// "NCCL: <call> failed: <name> (<NCCL's last error>)".
std::string describe_failure(ncclResult_t result, const char* call, ncclComm_t comm);

}  // namespace tilejit::nccl
