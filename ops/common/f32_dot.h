// A K block's product added to an accumulator that stays an f32 sum however long K is.
#pragma once

#include "dsl/builder.h"

namespace tilejit::ops {

// acc + a @ b, for a K loop that calls it once per block of K.
//
// fp8 operands: the tensor cores of sm_89 and sm_90 cut each product to 13 fraction bits of
// the largest addend, the running sum included (runtime/emu/tensor_core_numerics.h), so
// chaining a whole K loop into acc loses more of each product the longer K is (at K = 4096
// with same-signed terms, about 7% of the sum). The block's product is made on its own instead
// and added to acc in f32: the loss stays within one block (BLOCK_K of at most 128 is four
// instructions), as CUTLASS and cuBLASLt do it by default. This holds twice the accumulator
// registers, which the ops' configs allow for (f32_dot_accumulators).
//
// Other operands chain into acc, which the tensor cores keep in f32 (i32 for i8).
dsl::Tile f32_dot(const dsl::Tile& a, const dsl::Tile& b, const dsl::Tile& acc, dsl::Precision precision);

// The accumulator tiles f32_dot holds at once for operands of dtype `a`: 2 for fp8, else 1.
int f32_dot_accumulators(DType a);

}  // namespace tilejit::ops
