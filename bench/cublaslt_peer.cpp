#include "bench/cublaslt_peer.h"

#include <dlfcn.h>

#include <cublasLt.h>

#include "dsl/error.h"

namespace tilejit::bench {
namespace {

// The cuBLASLt entry points the peer uses, resolved from the shared library.
struct CublasLtApi {
  decltype(&cublasLtCreate) create;
  decltype(&cublasLtDestroy) destroy;
  decltype(&cublasLtGetVersion) get_version;
  decltype(&cublasLtMatmulDescCreate) desc_create;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set;
  decltype(&cublasLtMatrixLayoutCreate) layout_create;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy;
  decltype(&cublasLtMatmulPreferenceCreate) preference_create;
  decltype(&cublasLtMatmulPreferenceDestroy) preference_destroy;
  decltype(&cublasLtMatmulPreferenceSetAttribute) preference_set;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic;
  decltype(&cublasLtMatmul) matmul;
};

const CublasLtApi& api() {
  static const CublasLtApi loaded = [] {
    void* lib = nullptr;
    for (const char* name : {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"})
      if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    if (!lib) fail("cuBLASLt is not available: {}", dlerror());
    auto symbol = [lib](const char* name) {
      void* p = dlsym(lib, name);
      if (!p) fail("cuBLASLt lacks {}", name);
      return p;
    };
    CublasLtApi a;
    a.create = reinterpret_cast<decltype(a.create)>(symbol("cublasLtCreate"));
    a.destroy = reinterpret_cast<decltype(a.destroy)>(symbol("cublasLtDestroy"));
    a.get_version = reinterpret_cast<decltype(a.get_version)>(symbol("cublasLtGetVersion"));
    a.desc_create = reinterpret_cast<decltype(a.desc_create)>(symbol("cublasLtMatmulDescCreate"));
    a.desc_destroy = reinterpret_cast<decltype(a.desc_destroy)>(symbol("cublasLtMatmulDescDestroy"));
    a.desc_set = reinterpret_cast<decltype(a.desc_set)>(symbol("cublasLtMatmulDescSetAttribute"));
    a.layout_create = reinterpret_cast<decltype(a.layout_create)>(symbol("cublasLtMatrixLayoutCreate"));
    a.layout_destroy = reinterpret_cast<decltype(a.layout_destroy)>(symbol("cublasLtMatrixLayoutDestroy"));
    a.preference_create = reinterpret_cast<decltype(a.preference_create)>(symbol("cublasLtMatmulPreferenceCreate"));
    a.preference_destroy = reinterpret_cast<decltype(a.preference_destroy)>(symbol("cublasLtMatmulPreferenceDestroy"));
    a.preference_set = reinterpret_cast<decltype(a.preference_set)>(symbol("cublasLtMatmulPreferenceSetAttribute"));
    a.heuristic = reinterpret_cast<decltype(a.heuristic)>(symbol("cublasLtMatmulAlgoGetHeuristic"));
    a.matmul = reinterpret_cast<decltype(a.matmul)>(symbol("cublasLtMatmul"));
    return a;
  }();
  return loaded;
}

void check(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) fail("{} failed with cuBLAS status {}", call, static_cast<int>(status));
}

cudaDataType_t cuda_type(DType d) {
  switch (d) {
    case DType::f32: return CUDA_R_32F;
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    case DType::f8e4m3: return CUDA_R_8F_E4M3;
    case DType::f8e5m2: return CUDA_R_8F_E5M2;
    case DType::i8: return CUDA_R_8I;
    case DType::i32: return CUDA_R_32I;
    default: fail("cuBLASLt peer: no CUDA type for {}", dtype_name(d));
  }
}

}  // namespace

struct CublasLtGemm::State {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t x = nullptr, y = nullptr, d = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  cublasLtMatmulHeuristicResult_t algo{};
  Tensor workspace;
  bool integer = false;

  explicit State(Tensor w) : workspace(std::move(w)) {}
  ~State() {
    const CublasLtApi& a = api();
    if (preference) a.preference_destroy(preference);
    for (cublasLtMatrixLayout_t l : {x, y, d})
      if (l) a.layout_destroy(l);
    if (desc) a.desc_destroy(desc);
    if (handle) a.destroy(handle);
  }
};

// Row-major out (M, N) = A (M, K) @ B is column-major out^T (N, M) = B^T @ A^T: cuBLASLt's
// first operand is our B (op N for B (K, N), op T for B given as (N, K)), its second our A.
CublasLtGemm::CublasLtGemm(Device& gpu, const PeerGemmShape& s) {
  const CublasLtApi& a = api();
  constexpr int64_t kWorkspace = 32 << 20;
  state_ = std::make_unique<State>(Tensor::empty(gpu, DType::i8, {kWorkspace}));
  State& st = *state_;
  st.integer = s.operands == DType::i8;
  check(a.create(&st.handle), "cublasLtCreate");
  cublasComputeType_t compute = st.integer ? CUBLAS_COMPUTE_32I
                                : s.tf32   ? CUBLAS_COMPUTE_32F_FAST_TF32
                                           : CUBLAS_COMPUTE_32F;
  check(a.desc_create(&st.desc, compute, st.integer ? CUDA_R_32I : CUDA_R_32F), "cublasLtMatmulDescCreate");
  cublasOperation_t op_x = s.b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N, op_y = CUBLAS_OP_N;
  check(a.desc_set(st.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_x, sizeof op_x), "set TRANSA");
  check(a.desc_set(st.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_y, sizeof op_y), "set TRANSB");
  if (s.fast_accumulation) {
    int8_t fast = 1;
    check(a.desc_set(st.desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast), "set FAST_ACCUM");
  }
  cudaDataType_t in = cuda_type(s.operands), out = cuda_type(s.out);
  auto n = static_cast<uint64_t>(s.n), m = static_cast<uint64_t>(s.m), k = static_cast<uint64_t>(s.k);
  if (s.b_transposed) check(a.layout_create(&st.x, in, k, n, static_cast<int64_t>(k)), "layout of B");
  else check(a.layout_create(&st.x, in, n, k, static_cast<int64_t>(n)), "layout of B");
  check(a.layout_create(&st.y, in, k, m, static_cast<int64_t>(k)), "layout of A");
  check(a.layout_create(&st.d, out, n, m, static_cast<int64_t>(n)), "layout of out");
  check(a.preference_create(&st.preference), "cublasLtMatmulPreferenceCreate");
  uint64_t workspace = kWorkspace;
  check(a.preference_set(st.preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace),
        "set the workspace size");
  int found = 0;
  check(a.heuristic(st.handle, st.desc, st.x, st.y, st.d, st.d, st.preference, 1, &st.algo, &found),
        "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0) fail("cuBLASLt has no algorithm for this GEMM");
}

CublasLtGemm::~CublasLtGemm() = default;

void CublasLtGemm::run(const Tensor& a, const Tensor& b, const Tensor& out, Stream& stream) {
  State& st = *state_;
  const float alpha_f = 1, beta_f = 0;
  const int32_t alpha_i = 1, beta_i = 0;
  const void* alpha = st.integer ? static_cast<const void*>(&alpha_i) : &alpha_f;
  const void* beta = st.integer ? static_cast<const void*>(&beta_i) : &beta_f;
  check(api().matmul(st.handle, st.desc, alpha, b.data(), st.x, a.data(), st.y, beta, out.data(), st.d, out.data(),
                     st.d, &st.algo.algo, st.workspace.data(), static_cast<size_t>(st.workspace.bytes()),
                     static_cast<cudaStream_t>(stream.handle())),
        "cublasLtMatmul");
}

std::string CublasLtGemm::version() const { return fmt::format("cuBLASLt {}", api().get_version()); }

}  // namespace tilejit::bench
