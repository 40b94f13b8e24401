#include "ops/tunable_ops.h"

#include <fmt/ranges.h>

#include <optional>

#include "dsl/error.h"
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

}  // namespace

const autotune::TunableKernel& find_tunable_op(const std::string& name) {
  for (const autotune::TunableKernel& op : tunable_examples())
    if (op.name == name) return op;
  if (auto spec = gemm_spec(name)) return gemm_detail::gemm_tunable(*spec);
  fail("no tunable op '{}' (tunable: {})", name, fmt::join(tunable_op_names(), ", "));
}

std::vector<std::string> tunable_op_names() {
  std::vector<std::string> names;
  for (const autotune::TunableKernel& op : tunable_examples()) names.push_back(op.name);
  for (const GemmKind& kind : kGemmKinds)
    for (const char* layout : kLayouts) names.push_back(fmt::format("gemm_{}_{}", kind.name, layout));
  return names;
}

}  // namespace tilejit::ops
