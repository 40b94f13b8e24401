// Emulated communicators: what a rank knows about itself, creation from devices, split (colors,
// keys, ranks that join none) with collectives on the parts, positions in groups, and the
// errors of asking for what emulated ranks cannot do.
#include <gmock/gmock.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "ops/collectives/emulated_world.h"
#include "tests/error_message.h"
#include "tests/ops/collectives_test_util.h"

namespace tjcoll {
namespace {

using ::testing::HasSubstr;
using tilejit::testing_util::error_of;

// After an exchange every rank reads the others' buffers; a rank that an abort (or a short
// timeout) let leave before the slowest one finished could free a buffer still being read.
// Finishing an exchange waits for every rank of it, whatever an abort says.
TEST(EmulatedWorld, FinishingAnExchangeWaitsForEveryRankThroughAnAbort) {
  tilejit::ops::EmulatedWorld world(2, std::chrono::milliseconds(1000));
  std::atomic<bool> slow_rank_done = false;
  std::thread slow([&] {
    EXPECT_EQ(error_of([&] { world.arrive(1, {"exchange"}); }), "no error");
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // past the timeout, reading rank 0's buffers
    slow_rank_done = true;
    EXPECT_EQ(error_of([&] { world.finish_exchange(1, "exchange (done)"); }), "no error");
  });
  std::string exchanged = error_of([&] { world.arrive(0, {"exchange"}); });
  world.abort("another rank failed");
  std::string finished = error_of([&] { world.finish_exchange(0, "exchange (done)"); });
  EXPECT_TRUE(slow_rank_done) << "rank 0 left while rank 1 was still reading its buffers";
  slow.join();
  EXPECT_EQ(exchanged, "no error");
  EXPECT_EQ(finished, "no error");
  EXPECT_THAT(tilejit::testing_util::error_of([&] { world.arrive(0, {"next"}); }),
              HasSubstr("the communicator was aborted: another rank failed"));
}

TEST(Communicator, EmulatedRanksDescribeThemselves) {
  std::vector<Communicator> comms = Communicator::emulated(3);
  ASSERT_EQ(comms.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    const Communicator& c = comms[static_cast<size_t>(r)];
    EXPECT_EQ(c.rank(), r);
    EXPECT_EQ(c.size(), 3);
    EXPECT_TRUE(c.emulated_ranks());
    EXPECT_EQ(&c.device(), &Device::emu());
    EXPECT_EQ(c.describe(), fmt::format("emulated rank {} of 3", r));
  }
  EXPECT_THAT(error_of([] { Communicator::emulated(0); }), HasSubstr("world size 0"));
}

TEST(Communicator, LocalOnEmulatorDevicesIsEmulated) {
  std::vector<Communicator> comms = Communicator::local({&Device::emu(), &Device::emu()});
  ASSERT_EQ(comms.size(), 2u);
  EXPECT_TRUE(comms[1].emulated_ranks());
  EXPECT_EQ(comms[1].rank(), 1);
  EXPECT_THAT(error_of([] { Communicator::local({}); }), HasSubstr("Communicator::local: no devices"));
}

TEST(Communicator, ProcessesNeedGpus) {
  EXPECT_THAT(error_of([] { Communicator::join(UniqueId{}, 0, 2, Device::emu()); }),
              HasSubstr("Communicator::join: ranks in several processes need CUDA devices"));
  EXPECT_THAT(error_of([] { Communicator::join_by_file("/nonexistent/id", 1, 2, Device::emu()); }),
              HasSubstr("Communicator::join_by_file: ranks in several processes need CUDA devices"));
}

TEST(Communicator, PositionsFollowTheGroupsOrder) {
  std::vector<Communicator> comms = Communicator::emulated(4);
  const RankGroups groups = {{0, 2}, {3, 1}};
  EXPECT_EQ(comms[0].position_in(groups), 0);
  EXPECT_EQ(comms[2].position_in(groups), 1);
  EXPECT_EQ(comms[3].position_in(groups), 0);
  EXPECT_EQ(comms[1].position_in(groups), 1);
  EXPECT_EQ(comms[1].position_in({}), 1);
  EXPECT_THAT(error_of([&] { comms[0].position_in({{0, 1}}); }), HasSubstr("ranks 2, 3 in no group"));
}

// 8 ranks split by rank % 3 with keys ordering each part by descending rank; rank 7 joins none.
TEST(Communicator, SplitByColorAndKey) {
  std::vector<Communicator> comms = Communicator::emulated(8);
  std::vector<int> new_rank(8, -2), new_size(8, -2);
  std::vector<LD> sums(8, -1);
  run_ranks(comms, [&](Communicator& comm) {
    const int r = comm.rank();
    std::optional<Communicator> part = comm.split(r == 7 ? -1 : r % 3, -r);
    if (!part) return;
    new_rank[static_cast<size_t>(r)] = part->rank();
    new_size[static_cast<size_t>(r)] = part->size();
    Host mine(DType::i32, 1);
    mine.set(0, r);
    sums[static_cast<size_t>(r)] = download(all_reduce(to_device(part->device(), mine, {1}), *part)).get(0);
  });
  // Color 0: ranks 0, 3, 6; color 1: 1, 4; color 2: 2, 5 (7 joined none).
  EXPECT_EQ(new_rank, (std::vector<int>{2, 1, 1, 1, 0, 0, 0, -2}));
  EXPECT_EQ(new_size, (std::vector<int>{3, 2, 2, 3, 2, 2, 3, -2}));
  EXPECT_EQ(sums, (std::vector<LD>{9, 5, 7, 9, 5, 7, 9, -1}));
}

// The same groups twice reuse one group communicator; other groups make another.
TEST(Communicator, GroupsOfSuccessiveCallsMayDiffer) {
  TJ_SEEDED_RNG(rng);
  std::vector<Communicator> comms = Communicator::emulated(4);
  for (const RankGroups& groups :
       {RankGroups{{0, 2}, {3, 1}}, RankGroups{{0, 2}, {3, 1}}, RankGroups{{1, 0}, {2, 3}}, RankGroups{}}) {
    check_all_reduce(comms, {{6}, DType::f32, reduce_options(ReduceOp::sum, groups), Mode::allocate}, rng);
  }
}

}  // namespace
}  // namespace tjcoll
