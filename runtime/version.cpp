#include "runtime/version.h"

#include "source_fingerprint.h"  // generated at build time (runtime/CMakeLists.txt)

namespace tilejit {

const char* tilejit_version() { return TILEJIT_VERSION "+src." TILEJIT_SOURCE_FINGERPRINT; }

}  // namespace tilejit
