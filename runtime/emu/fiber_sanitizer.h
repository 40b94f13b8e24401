// The sanitizers assume one stack per OS thread, and the emulator's fibers switch stacks under
// them. These hooks announce each switch. AddressSanitizer then neither takes a fiber's frames
// for overflows of the scheduler's stack nor misses real overflows, and the marks an aborted
// fiber (whose frames never unwind) leaves on a stack are cleared before the stack is reused.
// ThreadSanitizer gets a fiber of its own per emulated thread; each switch synchronizes, as
// the scheduler does (one host thread runs them all), so only races between host threads are
// reported. Without either sanitizer they compile to nothing.
#pragma once

#include <cstddef>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

namespace tilejit::emu::fiber_sanitizer {

// What the sanitizers know of one fiber: its stack (ASan), its fiber (TSan).
struct Fiber {
  const void* bottom = nullptr;
  size_t size = 0;
  void* tsan = nullptr;
};

#if defined(__SANITIZE_ADDRESS__)
inline void asan_leaving(void** save, const Fiber& to) { __sanitizer_start_switch_fiber(save, to.bottom, to.size); }
inline void asan_arrived(void* save, Fiber* from) {
  __sanitizer_finish_switch_fiber(save, from ? &from->bottom : nullptr, from ? &from->size : nullptr);
}
inline void reuse(void* bottom, size_t size) { __asan_unpoison_memory_region(bottom, size); }
#else
inline void asan_leaving(void**, const Fiber&) {}
inline void asan_arrived(void*, Fiber*) {}
inline void reuse(void*, size_t) {}
#endif

#if defined(__SANITIZE_THREAD__)
// For the functions that switch fibers, and those a fiber leaves for good: TSan's hooks at a
// function's entry and exit would push a frame on one fiber's shadow stack and pop it off
// another's (or never), which soon runs one of them off its end.
#if defined(__clang__)  // clang's no_sanitize keeps those hooks
#define TSAN_NO_FRAME __attribute__((disable_sanitizer_instrumentation))
#else
#define TSAN_NO_FRAME __attribute__((no_sanitize("thread")))
#endif
TSAN_NO_FRAME inline void tsan_leaving(const Fiber& to) { __tsan_switch_to_fiber(to.tsan, 0); }
inline void* current_tsan_fiber() { return __tsan_get_current_fiber(); }
// TSan's fibers, one per stack, kept from run to run: creating one maps its shadow stack, and
// a launch of 65535 CTAs would create millions. A fiber's frames stay on its shadow stack when
// it leaves by a jump; the frames a thread's fiber_main leaves when the thread exits are none
// (TSAN_NO_FRAME), and a thread that does not exit (aborted, or suspended when its run ended)
// gets a fresh fiber (renew) before its stack runs another.
class TsanFibers {
 public:
  TsanFibers() = default;
  ~TsanFibers() {
    for (void* f : fibers_) __tsan_destroy_fiber(f);
  }
  TsanFibers(const TsanFibers&) = delete;
  TsanFibers& operator=(const TsanFibers&) = delete;
  void reserve(size_t count) {
    while (fibers_.size() < count) fibers_.push_back(__tsan_create_fiber(0));
  }
  void renew(size_t i) {
    __tsan_destroy_fiber(fibers_[i]);
    fibers_[i] = __tsan_create_fiber(0);
  }
  void* operator[](size_t i) const { return fibers_[i]; }

 private:
  std::vector<void*> fibers_;
};
#else
#define TSAN_NO_FRAME
inline void tsan_leaving(const Fiber&) {}
inline void* current_tsan_fiber() { return nullptr; }
struct TsanFibers {
  void reserve(size_t) {}
  void renew(size_t) {}
  void* operator[](size_t) const { return nullptr; }
};
#endif

// Before jumping to `to`; `save` keeps this side's state until it is resumed.
TSAN_NO_FRAME inline void leaving(void** save, const Fiber& to) {
  asan_leaving(save, to);
  tsan_leaving(to);
}
// Before the last jump off a fiber that is never resumed.
TSAN_NO_FRAME inline void leaving_for_good(const Fiber& to) {
  asan_leaving(nullptr, to);
  tsan_leaving(to);
}
// First thing after a jump lands; `from` receives the stack jumped from (may be null).
inline void arrived(void* save, Fiber* from) { asan_arrived(save, from); }

}  // namespace tilejit::emu::fiber_sanitizer
