// Which operand tiles a tensor-core dot reads from shared memory as they lie there (through
// ldmatrix, or wgmma's matrix descriptors), so that a loop pipeline's ring (cp.async or TMA)
// can feed it directly: 16-bit elements in either order; 8-bit ones only K-major (A stored
// (M, K), B stored (N, K)), since neither ldmatrix nor wgmma transposes them; f32 never, as
// the dot converts it to tf32 (and splits it, for 3 x tf32) in registers. The loop pipeline
// stages exactly these, and gemm gives exactly these a tensor descriptor.
#pragma once

#include "dsl/dtype.h"

namespace tilejit::codegen {

inline bool dot_reads_from_shared(DType element, bool k_major) {
  int bytes = dtype_storage_bytes(element);
  return bytes == 2 || (bytes == 1 && k_major);
}

}  // namespace tilejit::codegen
