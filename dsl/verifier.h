// Structural checks of the tile IR: operand and result counts and types per op, values
// used only where they are visible, regions ending in yields of the right types. The DSL
// checks user input with friendlier messages first; a verifier failure afterwards (or after
// a pass) is a tilejit bug, reported with the op's source line and the IR.
#pragma once

#include "dsl/ir.h"

namespace tilejit::ir {

void verify(const Function& fn);  // throws tilejit::Error

}  // namespace tilejit::ir

namespace tilejit::dsl {
using ir::verify;
}
