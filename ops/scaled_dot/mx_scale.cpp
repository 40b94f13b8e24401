#include "ops/scaled_dot/mx_scale.h"

namespace tilejit::ops::scaled_dot_detail {

using namespace tilejit::dsl;

Tile mx_scale_byte(const Tile& s) {
  Tile bits = bitcast(s, DType::i32);
  Tile exponent = bits >> 23;  // s >= 0: no sign bit
  Tile mantissa = bits & 0x7fffff;
  Tile up = mantissa > 0 && exponent != 0xfe && !(exponent == 0 && mantissa <= 0x400000);
  return minimum(exponent + cast(up, DType::i32), 0xff);
}

Tile mx_scale_value(const Tile& byte) {
  return bitcast(where(byte == 0, 0x400000, byte << 23), DType::f32);  // 0x400000: 2^-127
}

}  // namespace tilejit::ops::scaled_dot_detail
