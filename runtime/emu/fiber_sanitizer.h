// AddressSanitizer assumes one stack per OS thread, and the emulator's fibers switch stacks
// under it. These hooks announce each switch, so that it neither takes a fiber's frames for
// overflows of the scheduler's stack nor misses real overflows, and they clear the marks an
// aborted fiber (whose frames never unwind) leaves on a stack before the stack is reused.
// Without AddressSanitizer they compile to nothing.
#pragma once

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace tilejit::emu::fiber_sanitizer {

struct Stack {
  const void* bottom = nullptr;
  size_t size = 0;
};

#if defined(__SANITIZE_ADDRESS__)
// Before jumping to a context on `to`; `save` keeps this side's state until it is resumed.
inline void leaving(void** save, Stack to) { __sanitizer_start_switch_fiber(save, to.bottom, to.size); }
// Before the last jump off a fiber that is never resumed.
inline void leaving_for_good(Stack to) { __sanitizer_start_switch_fiber(nullptr, to.bottom, to.size); }
// First thing after a jump lands; `from` receives the stack jumped from (may be null).
inline void arrived(void* save, Stack* from) {
  __sanitizer_finish_switch_fiber(save, from ? &from->bottom : nullptr, from ? &from->size : nullptr);
}
inline void reuse(void* bottom, size_t size) { __asan_unpoison_memory_region(bottom, size); }
#else
inline void leaving(void**, Stack) {}
inline void leaving_for_good(Stack) {}
inline void arrived(void*, Stack*) {}
inline void reuse(void*, size_t) {}
#endif

}  // namespace tilejit::emu::fiber_sanitizer
