// The MX scale rule (SEMANTICS.md, "MX quantization helper") as DSL computations, shared by the
// mx_quantize kernel and the tests that feed the rule every edge case directly (exponent 0xfe
// and non-finite values are out of reach of amax / 448 for finite f32 inputs).
#pragma once

#include "dsl/builder.h"

namespace tilejit::ops::scaled_dot_detail {

// The e8m0 byte (an i32 tile, 0 to 255) of s = amax / 448 (f32, >= 0 or +inf): s rounded up
// to a power of two on its f32 bits. exponent = bits >> 23, mantissa = bits & 0x7fffff; the
// exponent goes up by one iff mantissa > 0, exponent != 0xfe and not (exponent == 0 and
// mantissa <= 0x400000), saturating at 0xff (NaN: inf or NaN s).
dsl::Tile mx_scale_byte(const dsl::Tile& s);

// The f32 a byte (i32 tile) decodes to: byte << 23 as f32 bits, byte 0 as 2^-127.
dsl::Tile mx_scale_value(const dsl::Tile& byte);

}  // namespace tilejit::ops::scaled_dot_detail
