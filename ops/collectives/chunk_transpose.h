// Internal to ops/collectives: the packing step of collectives along a non-leading dimension.
// NCCL splits a flat buffer into contiguous per-rank chunks, but the chunks of a tensor split
// along dimension d > 0 interleave: viewed as (outer, k, m), chunk p is [:, p, :]. Swapping
// the two leading axes into (k, outer, m) makes every chunk contiguous (packing before a
// reduce-scatter), and swapping back restores the tensor's layout (after an all-gather).
//
// The copy is a tilejit DSL kernel, so it runs on the GPU and in the emulator alike; it moves
// elements as 8-, 4- or 1-byte units, the widest the row length and the addresses allow.
#pragma once

#include <cstdint>

#include "dsl/dtype.h"
#include "runtime/device.h"

namespace tilejit::ops {

// dst (b, a, m) = src (a, b, m) with the two leading axes swapped; elements of `dtype`; the
// buffers must not overlap.
void swap_leading_axes(const void* src, void* dst, int64_t a, int64_t b, int64_t m, DType dtype, Stream& stream);

}  // namespace tilejit::ops
