#include "ops/int8/quantize_kernels.h"

#include <limits>

#include "ops/common/op_kernels.h"

namespace tilejit::ops::int8_detail {

using namespace tilejit::dsl;

Tile quantize_to_int8(const Tile& x) {
  Tile rounded = rint(cast(x, DType::f32));  // exact: the nearest integer of a value of x's dtype
  // NaN becomes 0, as XLA converts it (minimum and maximum would make it -127 or 127).
  return cast(where(rounded == rounded, minimum(maximum(rounded, -127.0), 127.0), 0.0), DType::i8);
}

Kernel quant_int8_kernel(DType dtype) {
  return define_op_kernel(
      "quant_int8", {pointer_param("x", dtype), pointer_param("q", DType::i8), scalar_param("n", DType::i32)},
      {{"BLOCK", 1024}}, [](const Constants& c, std::span<const Tile> t) {
        const Tile &x = t[0], &q = t[1], &n = t[2];
        Tile offsets = program_id(0) * c["BLOCK"] + arange(0, c["BLOCK"]);  // (BLOCK)
        Tile in = offsets < n;
        store(q + offsets, quantize_to_int8(load(x + offsets, in)), in);
      });
}

Kernel quantize_rows_kernel(DType dtype) {
  return define_op_kernel(
      "quantize_rows_int8",
      {pointer_param("x", dtype), pointer_param("q", DType::i8), pointer_param("inv_scale", DType::f32),
       scalar_param("R", DType::i32), scalar_param("C", DType::i32), scalar_param("x_row_stride", DType::i32),
       scalar_param("x_col_stride", DType::i32)},
      {{"BLOCK_R", 16}, {"BLOCK_C", 128}}, [dtype](const Constants& c, std::span<const Tile> t) {
        const Tile &x = t[0], &q = t[1], &inv_scale = t[2], &R = t[3], &C = t[4], &rs = t[5], &cs = t[6];
        int64_t br = c["BLOCK_R"], bc = c["BLOCK_C"];
        Tile rows = program_id(0) * br + arange(0, br);  // (BLOCK_R)
        Tile cols = arange(0, bc);                       // (BLOCK_C)
        Tile row_in = expand_dims(rows < R, 1);          // (BLOCK_R, 1)
        auto block = [&](const Tile& first_col) {        // (BLOCK_R, BLOCK_C) pointers and mask
          Tile cs_at = expand_dims(cols + first_col, 0);
          return std::pair{x + expand_dims(rows, 1) * rs + cs_at * cs, row_in && cs_at < C};
        };
        // A NaN counts as an infinity (maximum would drop it): either makes the row's scale 0 and
        // its inverse inf, so its products are 0 * inf = NaN, as the reference's are.
        const double inf = std::numeric_limits<double>::infinity();
        Tile amax = for_range(0, C, bc, zeros({br}, dtype), [&](Tile col, Tile amax) {
          auto [ptrs, in] = block(col);
          Tile magnitude = abs(load(ptrs, in));
          return maximum(amax, max(where(magnitude == magnitude, magnitude, inf), 1));  // (BLOCK_R)
        });
        // The reference's arithmetic, in x's dtype: s = 127 / max|x|, then x * s.
        Tile nonzero = amax > 0.0;
        Tile scale = where(nonzero, 127.0 / amax, 0.0);  // (BLOCK_R); 0 quantizes an all-zero row to 0
        store(inv_scale + rows, where(nonzero, 1.0 / cast(scale, DType::f32), 0.0), rows < R);
        for_range(0, C, bc, [&](Tile col) {
          auto [ptrs, in] = block(col);
          Tile q_ptrs = q + expand_dims(rows, 1) * C + expand_dims(cols + col, 0);
          store(q_ptrs, quantize_to_int8(load(ptrs, in) * expand_dims(scale, 1)), in);
        });
      });
}

}  // namespace tilejit::ops::int8_detail
