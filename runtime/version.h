// tilejit's own version, part of every cache key, of tuning results' keys, of a pack's manifest
// and of `tilejit --version`: the release number and a fingerprint of the sources under dsl/,
// codegen/, runtime/cuda/, ops/ and autotune/ and of runtime/device.{h,cpp}
// ("0.1.0+src.1a2b3c4d5e6f"). Two builds that could
// compile one kernel differently, or tune it differently, have different versions, so neither
// reads what the other cached or packed.
#pragma once

namespace tilejit {

const char* tilejit_version();

}  // namespace tilejit
