// The forward kernel of layer_norm and rms_norm. Statistics in f32: LayerNorm takes a first
// mean, then the sums of the centered values and of their squares (the corrected two-pass
// algorithm: an accurate mean, no cancellation); RMSNorm the mean of x^2. Whole rows are loaded once and kept in registers; longer rows are read once per pass.
// The outputs (y, the statistics, an fp8 copy of y with its amax) are written in the last pass.
#include <fmt/format.h>

#include <functional>
#include <optional>
#include <vector>

#include "ops/common/op_kernels.h"
#include "ops/fp8/fp8_tiles.h"
#include "ops/norms/norm_kernels.h"
#include "ops/norms/row_tiles.h"

namespace tilejit::ops {

using namespace tilejit::dsl;

std::string NormForwardConfig::name() const {
  return fmt::format("{}_forward_{}_gamma_{}{}{}", kind == NormKind::layer ? "layer_norm" : "rms_norm", dtype_name(x),
                     dtype_name(gamma), statistics ? "_statistics" : "",
                     fp8 ? fmt::format("_to_{}", dtype_name(*fp8)) : "");
}

dsl::Kernel norm_forward_kernel(const NormForwardConfig& config) {
  const bool layer = config.kind == NormKind::layer;
  std::vector<ir::Param> params{pointer_param("x", config.x), pointer_param("gamma", config.gamma)};
  if (layer) params.push_back(pointer_param("beta", config.gamma));
  params.push_back(pointer_param("y", config.x));
  if (config.statistics && layer) params.push_back(pointer_param("mean", DType::f32));
  if (config.statistics) params.push_back(pointer_param("rsigma", DType::f32));
  if (config.fp8)
    for (ir::Param& p : fp8_output_params(*config.fp8)) params.push_back(std::move(p));
  params.push_back(scalar_param("rows", DType::i64));
  params.push_back(scalar_param("hidden", DType::i32));
  params.push_back(scalar_param("eps", DType::f32));

  return define_op_kernel(
      config.name(), std::move(params), row_kernel_constants(),
      [config, layer](const Constants& c, std::span<const Tile> args) {
        size_t next = 0;
        auto param = [&] { return args[next++]; };
        Tile x = param(), gamma = param();
        Tile beta = layer ? param() : Tile();
        Tile y = param();
        Tile mean_out = config.statistics && layer ? param() : Tile();
        Tile rsigma_out = config.statistics ? param() : Tile();
        std::optional<Fp8OutputTiles> fp8;
        if (config.fp8) {
          fp8.emplace(args.subspan(next, kFp8OutputParams), *config.fp8);
          next += kFp8OutputParams;
        }
        Tile rows = param(), hidden = param(), eps = param();

        const int64_t block_rows = c["BLOCK_ROWS"], block_h = c["BLOCK_H"];
        const bool whole_row = c.flag("WHOLE_ROW");
        Tile first_row = cast(program_id(0), DType::i64) * block_rows;
        Tile n = cast(hidden, DType::f32);
        auto block_at = [&](const Tile& first_col) {
          return row_block(first_row, block_rows, rows, hidden, column_block(first_col, block_h, hidden));
        };
        // A whole row is loaded once, here; otherwise every pass loads the blocks it walks.
        std::optional<RowBlock> whole;
        Tile whole_x;
        if (whole_row) {
          whole = block_at(scalar(0, DType::i32));
          whole_x = load_block(x, *whole);
        }
        // Per-row sums over the row of each tile terms(x block, block) returns: (BLOCK_ROWS, 1) each.
        using Terms = std::function<std::vector<Tile>(const Tile&, const RowBlock&)>;
        auto row_sums = [&](size_t count, const Terms& terms) {
          std::vector<Tile> acc;
          if (whole_row) {
            acc = terms(whole_x, *whole);
          } else {
            std::vector<Tile> zero(count, zeros({block_rows, block_h}, DType::f32));
            acc = for_range(0, hidden, block_h, zero, [&](Tile col, std::vector<Tile> partial) {
              RowBlock b = block_at(col);
              std::vector<Tile> t = terms(load_block(x, b), b);
              for (size_t i = 0; i < count; ++i) partial[i] = partial[i] + t[i];
              return partial;
            });
          }
          for (Tile& a : acc) a = sum(a, 1, true);
          return acc;
        };

        Tile mean, rsigma;  // (BLOCK_ROWS, 1)
        if (layer) {
          // The corrected two-pass algorithm: the sum of d = x - rough_mean recovers the rounding
          // of the first mean (which rsigma amplifies where the row is far from zero), and
          // var = mean(d^2) - mean(d)^2 has no cancellation because mean(d) is tiny.
          Tile rough_mean = row_sums(1, [](const Tile& v, const RowBlock&) { return std::vector<Tile>{v}; })[0] / n;
          std::vector<Tile> d_sums = row_sums(2, [&](const Tile& v, const RowBlock& b) {
            Tile d = where(b.mask, v - rough_mean, 0.0);
            return std::vector<Tile>{d, d * d};
          });
          Tile shift = d_sums[0] / n;
          mean = rough_mean + shift;
          Tile var = d_sums[1] / n - shift * shift;
          rsigma = rsqrt(where(var < 0.0, 0.0, var) + eps);  // rounding can leave a constant row's var just below 0
        } else {
          rsigma = rsqrt(row_sums(1, [](const Tile& v, const RowBlock&) { return std::vector<Tile>{v * v}; })[0] / n + eps);
        }

        // Writes one block of y (and its fp8 copy); returns the block's amax bits.
        const double gamma_offset = c.flag("ZERO_CENTERED") ? 1.0 : 0.0;
        auto write_block = [&](const Tile& v, const RowBlock& b) {
          Tile xhat = layer ? (v - mean) * rsigma : v * rsigma;
          Tile out = xhat * load_per_column(gamma, b.columns, gamma_offset);
          if (layer) out = out + load_per_column(beta, b.columns);
          Tile stored = cast(out, config.x);  // (BLOCK_ROWS, BLOCK_H)
          store(y + b.offsets, stored, b.mask);
          if (!fp8) return scalar(0, DType::i32);
          Tile as_f32 = cast(stored, DType::f32);
          store(fp8->data() + b.offsets, fp8->quantize(as_f32), b.mask);
          return amax_bits(as_f32, b.mask);
        };
        Tile bits;
        if (whole_row) {
          bits = write_block(whole_x, *whole);
        } else {
          bits = for_range(0, hidden, block_h, scalar(0, DType::i32), [&](Tile col, Tile bits) {
            RowBlock b = block_at(col);
            return maximum(bits, write_block(load_block(x, b), b));
          });
        }
        if (fp8) fp8->finish(bits);
        Tile row_ids = first_row + cast(arange(0, block_rows), DType::i64);  // (BLOCK_ROWS)
        if (mean_out.valid()) store(mean_out + row_ids, reshape(mean, {block_rows}), row_ids < rows);
        if (rsigma_out.valid()) store(rsigma_out + row_ids, reshape(rsigma, {block_rows}), row_ids < rows);
      });
}

}  // namespace tilejit::ops
