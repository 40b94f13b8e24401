#include "autotune/parallel.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace tilejit::autotune {

int host_cores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

void run_in_parallel(size_t count, int threads, const std::function<void(size_t)>& job) {
  if (threads <= 0) threads = host_cores();
  size_t workers = std::min<size_t>(count, static_cast<size_t>(threads));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < count;) job(i);
  };
  std::vector<std::thread> helpers;
  for (size_t i = 1; i < workers; ++i) helpers.emplace_back(work);
  work();
  for (auto& t : helpers) t.join();
}

}  // namespace tilejit::autotune
