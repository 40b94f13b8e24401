#include "ops/collectives/teardown.h"

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "dsl/error.h"
#include "dsl/log.h"

namespace tilejit::ops {
namespace {

using Clock = std::chrono::steady_clock;

struct Pending {
  std::unique_ptr<RankBackend> rank;
  Clock::time_point deadline;
  std::chrono::milliseconds timeout;
};

// True when `p` needs no more checks: its destroy finished, failed, or ran out of time.
bool finished(Pending& p) {
  try {
    if (p.rank->destroy_finished()) return true;
    if (Clock::now() < p.deadline) return false;
    log::warn("{}: destroy did not finish within {} ms (the other ranks did not destroy theirs); aborted",
              p.rank->describe(), p.timeout.count());
    p.rank->abort("destroy timed out");
  } catch (const std::exception& e) {
    log::warn("{}: destroy failed: {}", p.rank->describe(), e.what());
  }
  return true;
}

// Never destroyed (a static's destructor could run after it and still hand ranks over); an
// exit handler stops its thread instead, while what the ranks use (the driver, NCCL, the
// devices, all made before the first communicator) is still there.
class Teardown {
 public:
  static Teardown& instance() {
    static Teardown* teardown = [] {
      auto* t = new Teardown;
      std::atexit([] { instance().stop(); });
      return t;
    }();
    return *teardown;
  }

  void add(Pending p) {
    {
      std::lock_guard lock(mutex_);
      if (!stopped_) {
        pending_.push_back(std::move(p));
        if (!worker_.joinable()) worker_ = std::thread([this] { run(); });
        changed_.notify_all();
        return;
      }
    }
    while (!finished(p)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

 private:
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopped_ = true;
      changed_.notify_all();
    }
    if (worker_.joinable()) worker_.join();
  }

  // Checks every pending rank about once a millisecond; sleeps while there are none. Once
  // stopped, it returns when none is left.
  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      changed_.wait(lock, [&] { return stopped_ || !pending_.empty(); });
      if (pending_.empty()) return;
      std::vector<Pending> checking = std::move(pending_);
      pending_.clear();
      lock.unlock();  // destroy_finished() may take a while; add() must not wait for it
      std::vector<Pending> unfinished;
      for (Pending& p : checking)
        if (!finished(p)) unfinished.push_back(std::move(p));
      checking.clear();  // frees the finished ranks outside the lock
      lock.lock();
      for (Pending& p : unfinished) pending_.push_back(std::move(p));
      if (!pending_.empty()) changed_.wait_for(lock, std::chrono::milliseconds(1));
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Pending> pending_;
  bool stopped_ = false;
  std::thread worker_;
};

}  // namespace

void finish_destroy_later(std::unique_ptr<RankBackend> rank, std::chrono::milliseconds timeout) {
  Teardown::instance().add(Pending{std::move(rank), Clock::now() + timeout, timeout});
}

}  // namespace tilejit::ops
