// The last backward kernel of the fused config (KernelConfig::fuse_dq): dq = dq_sum * scale,
// cast to dq's dtype, element by element over the contiguous (B, T, N, H) tensors, BLOCK
// elements per program.
#include "ops/attention/backward_kernels.h"
#include "ops/common/op_kernels.h"

namespace tilejit::ops::attention_detail {

using namespace tilejit::dsl;

Kernel dq_from_sum_kernel(DType dtype, std::vector<ir::Param> params) {
  return define_op_kernel("attention_backward_dq_from_sum", params, {{"BLOCK", 1024}},
                          [dtype, params](const Constants& c, std::span<const Tile> tiles) {
                            NamedTiles in(params, tiles);
                            const int64_t block = c["BLOCK"];
                            Tile i = cast(program_id(0), DType::i64) * block + cast(arange(0, block), DType::i64);
                            Tile inside = i < in["elements"];
                            store(in["dq"] + i, cast(load(in["dq_sum"] + i, inside) * in["scale"], dtype), inside);
                          });
}

}  // namespace tilejit::ops::attention_detail
