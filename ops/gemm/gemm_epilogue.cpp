#include "ops/gemm/gemm_epilogue.h"

#include <cmath>
#include <numbers>

#include "dsl/builder.h"
#include "ops/gemm/matrix_argument.h"

namespace tilejit::ops::gemm_detail {
namespace {

using namespace tilejit::dsl;

// The (BLOCK_M, BLOCK_N) tile of the (batch, M, N) matrix `name`, as f32.
Tile load_matrix(const NamedTiles& in, const std::string& name, const Tile& batch, const Tile& rows, const Tile& cols,
                 const Tile& in_bounds) {
  return cast(load(matrix_pointers(in, name, batch, rows, cols), in_bounds), DType::f32);
}

// The (length) vector `name` at `index`, as f32, masked to `limit`.
Tile load_vector(const NamedTiles& in, const std::string& name, const Tile& index, const Tile& limit) {
  return cast(load(in[name] + index, index < limit), DType::f32);
}

Tile activate(Activation activation, const Tile& x) {
  switch (activation) {
    case Activation::none: return x;
    case Activation::relu: return where(x < 0.0, 0.0, x);  // NaN stays NaN (maximum would give 0)
    case Activation::gelu_tanh: {
      const double k = std::sqrt(2.0 / std::numbers::pi);
      return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
    }
    case Activation::gelu_erf: return 0.5 * x * (1.0 + erf(x * std::numbers::sqrt2 / 2));
    case Activation::silu: return x * sigmoid(x);
  }
  return x;
}

}  // namespace

void add_epilogue_arguments(const GemmProblem& p, NamedArguments& args) {
  const GemmFeatures& f = p.features;
  const GemmOptions& o = *p.options;
  if (f.fp8_scales) {
    args.add("a_scale_inv", *o.a_scale_inv);
    args.add("b_scale_inv", *o.b_scale_inv);
  }
  if (f.row_scale) args.add("row_scale", *o.row_scale);
  if (f.col_scale) args.add("col_scale", *o.col_scale);
  if (f.alpha) args.add("alpha", o.alpha);
  if (f.c) {
    args.add("beta", o.beta);
    add_matrix_argument(args, "c", *p.c, p.c_strides);
  }
  if (f.bias) args.add("bias", *o.bias);
  if (f.residual) add_matrix_argument(args, "residual", *p.residual, p.residual_strides);
}

Tile apply_epilogue(const GemmFeatures& f, const NamedTiles& in, Tile acc, const Tile& batch, const Tile& rows,
                    const Tile& cols, const Tile& in_bounds) {
  if (f.integer_epilogue()) return acc;                                // (BLOCK_M, BLOCK_N) i32, exact
  acc = cast(acc, DType::f32);
  if (f.fp8_scales) acc = acc * (load(in["a_scale_inv"]) * load(in["b_scale_inv"]));
  if (f.row_scale) acc = acc * expand_dims(load_vector(in, "row_scale", rows, in["M"]), 1);
  if (f.col_scale) acc = acc * expand_dims(load_vector(in, "col_scale", cols, in["N"]), 0);
  if (f.alpha) acc = acc * in["alpha"];
  if (f.c) acc = acc + in["beta"] * load_matrix(in, "c", batch, rows, cols, in_bounds);
  if (f.bias == BiasAxis::column) acc = acc + expand_dims(load_vector(in, "bias", cols, in["N"]), 0);
  if (f.bias == BiasAxis::row) acc = acc + expand_dims(load_vector(in, "bias", rows, in["M"]), 1);
  acc = activate(f.activation, acc);
  if (f.residual) acc = acc + load_matrix(in, "residual", batch, rows, cols, in_bounds);
  bool fp8_out = is_fp8(f.out);
  return f.out == DType::f32 ? acc : cast(acc, f.out, /*saturate=*/fp8_out);  // fp8 clamps to its largest finite value
}

}  // namespace tilejit::ops::gemm_detail
