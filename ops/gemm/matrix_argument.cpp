#include "ops/gemm/matrix_argument.h"

#include "dsl/builder.h"

namespace tilejit::ops::gemm_detail {

using namespace tilejit::dsl;

void add_matrix_argument(NamedArguments& args, const std::string& name, const Tensor& t, const MatrixStrides& s) {
  args.add(name, t);
  args.add(name + "_batch_stride", s.batch);
  args.add(name + "_row_stride", static_cast<int32_t>(s.row));
  args.add(name + "_col_stride", static_cast<int32_t>(s.col));
}

Tile matrix_pointers(const NamedTiles& in, const std::string& name, const Tile& batch, const Tile& rows,
                     const Tile& cols) {
  Tile base = in[name] + batch * in[name + "_batch_stride"];
  return base + expand_dims(rows, 1) * in[name + "_row_stride"] + expand_dims(cols, 0) * in[name + "_col_stride"];
}

Tile transposed_matrix_pointers(const NamedTiles& in, const std::string& name, const Tile& batch, const Tile& rows,
                                const Tile& cols) {
  Tile base = in[name] + batch * in[name + "_batch_stride"];
  return base + expand_dims(cols, 1) * in[name + "_col_stride"] + expand_dims(rows, 0) * in[name + "_row_stride"];
}

}  // namespace tilejit::ops::gemm_detail
