// Names the executable or shared library that contains a code address, so a cache entry
// made from code in that binary is reused only while the binary is unchanged.
#pragma once

#include <string>

namespace tilejit {

// "build-id:<hex>" from the object's GNU build-id note; empty when `address` is null, in no
// loaded object, or in one without a build-id (nothing else names its contents reliably).
std::string binary_identity(const void* address);

// binary_identity(address) and the address's offset in that binary, "build-id:<hex>+0x1f30":
// tells apart two functions of one binary, across runs (ASLR moves only the base). Empty when
// binary_identity is.
std::string code_identity(const void* address);

}  // namespace tilejit
