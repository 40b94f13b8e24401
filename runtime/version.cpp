#include "runtime/version.h"

namespace tilejit {

const char* tilejit_version() { return TILEJIT_VERSION; }

}  // namespace tilejit
