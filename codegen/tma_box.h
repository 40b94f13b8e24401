// How one block of a tensor descriptor (dsl TensorDesc) travels by TMA: as boxes of the
// block's rows by at most 128 bytes of its columns, each landing swizzled by its row width,
// one after the other. That is the swizzled tile layout dot operands have in shared memory
// (codegen/shared_layout.h), so a block can feed wgmma or ldmatrix where it lands. A block
// the CTAs of a cluster share (dsl ClusterShared) travels in row slices, one per CTA sharing
// it, each box holding one slice's rows: slice s of column box c lands at
// (c * slices + s) * bytes(), so the block's layout is the same. The code generator issues the
// copies; the runtime encodes the tensor maps with the same box.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "dsl/dtype.h"
#include "dsl/ir.h"

namespace tilejit::codegen {

struct TmaBox {
  int64_t columns = 0;    // elements per box row (the innermost box dim)
  int64_t rows = 0;
  int64_t row_bytes = 0;  // of a box row: 16, 32, 64 or 128
  int swizzle_bytes = 0;  // 0 (none: 16-byte rows), 32, 64 or 128
  int copies = 1;         // column boxes per block; box c holds block columns c*columns ..
  int slices = 1;         // row slices per column box, `rows` each

  int64_t bytes() const { return rows * row_bytes; }  // of one box
  int64_t block_bytes() const { return bytes() * copies * slices; }
};

// `block` must pass ir::descriptor_block_problem and its rows split into `slices`.
inline TmaBox tma_box(DType dtype, const ir::Shape& block, int slices = 1) {
  TmaBox box;
  int64_t element_bytes = dtype_storage_bytes(dtype), block_row_bytes = block[1] * element_bytes;
  box.row_bytes = std::min<int64_t>(block_row_bytes, 128);
  box.columns = box.row_bytes / element_bytes;
  box.rows = block[0] / slices;
  box.swizzle_bytes = box.row_bytes == 16 ? 0 : static_cast<int>(box.row_bytes);
  box.copies = static_cast<int>(block_row_bytes / box.row_bytes);
  box.slices = slices;
  return box;
}

// The row slices of the blocks of kernel parameter `desc` (a TensorDesc): the CTAs that share
// them (the cluster's extent along the axis its desc_loads name), or 1.
inline int block_row_slices(const ir::Function& fn, const ir::Value* desc) {
  int slices = 1;
  ir::walk(fn.body, [&](const ir::Op& op) {
    if (op.kind == ir::OpKind::desc_load && op.operands[0] == desc && op.has_attr("cluster_axis"))
      slices = fn.cluster[static_cast<size_t>(op.attr_int("cluster_axis"))];
  });
  return slices;
}

// block_row_slices of every TensorDesc parameter, in parameter order.
inline std::vector<int> descriptor_row_slices(const ir::Function& fn) {
  std::vector<int> out;
  for (size_t i = 0; i < fn.params.size(); ++i)
    if (fn.params[i].type.descriptor) out.push_back(block_row_slices(fn, fn.body.args[i]));
  return out;
}

}  // namespace tilejit::codegen
