#include "ops/common/f32_dot.h"

namespace tilejit::ops {

dsl::Tile f32_dot(const dsl::Tile& a, const dsl::Tile& b, const dsl::Tile& acc, dsl::Precision precision) {
  if (!is_fp8(a.dtype())) return dsl::dot(a, b, acc, precision);
  return acc + dsl::dot(a, b, dsl::zeros(acc.shape(), DType::f32), precision);
}

int f32_dot_accumulators(DType a) { return is_fp8(a) ? 2 : 1; }

}  // namespace tilejit::ops
