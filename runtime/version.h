// tilejit's own version, part of every cache key and of `tilejit --version`.
#pragma once

namespace tilejit {

const char* tilejit_version();

}  // namespace tilejit
