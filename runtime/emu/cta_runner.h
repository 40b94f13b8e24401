// Internal to the emulator: runs CTAs. Each of a CTA's threads is a fiber (Boost.Context's
// fcontext: a stack switch of a few nanoseconds) on one host thread; a thread runs until it
// reaches a barrier or a warp collective, which suspend it until every participant arrived,
// or until it exits. When no thread can run but some have not exited, the CTA is stuck: a
// barrier or warp collective some threads never reach, reported as an error.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "runtime/emu/cta.h"

namespace tilejit::emu {

class CtaRunner {
 public:
  explicit CtaRunner(size_t stack_bytes = 256 * 1024);
  ~CtaRunner();
  CtaRunner(const CtaRunner&) = delete;
  CtaRunner& operator=(const CtaRunner&) = delete;

  // Runs CTA `ctaid` of `launch` to the end. Returns its error, empty when it ran cleanly.
  std::string run(Launch& launch, Dim3 ctaid);

 private:
  void reserve_stacks(int threads);
  std::string stuck_message(const Cta& cta) const;

  size_t stack_bytes_;
  std::byte* stacks_ = nullptr;  // one mapping: [guard page | stack] per thread
  size_t mapped_bytes_ = 0;
  int stack_count_ = 0;
  struct FreeWindow {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::unique_ptr<std::byte, FreeWindow> shared_;  // kSharedWindowBytes, aligned to its size
};

}  // namespace tilejit::emu
