// Internal to the emulator: runs CTAs, a thread-block cluster's together. Each of a CTA's
// threads is a fiber (Boost.Context's fcontext: a stack switch of a few nanoseconds) on one
// host thread; a thread runs until it reaches a barrier or a warp collective, which suspend it
// until every participant arrived, or until it exits. When no thread can run but some have not
// exited, the CTAs are stuck: a barrier or warp collective some threads never reach, reported
// as an error.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "runtime/emu/cta.h"
#include "runtime/emu/fiber_sanitizer.h"

namespace tilejit::emu {

class CtaRunner {
 public:
  explicit CtaRunner(size_t stack_bytes = 256 * 1024);
  ~CtaRunner();
  CtaRunner(const CtaRunner&) = delete;
  CtaRunner& operator=(const CtaRunner&) = delete;

  // Runs the CTAs of cluster `cluster_id` of `launch` (one CTA without clusters; `index`: the
  // cluster's in linear order) together to the end. Returns the first error, empty when they
  // ran cleanly or stopped early after an earlier cluster failed.
  std::string run(Launch& launch, Dim3 cluster_id, uint64_t index);

 private:
  void reserve_stacks(int threads);
  // Runs the CTAs' threads until all exited, one failed or the CTAs are stuck; the error.
  std::string run_to_end(std::vector<Cta>& ctas, Launch& launch, uint64_t index);
  static size_t slot(const Cta& cta, const Thread& t);  // its stack's, among the cluster's
  std::byte* stack_bottom(size_t slot) const;  // the lowest address of the stack of the cluster's thread `slot`
  std::byte* window(size_t rank);  // the shared memory of the cluster's CTA `rank`
  RaceDetector& race_detector(size_t rank);  // the race check of the cluster's CTA `rank`
  std::string stuck_message(const Cta& cta) const;

  size_t stack_bytes_;
  size_t page_bytes_;
  std::byte* stacks_ = nullptr;  // one mapping: [guard page | stack] per thread
  size_t mapped_bytes_ = 0;
  int stack_count_ = 0;
  fiber_sanitizer::TsanFibers tsan_fibers_;  // one per stack
  struct FreeWindow {
    void operator()(std::byte* p) const { std::free(p); }
  };
  // Per CTA of a cluster: kSharedWindowBytes, aligned to its size.
  std::vector<std::unique_ptr<std::byte, FreeWindow>> windows_;
  // Per CTA of a cluster, kept from run to run (their shadows are never cleared).
  std::vector<std::unique_ptr<RaceDetector>> race_detectors_;
};

}  // namespace tilejit::emu
