// Dynamic shared memory above the 48 KiB default, in the emulator.
#include <gtest/gtest.h>

#include "runtime/jit.h"
#include "runtime/tensor.h"
#include "tests/large_shared_kernel.h"

namespace tilejit {
namespace {

TEST(EmulatorSharedMemory, TransposeThroughMoreThan48KiB) {
  testing_kernels::check_transpose_through_large_shared_memory(Device::emu());
}

}  // namespace
}  // namespace tilejit
