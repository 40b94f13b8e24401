#include "runtime/emu/cta_runner.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include <boost/context/detail/fcontext.hpp>
#include <fmt/format.h>

#include "dsl/error.h"

namespace tilejit::emu {
namespace fc = boost::context::detail;
namespace {

thread_local CurrentThread running;
thread_local fiber_sanitizer::Fiber scheduler_fiber;  // the host thread's own, which runs the scheduler

// Uninitialized shared memory reads as this byte pattern (0xff..: a NaN for floats, -1 for
// integers), so a kernel that reads before writing computes visibly wrong results.
constexpr std::byte kSharedPoison{0xff};

std::string thread_name(const Cta& cta, int tid) {
  return fmt::format("block ({}, {}, {}), thread ({}, 0, 0)", cta.ctaid.x, cta.ctaid.y, cta.ctaid.z, tid);
}

[[noreturn]] TSAN_NO_FRAME void leave_fiber(Cta& cta) {
  fiber_sanitizer::leaving_for_good(scheduler_fiber);
  fc::jump_fcontext(cta.scheduler_context, nullptr);
  __builtin_unreachable();  // the scheduler never resumes an exited or aborted thread
}

TSAN_NO_FRAME void fiber_main(fc::transfer_t from) {
  fiber_sanitizer::arrived(nullptr, &scheduler_fiber);
  Cta& cta = *running.cta;
  cta.scheduler_context = from.fctx;
  Thread& self = *static_cast<Thread*>(from.data);
  cta.launch->entry(cta.launch->args);
  finish_tma_stores(self);
  self.state = ThreadState::exited;
  // The cluster barrier waits for the threads that have not exited only.
  Cluster& cluster = *cta.cluster;
  --cluster.live;
  if (self.cluster_arrivals > cluster.completed) --cluster.arrived;
  complete_cluster_phase_if_done(cluster);
  leave_fiber(cta);
}

}  // namespace

CurrentThread& current() { return running; }

void yield_to_scheduler() {
  Cta& cta = *running.cta;
  void* sanitizer_state = nullptr;
  fiber_sanitizer::leaving(&sanitizer_state, scheduler_fiber);
  fc::transfer_t back = fc::jump_fcontext(cta.scheduler_context, nullptr);
  fiber_sanitizer::arrived(sanitizer_state, nullptr);
  cta.scheduler_context = back.fctx;
}

void abort_thread(std::string message) {
  Cta& cta = *running.cta;
  Thread& self = *running.thread;
  if (cta.error.empty())
    cta.error = fmt::format("emulator: kernel {}, {}: {}", cta.launch->kernel, thread_name(cta, self.tid), message);
  // Nothing on this stack may own memory: it is never unwound. (Assigning an empty string
  // would keep the buffer; destroying a string that took it over frees it.)
  { std::string freed = std::move(message); }
  self.state = ThreadState::aborted;
  leave_fiber(cta);
}

CtaRunner::CtaRunner(size_t stack_bytes)
    : stack_bytes_(stack_bytes), page_bytes_(static_cast<size_t>(sysconf(_SC_PAGESIZE))) {}

CtaRunner::~CtaRunner() {
  if (stacks_) munmap(stacks_, mapped_bytes_);
}

void CtaRunner::reserve_stacks(int threads) {
  if (threads <= stack_count_) return;
  if (stacks_) munmap(stacks_, mapped_bytes_);
  size_t slot = page_bytes_ + stack_bytes_;
  mapped_bytes_ = slot * static_cast<size_t>(threads);
  void* p = mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) fail("emulator: cannot map {} bytes of fiber stacks for {} threads", mapped_bytes_, threads);
  stacks_ = static_cast<std::byte*>(p);
  // A guard page below each stack turns an overflow into a fault instead of corruption.
  // Each stack and its guard page are two mappings: a cluster of 8 CTAs of 1024 threads takes
  // 16384 per worker, and four such workers reach Linux's default limit of 65530 mappings per
  // process, which the failure below then names.
  for (int i = 0; i < threads; ++i)
    if (mprotect(stacks_ + slot * static_cast<size_t>(i), page_bytes_, PROT_NONE) != 0)
      fail("emulator: cannot protect the guard page of fiber stack {} of {}", i, threads);
  tsan_fibers_.reserve(static_cast<size_t>(threads));
  stack_count_ = threads;
}

std::byte* CtaRunner::stack_bottom(size_t slot) const {
  return stacks_ + (page_bytes_ + stack_bytes_) * slot + page_bytes_;
}

std::byte* CtaRunner::window(size_t rank) {
  while (windows_.size() <= rank) {
    auto bytes = static_cast<size_t>(kSharedWindowBytes);
    windows_.emplace_back(static_cast<std::byte*>(std::aligned_alloc(bytes, bytes)));
    if (!windows_.back()) fail("emulator: cannot allocate {} bytes of shared memory", bytes);
  }
  return windows_[rank].get();
}

RaceDetector& CtaRunner::race_detector(size_t rank) {
  while (race_detectors_.size() <= rank) race_detectors_.push_back(std::make_unique<RaceDetector>());
  return *race_detectors_[rank];
}

std::string CtaRunner::run(Launch& launch, Dim3 cluster_id, uint64_t index) {
  const int n = launch.num_threads;
  const Dim3& dims = launch.cluster;
  const size_t size = size_t{dims.x} * dims.y * dims.z;
  if (launch.shared_bytes > kSharedWindowBytes)
    return fmt::format("emulator: kernel {} asks for {} bytes of shared memory per block; a block has at most {}",
                       launch.kernel, launch.shared_bytes, kSharedWindowBytes);
  reserve_stacks(n * static_cast<int>(size));
  std::vector<Cta> ctas(size);
  const int64_t total = int64_t{n} * static_cast<int64_t>(size);
  Cluster cluster{cluster_id, {}, total, 0, 0};
  scheduler_fiber.tsan = fiber_sanitizer::current_tsan_fiber();
  for (size_t rank = 0; rank < size; ++rank) {
    Cta& cta = ctas[rank];
    cta.launch = &launch;
    cta.cluster = &cluster;
    cta.rank = static_cast<uint32_t>(rank);
    cta.rank_in_cluster = {static_cast<uint32_t>(rank % dims.x), static_cast<uint32_t>(rank / dims.x % dims.y),
                           static_cast<uint32_t>(rank / (size_t{dims.x} * dims.y))};
    cta.ctaid = {cluster_id.x * dims.x + cta.rank_in_cluster.x, cluster_id.y * dims.y + cta.rank_in_cluster.y,
                 cluster_id.z * dims.z + cta.rank_in_cluster.z};
    cta.threads.resize(static_cast<size_t>(n));
    cta.warps.resize(static_cast<size_t>((n + 31) / 32));
    cta.shared = window(rank);
    std::memset(cta.shared, static_cast<int>(kSharedPoison), static_cast<size_t>(launch.shared_bytes));
    cta.generic_writes.assign(static_cast<size_t>((launch.shared_bytes + 3) / 4), ProxyShadow{});
    if (launch.racecheck) {
      cta.race = &race_detector(rank);
      cta.race->start(static_cast<int>(cta.warps.size()), launch.shared_bytes);
      for (NamedBarrier& bar : cta.barriers) bar.released = cta.race->empty_clock();
    }
    for (int i = 0; i < n; ++i) {
      Thread& t = cta.threads[static_cast<size_t>(i)];
      t.tid = i;
      std::byte* bottom = stack_bottom(slot(cta, t));
      fiber_sanitizer::reuse(bottom, stack_bytes_);
      t.context = fc::make_fcontext(bottom + stack_bytes_, stack_bytes_, fiber_main);
    }
    cluster.ctas.push_back(&cta);
  }
  std::string error = run_to_end(ctas, launch, index);
  // A thread that did not exit never unwound: its TSan fiber still holds its frames.
  for (const Cta& cta : ctas)
    for (const Thread& t : cta.threads)
      if (t.state != ThreadState::exited) tsan_fibers_.renew(slot(cta, t));
  return error;
}

size_t CtaRunner::slot(const Cta& cta, const Thread& t) {
  return cta.rank * cta.threads.size() + static_cast<size_t>(t.tid);
}

std::string CtaRunner::run_to_end(std::vector<Cta>& ctas, Launch& launch, uint64_t index) {
  // Round robin over the threads of every CTA of the cluster, until all have exited; the
  // first error ends the run.
  const int64_t total = launch.num_threads * static_cast<int64_t>(ctas.size());
  int64_t finished = 0;
  while (finished < total) {
    bool ran = false;
    for (Cta& cta : ctas) {
      for (Thread& t : cta.threads) {
        if (t.state != ThreadState::runnable) continue;
        running = {&cta, &t};
        void* sanitizer_state = nullptr;
        size_t s = slot(cta, t);
        fiber_sanitizer::leaving(&sanitizer_state, {stack_bottom(s), stack_bytes_, tsan_fibers_[s]});
        fc::transfer_t back = fc::jump_fcontext(t.context, &t);
        fiber_sanitizer::arrived(sanitizer_state, nullptr);
        t.context = back.fctx;
        running = {};
        ran = true;
        if (t.state == ThreadState::exited || t.state == ThreadState::aborted) ++finished;
        if (!cta.error.empty()) return cta.error;
      }
    }
    if (launch.failed_at.load(std::memory_order_relaxed) < index) return {};
    if (!ran && finished < total) {
      // The CTA whose threads wait for something besides the cluster barrier (whose phase
      // completes once every live thread arrived): what holds the others there.
      for (bool besides_cluster_barrier : {true, false})
        for (const Cta& cta : ctas)
          if (std::any_of(cta.threads.begin(), cta.threads.end(), [&](const Thread& t) {
                return t.state != ThreadState::exited &&
                       (!besides_cluster_barrier || t.state != ThreadState::at_cluster_barrier);
              }))
            return stuck_message(cta);
    }
  }
  return {};
}

std::string CtaRunner::stuck_message(const Cta& cta) const {
  std::vector<int> at_barrier, at_warp, at_mbarrier, exited;
  for (const Thread& t : cta.threads) {
    if (t.state == ThreadState::at_barrier) at_barrier.push_back(t.tid);
    if (t.state == ThreadState::at_mbarrier) at_mbarrier.push_back(t.tid);
    if (t.state == ThreadState::at_warp_sync) at_warp.push_back(t.tid);
    if (t.state == ThreadState::exited) exited.push_back(t.tid);
  }
  auto describe = [](const std::vector<int>& tids) {
    std::string s = fmt::format("{} thread{} (", tids.size(), tids.size() == 1 ? "" : "s");
    for (size_t i = 0; i < tids.size() && i < 8; ++i) s += fmt::format("{}{}", i ? ", " : "", tids[i]);
    return s + (tids.size() > 8 ? ", ...)" : ")");
  };
  std::string where = fmt::format("kernel {}, block ({}, {}, {})", cta.launch->kernel, cta.ctaid.x, cta.ctaid.y, cta.ctaid.z);
  std::string message;
  if (!at_mbarrier.empty())
    message = fmt::format("emulator: {}: mbarrier phase never completes (arrivals or transaction bytes missing): {} "
                          "wait on it",
                          where, describe(at_mbarrier));
  else if (!at_barrier.empty()) {
    uint32_t id = cta.threads[static_cast<size_t>(at_barrier[0])].barrier_id;
    int expected = cta.barriers[id].expected;
    std::string counted = expected == static_cast<int>(cta.threads.size()) ? "every thread of the CTA"
                                                                            : fmt::format("the {} threads it counts", expected);
    message = fmt::format("emulator: {}: barrier{} not reached by {}: {} wait at the barrier", where,
                          id ? fmt::format(" {}", id) : "", counted, describe(at_barrier));
  }
  else
    message = fmt::format("emulator: {}: warp collective not reached by every lane of its mask: {} wait", where,
                          describe(at_warp));
  if (!at_warp.empty() && !at_barrier.empty()) message += fmt::format(", {} wait at a warp collective", describe(at_warp));
  // Those at the cluster barrier wait for the others (it completes once every live thread arrived).
  std::vector<int> at_cluster_barrier;
  for (const Thread& t : cta.threads)
    if (t.state == ThreadState::at_cluster_barrier) at_cluster_barrier.push_back(t.tid);
  if (!at_cluster_barrier.empty()) message += fmt::format(", {} wait at barrier.cluster", describe(at_cluster_barrier));
  if (!exited.empty()) message += fmt::format(", {} exited", describe(exited));
  return message;
}

}  // namespace tilejit::emu
