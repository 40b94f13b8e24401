// run_ranks: one thread per rank of this process, so that each rank's blocking calls meet the
// others'. A failing rank aborts the others' communicators, so they fail fast instead of
// waiting out the timeout for a rank that will never come.
#include <mutex>
#include <thread>

#include "dsl/error.h"
#include "ops/collectives.h"

namespace tilejit::ops {

void run_ranks(const std::vector<Communicator>& comms, const std::function<void(Communicator&)>& body) {
  std::mutex mutex;
  int failed_rank = -1;
  std::string failure;
  auto on_failure = [&](size_t index, const std::string& what) {
    {
      std::lock_guard lock(mutex);
      if (failed_rank >= 0) return;  // the first failure is the cause; later ones are its echo
      failed_rank = comms[index].rank();
      failure = what;
    }
    // The failing rank's own too: the communicators it made for groups may still wait on the
    // others'.
    std::string reason = fmt::format("rank {} failed: {}", comms[index].rank(), what);
    for (const Communicator& comm : comms) comm.abort(reason);
  };
  std::vector<std::thread> threads;
  for (size_t i = 0; i < comms.size(); ++i) {
    threads.emplace_back([&, i] {
      Communicator comm = comms[i];
      try {
        body(comm);
      } catch (const std::exception& e) {
        on_failure(i, e.what());
      } catch (...) {
        on_failure(i, "an exception that is not a std::exception");
      }
    });
  }
  for (auto& t : threads) t.join();
  if (failed_rank >= 0) fail("rank {}: {}", failed_rank, failure);
}

}  // namespace tilejit::ops
