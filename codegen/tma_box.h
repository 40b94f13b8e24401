// How one block of a tensor descriptor (dsl TensorDesc) travels by TMA: as boxes of the
// block's rows by at most 128 bytes of its columns, each landing swizzled by its row width,
// one after the other. That is the swizzled tile layout dot operands have in shared memory
// (codegen/shared_layout.h), so a block can feed wgmma or ldmatrix where it lands. The code
// generator issues the copies; the runtime encodes the tensor maps with the same box.
#pragma once

#include <algorithm>
#include <cstdint>

#include "dsl/dtype.h"
#include "dsl/ir.h"

namespace tilejit::codegen {

struct TmaBox {
  int64_t columns = 0;    // elements per box row (the innermost box dim)
  int64_t rows = 0;
  int64_t row_bytes = 0;  // of a box row: 16, 32, 64 or 128
  int swizzle_bytes = 0;  // 0 (none: 16-byte rows), 32, 64 or 128
  int copies = 1;         // boxes per block; box c holds block columns c*columns .. and lands c*bytes() on

  int64_t bytes() const { return rows * row_bytes; }
};

// `block` must pass ir::descriptor_block_problem.
inline TmaBox tma_box(DType dtype, const ir::Shape& block) {
  TmaBox box;
  int64_t element_bytes = dtype_storage_bytes(dtype), block_row_bytes = block[1] * element_bytes;
  box.row_bytes = std::min<int64_t>(block_row_bytes, 128);
  box.columns = box.row_bytes / element_bytes;
  box.rows = block[0];
  box.swizzle_bytes = box.row_bytes == 16 ? 0 : static_cast<int>(box.row_bytes);
  box.copies = static_cast<int>(block_row_bytes / box.row_bytes);
  return box;
}

}  // namespace tilejit::codegen
