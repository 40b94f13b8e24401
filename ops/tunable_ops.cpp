#include "ops/tunable_ops.h"

#include <fmt/ranges.h>

#include <optional>

#include "dsl/error.h"
#include "ops/attention/tuning.h"
#include "ops/gemm.h"
#include "ops/gemm/gemm_tuning.h"
#include "ops/kernels/example_tuning.h"

namespace tilejit::ops {
namespace {

struct GemmKind {
  const char* name;
  DType dtype;
  dsl::Precision precision;
};
constexpr GemmKind kGemmKinds[] = {
    {"bf16", DType::bf16, dsl::Precision::tf32},        {"f16", DType::f16, dsl::Precision::tf32},
    {"f8e4m3", DType::f8e4m3, dsl::Precision::tf32},    {"f8e5m2", DType::f8e5m2, dsl::Precision::tf32},
    {"i8", DType::i8, dsl::Precision::tf32},            {"tf32", DType::f32, dsl::Precision::tf32},
    {"f32", DType::f32, dsl::Precision::ieee},
};
constexpr const char* kLayouts[] = {"nn", "nt", "tn", "tt"};

std::optional<gemm_detail::GemmTuningSpec> gemm_spec(const std::string& name) {
  for (const GemmKind& kind : kGemmKinds)
    for (const char* layout : kLayouts) {
      if (name != fmt::format("gemm_{}_{}", kind.name, layout)) continue;
      GemmOptions defaults;
      return gemm_detail::GemmTuningSpec{kind.dtype,     kind.dtype,        gemm_out_dtype(kind.dtype, defaults),
                                         kind.precision, layout[0] == 't', layout[1] == 't'};
    }
  return std::nullopt;
}

using attention_detail::TunedKernel;
constexpr std::pair<const char*, TunedKernel> kAttentionKernels[] = {
    {"attention", TunedKernel::forward}, {"attention_dkdv", TunedKernel::dkdv}, {"attention_dq", TunedKernel::dq}};

// <kernel>_<dtype>_h<H>[_causal]: a head dim H that attention takes (a multiple of 8 up to 256).
const autotune::TunableKernel* attention_op(const std::string& name) {
  for (auto [prefix, kernel] : kAttentionKernels)
    for (DType dtype : {DType::bf16, DType::f16, DType::f32})
      for (int64_t head_dim = 8; head_dim <= 256; head_dim += 8)
        for (bool causal : {false, true})
          if (name == fmt::format("{}_{}_h{}{}", prefix, dtype_name(dtype), head_dim, causal ? "_causal" : ""))
            return &attention_detail::attention_tunable({dtype, head_dim, causal}, kernel);
  return nullptr;
}

}  // namespace

const autotune::TunableKernel& find_tunable_op(const std::string& name) {
  for (const autotune::TunableKernel& op : tunable_examples())
    if (op.name == name) return op;
  if (auto spec = gemm_spec(name)) return gemm_detail::gemm_tunable(*spec);
  if (const autotune::TunableKernel* op = attention_op(name)) return *op;
  fail("no tunable op '{}' (tunable: {})", name, fmt::join(tunable_op_names(), ", "));
}

std::vector<std::string> tunable_op_names() {
  std::vector<std::string> names;
  for (const autotune::TunableKernel& op : tunable_examples()) names.push_back(op.name);
  std::vector<std::string> gemm_dtypes;
  for (const GemmKind& kind : kGemmKinds) gemm_dtypes.push_back(kind.name);
  names.push_back(fmt::format("gemm_<{}>_<{}>", fmt::join(gemm_dtypes, "|"), fmt::join(kLayouts, "|")));
  for (auto [prefix, kernel] : kAttentionKernels)
    names.push_back(fmt::format("{}_<bf16|f16|f32>_h<head dim: 8, 16, ..., 256>[_causal]", prefix));
  return names;
}

}  // namespace tilejit::ops
