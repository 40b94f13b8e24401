// Tearing communicators down, on 2, 4 and 8 emulated ranks, whose finalize is collective as
// NCCL's is (it completes once every rank has begun it): one thread drops the handles of every
// rank, communicators made for groups included, and nothing waits or times out; destroy() is a
// collective call; a rank dropped while the others live on is aborted after its timeout.
#include <gmock/gmock.h>

#include <chrono>
#include <optional>
#include <thread>

#include "tests/error_message.h"
#include "tests/ops/collectives_test_util.h"

namespace tjcoll {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using tilejit::testing_util::error_of;
using Clock = std::chrono::steady_clock;

class CollectiveTeardown : public ::testing::TestWithParam<int> {
 protected:
  int world() const { return GetParam(); }
  // Every rank runs an all_reduce over the world and one over pairs of ranks (a communicator
  // of its own).
  void use(std::vector<Communicator>& comms) {
    RankGroups pairs;
    for (int r = 0; r < world(); r += 2) pairs.push_back({r, r + 1});
    run_ranks(comms, [&](Communicator& c) {
      Tensor x = Tensor::empty(c.device(), DType::f32, {4});
      all_reduce(x, c);
      all_reduce(x, c, AllReduceOptions{ReduceOp::sum, pairs});
    });
  }
};

// No rank's destroy runs into its timeout (which would warn): each one's completes once the
// last rank's has begun.
TEST_P(CollectiveTeardown, OneThreadDropsEveryRanksHandles) {
  const auto timeout = std::chrono::seconds(2);
  testing::internal::CaptureStderr();
  std::optional<std::vector<Communicator>> comms = Communicator::emulated(world(), timeout_of(timeout));
  use(*comms);
  const auto start = Clock::now();
  comms.reset();  // rank 0's handles go first
  EXPECT_LT(Clock::now() - start, timeout) << "dropping the handles waited";
  std::this_thread::sleep_for(timeout + std::chrono::milliseconds(500));  // past every deadline
  EXPECT_THAT(testing::internal::GetCapturedStderr(), Not(HasSubstr("destroy")));
}

TEST_P(CollectiveTeardown, DestroyIsCollective) {
  std::vector<Communicator> comms = Communicator::emulated(world(), timeout_of(std::chrono::seconds(60)));
  use(comms);
  const auto start = Clock::now();
  run_ranks(comms, [](Communicator& c) { c.destroy(); });
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
  EXPECT_THAT(error_of([&] { comms[1].check_async_error(); }), HasSubstr("was destroyed"));
}

TEST_P(CollectiveTeardown, DestroyOnOneRankAloneTimesOut) {
  std::vector<Communicator> comms = Communicator::emulated(world(), timeout_of(std::chrono::milliseconds(200)));
  EXPECT_THAT(error_of([&] { comms[0].destroy(); }),
              HasSubstr(fmt::format("destroy: emulated rank 0 of {}: the other ranks did not destroy their "
                                    "communicators within 200 ms (every rank must)",
                                    world())));
  // It aborted the communicator, so the others do not wait for rank 0 either.
  EXPECT_THAT(error_of([&] { all_reduce(Tensor::empty(comms[1].device(), DType::f32, {4}), comms[1]); }),
              HasSubstr("aborted"));
}

TEST_P(CollectiveTeardown, ARankDroppedWhileTheOthersLiveOnIsAbortedAfterItsTimeout) {
  std::vector<Communicator> comms = Communicator::emulated(world(), timeout_of(std::chrono::milliseconds(200)));
  testing::internal::CaptureStderr();
  { Communicator dropped = std::move(comms[0]); }
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  EXPECT_THAT(testing::internal::GetCapturedStderr(),
              HasSubstr(fmt::format("emulated rank 0 of {}: destroy did not finish within 200 ms", world())));
  EXPECT_THAT(error_of([&] { all_reduce(Tensor::empty(comms[1].device(), DType::f32, {4}), comms[1]); }),
              HasSubstr("destroy timed out"));
}

INSTANTIATE_TEST_SUITE_P(EmulatedRanks, CollectiveTeardown, ::testing::Values(2, 4, 8),
                         [](const auto& info) { return fmt::format("ranks{}", info.param); });

}  // namespace
}  // namespace tjcoll
