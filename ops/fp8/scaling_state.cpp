// The recipe's formats and a tensor's delayed-scaling state: its fp8 dtype, its scale and
// scale_inv (1 at first) and its amax history (zeros), made on the device.
#include <vector>

#include "ops/common/op_arguments.h"
#include "ops/fp8.h"

namespace tilejit::ops {

DType fp8_dtype(Fp8Format format, Fp8TensorRole role) {
  switch (format) {
    case Fp8Format::E4M3:
      return DType::f8e4m3;
    case Fp8Format::E5M2:
      return DType::f8e5m2;
    case Fp8Format::HYBRID:
      return role == Fp8TensorRole::forward ? DType::f8e4m3 : DType::f8e5m2;
  }
  internal_error("an Fp8Format value", __FILE__, __LINE__);
}

float fp8_max(DType fp8) {
  if (fp8 == DType::f8e4m3) return 448.0f;
  if (fp8 == DType::f8e5m2) return 57344.0f;
  fail("fp8_max: {} is not an fp8 dtype (f8e4m3 or f8e5m2)", dtype_name(fp8));
}

namespace {

Tensor filled(Device& device, int64_t n, float value) {
  Tensor t = Tensor::empty(device, DType::f32, {n});
  std::vector<float> host(static_cast<size_t>(n), value);
  t.copy_from_host(std::span<const float>(host));
  return t;
}

const DelayedScalingRecipe& checked(const DelayedScalingRecipe& recipe) {
  OpArguments args("Fp8ScalingState");
  if (recipe.margin < -126 || recipe.margin > 126)
    args.fail("margin {} is out of range (-126 to 126: 2^-margin must be a normal f32)", recipe.margin);
  // The update kernel walks the history in 32-bit integers, a block past its end.
  constexpr int64_t kMaxHistory = int64_t{1} << 30;
  if (recipe.amax_history_len < 1 || recipe.amax_history_len > kMaxHistory)
    args.fail("amax_history_len {} is out of range (1 to {})", recipe.amax_history_len, kMaxHistory);
  return recipe;
}

}  // namespace

Fp8ScalingState::Fp8ScalingState(Device& device, const DelayedScalingRecipe& recipe, Fp8TensorRole role)
    : recipe_(checked(recipe)),
      dtype_(fp8_dtype(recipe.fp8_format, role)),
      scale_(filled(device, 1, 1.0f)),
      scale_inv_(filled(device, 1, 1.0f)),
      amax_history_(filled(device, recipe.amax_history_len, 0.0f)),
      rolled_history_(filled(device, recipe.amax_history_len, 0.0f)) {}

}  // namespace tilejit::ops
