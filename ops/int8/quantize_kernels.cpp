#include "ops/int8/quantize_kernels.h"

#include <limits>

#include "ops/common/op_kernels.h"

namespace tilejit::ops::int8_detail {

using namespace tilejit::dsl;

Tile quantize_to_int8(const Tile& x) {
  Tile rounded = rint(cast(x, DType::f32));  // exact: the nearest integer of a value of x's dtype
  // The conversion to i32 saturates and makes NaN 0, as XLA converts it; the clip is then
  // between integers (one conversion, two integer clamps, where clamping the floats first
  // needs a NaN test besides).
  return cast(minimum(maximum(cast(rounded, DType::i32), -127), 127), DType::i8);
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

Kernel quantize_lines_kernel(DType dtype, bool columns) {
  return define_op_kernel(
      columns ? "quantize_columns_int8" : "quantize_rows_int8",
      {pointer_param("x", dtype), pointer_param("q", DType::i8), pointer_param("inv_scale", DType::f32),
       scalar_param("R", DType::i32), scalar_param("C", DType::i32), scalar_param("x_row_stride", DType::i32),
       scalar_param("x_col_stride", DType::i32)},
      {{"BLOCK_R", 16}, {"BLOCK_C", 128}}, [dtype, columns](const Constants& c, std::span<const Tile> t) {
        const Tile &x = t[0], &q = t[1], &inv_scale = t[2], &R = t[3], &C = t[4], &rs = t[5], &cs = t[6];
        // The program's lines (rows, or columns) and the steps along them, over tiles of x
        // (BLOCK_R, BLOCK_C): `across` is the axis the maxima reduce.
        const int across = columns ? 0 : 1;
        const int64_t lines_per_program = columns ? c["BLOCK_C"] : c["BLOCK_R"];
        const int64_t step = columns ? c["BLOCK_R"] : c["BLOCK_C"];
        const Tile& line_count = columns ? C : R;
        const Tile& line_length = columns ? R : C;
        Tile lines = program_id(0) * lines_per_program + arange(0, lines_per_program);
        Tile offsets = arange(0, step);
        auto along = [&](const Tile& first) {  // (BLOCK_R, BLOCK_C) rows and columns of x
          Tile line = expand_dims(lines, across), at = expand_dims(offsets + first, 1 - across);
          return columns ? std::pair{at, line} : std::pair{line, at};
        };
        auto block = [&](const Tile& first) {  // pointers and mask of the tile at `first` along the lines
          auto [r, col] = along(first);
          return std::pair{x + r * rs + col * cs, r < R && col < C};
        };
        // A NaN counts as an infinity (maximum would drop it): either makes the line's scale 0
        // and its inverse inf, so its products are 0 * inf = NaN, as the reference's are.
        const double inf = std::numeric_limits<double>::infinity();
        // Each element of the tile keeps its running maximum; the lines' maxima reduce them once.
        const int64_t br = c["BLOCK_R"], bc = c["BLOCK_C"];
        Tile running = for_range(0, line_length, step, zeros({br, bc}, dtype), [&](Tile first, Tile running) {
          auto [ptrs, in] = block(first);
          Tile magnitude = abs(load(ptrs, in));
          return maximum(running, where(magnitude == magnitude, magnitude, inf));
        });
        Tile amax = max(running, across);
        // The reference's arithmetic, in x's dtype: s = 127 / max|x|, then x * s.
        Tile nonzero = amax > 0.0;
        Tile scale = where(nonzero, 127.0 / amax, 0.0);  // 0 quantizes an all-zero line to 0
        store(inv_scale + lines, where(nonzero, 1.0 / cast(scale, DType::f32), 0.0), lines < line_count);
        for_range(0, line_length, step, [&](Tile first) {
          auto [ptrs, in] = block(first);
          Tile quantized = quantize_to_int8(load(ptrs, in) * expand_dims(scale, across));
          // q holds each line as a row: its (lines, step) block. A column's tile goes there
          // transposed (a trip through shared memory), each thread then writing consecutive bytes.
          Tile line = expand_dims(lines, 1), at = expand_dims(offsets + first, 0);
          store(q + line * line_length + at, columns ? trans(quantized) : quantized,
                line < line_count && at < line_length);
        });
      });
}

}  // namespace tilejit::ops::int8_detail
