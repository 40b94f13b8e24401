// The backward kernels of layer_norm and rms_norm (norm_kernels.h). With xhat the normalized
// x and g the effective gamma, dx = rsigma * (dy*g - mean(dy*g) - xhat * mean(dy*g*xhat))
// (RMSNorm has no mean(dy*g) term). The two row means come from registers when whole rows fit,
// and from the row-terms kernel otherwise. dgamma and dbeta are sums over rows: each program
// of the dx kernel leaves the sums over its own rows in a partial row, and the partial-sums
// kernel adds those rows in order, so the result never depends on timing (no float atomics).
#include <fmt/format.h>

#include "ops/common/op_kernels.h"
#include "ops/norms/norm_kernels.h"
#include "ops/norms/row_tiles.h"

namespace tilejit::ops {

using namespace tilejit::dsl;

namespace {

// The forward's tensors as the backward kernels take them: dy, x, [mean], rsigma, gamma.
struct ForwardTiles {
  Tile dy, x, mean, rsigma, gamma;
};

void add_forward_params(std::vector<ir::Param>& params, const NormBackwardConfig& config) {
  params.push_back(pointer_param("dy", config.x));
  params.push_back(pointer_param("x", config.x));
  if (config.kind == NormKind::layer) params.push_back(pointer_param("mean", DType::f32));
  params.push_back(pointer_param("rsigma", DType::f32));
  params.push_back(pointer_param("gamma", config.gamma));
}

ForwardTiles take_forward_params(std::span<const Tile> args, size_t& next, NormKind kind) {
  ForwardTiles t;
  t.dy = args[next++];
  t.x = args[next++];
  if (kind == NormKind::layer) t.mean = args[next++];
  t.rsigma = args[next++];
  t.gamma = args[next++];
  return t;
}

// One block's terms: dy, xhat (0 outside the block), dy * g, and the rows' rsigma.
struct BlockTerms {
  Tile dy, xhat, dy_g, rsigma;
};

BlockTerms block_terms(const ForwardTiles& f, const RowBlock& b, const Tile& g) {
  BlockTerms t;
  t.dy = load_block(f.dy, b);
  t.rsigma = load_per_row(f.rsigma, b);
  Tile v = load_block(f.x, b);
  Tile centered = f.mean.valid() ? v - load_per_row(f.mean, b) : v;
  t.xhat = where(b.mask, centered * t.rsigma, 0.0);
  t.dy_g = t.dy * g;
  return t;
}

}  // namespace

std::string NormBackwardConfig::name(const char* kernel) const {
  return fmt::format("{}_backward_{}_{}_gamma_{}", kind == NormKind::layer ? "layer_norm" : "rms_norm", kernel,
                     dtype_name(x), dtype_name(gamma));
}

dsl::Kernel norm_backward_row_terms_kernel(const NormBackwardConfig& config) {
  std::vector<ir::Param> params;
  add_forward_params(params, config);
  params.push_back(pointer_param("row_terms", DType::f32));
  params.push_back(scalar_param("rows", DType::i64));
  params.push_back(scalar_param("hidden", DType::i32));
  return define_op_kernel(config.name("row_terms"), std::move(params), row_kernel_constants(),
                          [kind = config.kind](const Constants& c, std::span<const Tile> args) {
                            size_t next = 0;
                            ForwardTiles f = take_forward_params(args, next, kind);
                            Tile row_terms = args[next++], rows = args[next++], hidden = args[next++];
                            const int64_t block_h = c["BLOCK_H"];
                            const double gamma_offset = c.flag("ZERO_CENTERED") ? 1.0 : 0.0;
                            Tile row = cast(program_id(0), DType::i64);
                            std::vector<Tile> sums = for_range(
                                0, hidden, block_h, {zeros({1, block_h}, DType::f32), zeros({1, block_h}, DType::f32)},
                                [&](Tile col, std::vector<Tile> acc) {
                                  ColumnBlock cols = column_block(col, block_h, hidden);
                                  BlockTerms t = block_terms(f, row_block(row, 1, rows, hidden, cols),
                                                             load_per_column(f.gamma, cols, gamma_offset));
                                  return std::vector<Tile>{acc[0] + t.dy_g, acc[1] + t.dy_g * t.xhat};
                                });
                            Tile n = cast(hidden, DType::f32);
                            store(row_terms + 2 * row, sum(sum(sums[0], 1), 0) / n);
                            store(row_terms + 2 * row + 1, sum(sum(sums[1], 1), 0) / n);
                          });
}

dsl::Kernel norm_backward_dx_kernel(const NormBackwardConfig& config) {
  const bool layer = config.kind == NormKind::layer;
  std::vector<ir::Param> params;
  add_forward_params(params, config);
  params.push_back(pointer_param("dx", config.x));
  params.push_back(pointer_param("partial_dgamma", DType::f32));
  if (layer) params.push_back(pointer_param("partial_dbeta", DType::f32));
  params.push_back(pointer_param("row_terms", DType::f32));  // read only without WHOLE_ROW
  params.push_back(scalar_param("rows", DType::i64));
  params.push_back(scalar_param("hidden", DType::i32));
  params.push_back(scalar_param("rows_per_program", DType::i64));
  return define_op_kernel(
      config.name("dx"), std::move(params), row_kernel_constants(),
      [kind = config.kind, layer, dx_dtype = config.x](const Constants& c, std::span<const Tile> args) {
        size_t next = 0;
        ForwardTiles f = take_forward_params(args, next, kind);
        Tile dx = args[next++], partial_dgamma = args[next++];
        Tile partial_dbeta = layer ? args[next++] : Tile();
        Tile row_terms = args[next++], rows = args[next++], hidden = args[next++], rows_per_program = args[next++];
        const int64_t block_rows = c["BLOCK_ROWS"], block_h = c["BLOCK_H"];
        const bool whole_row = c.flag("WHOLE_ROW");
        Tile n = cast(hidden, DType::f32);
        Tile first = cast(program_id(1), DType::i64) * rows_per_program;
        Tile end = minimum(first + rows_per_program, rows);
        ColumnBlock cols = column_block(program_id(0) * block_h, block_h, hidden);
        Tile g = load_per_column(f.gamma, cols, c.flag("ZERO_CENTERED") ? 1.0 : 0.0);  // (1, BLOCK_H)
        Tile zero = zeros({block_rows, block_h}, DType::f32);
        std::vector<Tile> sums = for_range(first, end, block_rows, {zero, zero}, [&](Tile r, std::vector<Tile> acc) {
          RowBlock b = row_block(r, block_rows, end, hidden, cols);
          BlockTerms t = block_terms(f, b, g);
          // The rows' mean(dy*g) and mean(dy*g*xhat): (BLOCK_ROWS, 1).
          auto row_mean = [&](const Tile& term, int index) {
            if (whole_row) return sum(term, 1, true) / n;
            return expand_dims(load(row_terms + (2 * b.rows + index), b.row_mask), 1);
          };
          Tile inner = t.dy_g - t.xhat * row_mean(t.dy_g * t.xhat, 1);
          if (layer) inner = inner - row_mean(t.dy_g, 0);
          store(dx + b.offsets, cast(t.rsigma * inner, dx_dtype), b.mask);
          return std::vector<Tile>{acc[0] + t.dy * t.xhat, acc[1] + t.dy};
        });
        Tile partial = cast(program_id(1), DType::i64) * cast(hidden, DType::i64) + cast(cols.cols, DType::i64);
        store(partial_dgamma + partial, sum(sums[0], 0), cols.mask);
        if (layer) store(partial_dbeta + partial, sum(sums[1], 0), cols.mask);
      });
}

dsl::Kernel norm_partial_sums_kernel(const NormBackwardConfig& config) {
  const bool layer = config.kind == NormKind::layer;
  std::vector<ir::Param> params{pointer_param("partial_dgamma", DType::f32)};
  if (layer) params.push_back(pointer_param("partial_dbeta", DType::f32));
  params.push_back(pointer_param("dgamma", config.gamma));
  if (layer) params.push_back(pointer_param("dbeta", config.gamma));
  params.push_back(scalar_param("programs", DType::i64));
  params.push_back(scalar_param("hidden", DType::i32));
  return define_op_kernel(config.name("partial_sums"), std::move(params), {{"BLOCK", 64}, {"BLOCK_P", 64}},
                          [layer, gamma_dtype = config.gamma](const Constants& c, std::span<const Tile> args) {
                            const size_t outputs = layer ? 2 : 1;
                            Tile programs = args[2 * outputs], hidden = args[2 * outputs + 1];
                            const int64_t block = c["BLOCK"], block_p = c["BLOCK_P"];
                            ColumnBlock cols = column_block(program_id(0) * block, block, hidden);
                            // (BLOCK_P, BLOCK) tiles of the partial rows, added up in order, then summed over rows.
                            std::vector<Tile> acc(outputs, zeros({block_p, block}, DType::f32));
                            acc = for_range(int64_t{0}, programs, block_p, acc, [&](Tile p, std::vector<Tile> acc) {
                              RowBlock b = row_block(p, block_p, programs, hidden, cols);
                              for (size_t i = 0; i < outputs; ++i) acc[i] = acc[i] + load_block(args[i], b);
                              return acc;
                            });
                            for (size_t i = 0; i < outputs; ++i)
                              store(args[outputs + i] + cols.cols, cast(sum(acc[i], 0), gamma_dtype), cols.mask);
                          });
}

}  // namespace tilejit::ops
