// Every misuse of the collectives is a tilejit::Error naming the offending sizes or ranks, on
// 2, 4 and 8 emulated ranks: sizes the group does not divide, groups that do not cover every
// rank exactly once or differ in size, dimensions out of range, wrong outputs, overlaps that are
// not the in-place slot; ranks that call different collectives, a rank that never comes (a
// timeout, not a hang), aborts, and use after destroy (teardown itself: collective_teardown_test.cpp).
#include <gmock/gmock.h>

#include <chrono>
#include <thread>

#include "tests/error_message.h"
#include "tests/ops/collectives_test_util.h"

namespace tjcoll {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using tilejit::testing_util::error_of;

class CollectiveErrors : public ::testing::TestWithParam<int> {
 protected:
  int world() const { return GetParam(); }
  // The error every rank runs into when each calls `call` with an f32 tensor of `shape`.
  std::string error_with(const std::vector<int64_t>& shape,
                         const std::function<void(const Tensor&, Communicator&)>& call) {
    std::vector<Communicator> comms = Communicator::emulated(world());
    return error_of([&] {
      run_ranks(comms, [&](Communicator& comm) { call(Tensor::empty(comm.device(), DType::f32, shape), comm); });
    });
  }
};

TEST_P(CollectiveErrors, TiledSizeTheGroupDoesNotDivide) {
  const int64_t size = 2 * world() + 1;
  EXPECT_THAT(
      error_with({3, size}, [](const Tensor& x, Communicator& c) { reduce_scatter(x, c, scatter_options(1, true)); }),
      AllOf(HasSubstr("reduce_scatter: scatter_dimension 1 of x f32[3, " + std::to_string(size)),
            HasSubstr(fmt::format("has size {}, which the group size {} does not divide", size, world()))));
}

TEST_P(CollectiveErrors, UntiledSizeOtherThanTheGroupSize) {
  const int64_t size = world() + 1;
  EXPECT_THAT(error_with({size}, [](const Tensor& x, Communicator& c) { reduce_scatter(x, c); }),
              HasSubstr(fmt::format("has size {}, but untiled it must equal the group size {}", size, world())));
}

TEST_P(CollectiveErrors, GroupSizeCountsNotTheWorldSize) {
  // Two groups: the dimension must have the group's size, half the world.
  RankGroups halves(2);
  for (int r = 0; r < world(); ++r) halves[static_cast<size_t>(r % 2)].push_back(r);
  EXPECT_THAT(error_with({world()}, [&](const Tensor& x,
                                        Communicator& c) { reduce_scatter(x, c, scatter_options(0, false, halves)); }),
              HasSubstr(fmt::format("has size {}, but untiled it must equal the group size {}", world(), world() / 2)));
}

TEST_P(CollectiveErrors, GroupsMissingRanks) {
  RankGroups first_half = {{}};
  for (int r = 0; r < world() / 2; ++r) first_half[0].push_back(r);
  std::string missing = world() == 2 ? "rank 1 in no group" : fmt::format("ranks {}, ", world() / 2);
  EXPECT_THAT(
      error_with({world()}, [&](const Tensor& x,
                                Communicator& c) { reduce_scatter(x, c, scatter_options(0, false, first_half)); }),
      AllOf(HasSubstr(missing), HasSubstr("must cover every rank")));
}

TEST_P(CollectiveErrors, GroupsWithARankTwice) {
  RankGroups twice;
  for (int r = 0; r < world(); r += 2) twice.push_back({r, r == 0 ? 0 : r + 1});
  EXPECT_THAT(error_with({2}, [&](const Tensor& x,
                                  Communicator& c) { reduce_scatter(x, c, scatter_options(0, false, twice)); }),
              HasSubstr("rank 0 appears more than once (in group 0 and group 0)"));
}

TEST_P(CollectiveErrors, GroupsWithARankOutOfRange) {
  RankGroups beyond = {{}};
  for (int r = 1; r <= world(); ++r) beyond[0].push_back(r);
  EXPECT_THAT(error_with({world()}, [&](const Tensor& x,
                                        Communicator& c) { all_reduce(x, c, reduce_options(ReduceOp::sum, beyond)); }),
              HasSubstr(fmt::format("all_reduce: groups {}: rank {} is not a rank of the communicator (ranks 0 to {})",
                                    beyond, world(), world() - 1)));
}

TEST_P(CollectiveErrors, GroupsOfUnequalSize) {
  // Two ranks can only be split evenly, so their second group repeats a rank (the sizes are
  // checked first).
  RankGroups unequal = world() == 2 ? RankGroups{{0, 1}, {1}} : RankGroups{{0}, {}};
  if (world() > 2)
    for (int r = 1; r < world(); ++r) unequal[1].push_back(r);
  EXPECT_THAT(
      error_with({2}, [&](const Tensor& x, Communicator& c) { all_gather(x, c, gather_options(0, false, unequal)); }),
      HasSubstr(fmt::format("the groups must all have one size, but group 0 has {} ranks and group 1 has {}",
                            unequal[0].size(), unequal[1].size())));
  EXPECT_THAT(error_with({2},
                         [&](const Tensor& x, Communicator& c) {
                           all_gather(x, c, gather_options(0, false, {{}, {0}}));
                         }),
              HasSubstr("group 0 is empty"));
}

TEST_P(CollectiveErrors, DimensionsOutOfRange) {
  EXPECT_THAT(error_with({2, world(), 3},
                         [](const Tensor& x, Communicator& c) { reduce_scatter(x, c, scatter_options(3, false)); }),
              HasSubstr("scatter_dimension 3 is out of range for f32[2, " + std::to_string(world()) +
                        ", 3] on emu (valid: -3 to 2)"));
  EXPECT_THAT(error_with({2, world(), 3},
                         [](const Tensor& x, Communicator& c) { reduce_scatter(x, c, scatter_options(-4, false)); }),
              HasSubstr("scatter_dimension -4 is out of range"));
  // Untiled, the new axis may be any of the result's 3 axes: 3 is one too many.
  EXPECT_THAT(error_with({2, 3}, [](const Tensor& x, Communicator& c) { all_gather(x, c, gather_options(3, false)); }),
              HasSubstr("all_gather: axis 3 is out of range for f32[2, 3] on emu (valid: -3 to 2)"));
  EXPECT_THAT(error_with({2, 3}, [](const Tensor& x, Communicator& c) { all_gather(x, c, gather_options(2, true)); }),
              HasSubstr("axis 2 is out of range for f32[2, 3] on emu (valid: -2 to 1)"));
  EXPECT_THAT(error_with({}, [](const Tensor& x, Communicator& c) { reduce_scatter(x, c); }),
              HasSubstr("a scalar has no dimension to scatter"));
}

TEST_P(CollectiveErrors, OutputsOfTheWrongShapeOrDtype) {
  EXPECT_THAT(error_with({world(), 4},
                         [](const Tensor& x, Communicator& c) {
                           reduce_scatter(x, Tensor::empty(c.device(), DType::f32, {4, 1}), c);
                         }),
              HasSubstr("reduce_scatter: out is f32[4, 1] on emu, but for x f32[" + std::to_string(world()) +
                        ", 4] on emu it must be f32[4]"));
  EXPECT_THAT(error_with({3}, [](const Tensor& x,
                                 Communicator& c) { all_reduce(x, Tensor::empty(c.device(), DType::i32, {3}), c); }),
              HasSubstr("all_reduce: out is i32[3] on emu, but for x f32[3] on emu it must be f32[3]"));
  std::vector<Communicator> comms = Communicator::emulated(world());
  EXPECT_THAT(error_of([&] {
                run_ranks(comms, [](Communicator& c) { all_reduce(Tensor::empty(c.device(), DType::i64, {3}), c); });
              }),
              HasSubstr("all_reduce: i64 tensors cannot be reduced (f32, f16, bf16 and i32 can)"));
  EXPECT_THAT(error_of([&] {
                run_ranks(comms, [](Communicator& c) {
                  reduce_scatter(Tensor::empty(c.device(), DType::f8e4m3, {c.size()}), c);
                });
              }),
              HasSubstr("reduce_scatter: f8e4m3 tensors cannot be reduced (f32, f16, bf16 and i32 can)"));
}

TEST_P(CollectiveErrors, OverlapsThatAreNotTheInPlaceSlot) {
  const int64_t n = 2 * world();
  // Rank r's slot starts at element 2r; one element further is an overlap, not the slot.
  EXPECT_THAT(error_with({n},
                         [](const Tensor& x, Communicator& c) {
                           const int off_slot = c.rank() + 1 < c.size() ? 2 * c.rank() + 1 : 2 * c.rank() - 1;
                           reduce_scatter(x, x.view({2}, off_slot), c, scatter_options(0, true));
                         }),
              HasSubstr("reduce_scatter: out (8 bytes at byte "));
  EXPECT_THAT(error_with({n}, [](const Tensor& x,
                                 Communicator& c) { all_gather(x.view({2}, 1), x, c, gather_options(0, true)); }),
              HasSubstr("all_gather: x (8 bytes at byte 4 of out) overlaps out but is not its in-place slot"));
  EXPECT_THAT(
      error_with({n}, [n](const Tensor& x, Communicator& c) { all_reduce(x.view({n - 1}), x.view({n - 1}, 1), c); }),
      HasSubstr("all_reduce: out (" + std::to_string(4 * (n - 1)) + " bytes at byte 4 of x) overlaps x"));
}

TEST_P(CollectiveErrors, InPlaceGatherOfASizeTheGroupDoesNotDivide) {
  EXPECT_THAT(error_with({world() + 1}, [](const Tensor& out,
                                           Communicator& c) { all_gather_in_place(out, c, gather_options(0, true)); }),
              HasSubstr(fmt::format("axis 0 of out f32[{}] on emu has size {}, which the group size {} does not divide",
                                    world() + 1, world() + 1, world())));
}

TEST_P(CollectiveErrors, RanksCallingDifferentCollectives) {
  std::vector<Communicator> comms = Communicator::emulated(world());
  std::string error = error_of([&] {
    run_ranks(comms, [](Communicator& c) {
      Tensor x = Tensor::empty(c.device(), DType::f32, {c.size()});
      if (c.rank() == 1)
        all_gather(x, c);
      else
        reduce_scatter(x, c);
    });
  });
  EXPECT_THAT(error, AllOf(HasSubstr("the ranks' calls differ"),
                           HasSubstr("rank 1 calls all_gather(f32, " + std::to_string(world()) + " elements per rank)"),
                           HasSubstr("reduce_scatter(f32, 1 elements per rank, sum)")));
}

TEST_P(CollectiveErrors, ARankThatNeverComesIsATimeout) {
  std::vector<Communicator> comms = Communicator::emulated(world(), timeout_of(std::chrono::milliseconds(200)));
  const int absent = world() - 1;
  auto start = std::chrono::steady_clock::now();
  std::string error = error_of([&] {
    run_ranks(comms, [&](Communicator& c) {
      if (c.rank() != absent) all_reduce(Tensor::empty(c.device(), DType::f32, {4}), c);
    });
  });
  EXPECT_THAT(error,
              HasSubstr(fmt::format("rank {} of {} did not arrive at all_reduce(f32, 4 elements, sum) within 200 ms",
                                    absent, world())));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  // The communicator is aborted from then on.
  EXPECT_THAT(error_of([&] { comms[0].check_async_error(); }), HasSubstr("the communicator was aborted"));
}

TEST_P(CollectiveErrors, AnAbortWakesTheWaitingRanks) {
  std::vector<Communicator> comms = Communicator::emulated(world(), timeout_of(std::chrono::seconds(60)));
  std::vector<std::string> errors(comms.size());
  std::vector<std::thread> waiting;
  auto start = std::chrono::steady_clock::now();
  for (int r = 1; r < world(); ++r)
    waiting.emplace_back([&, r] {
      Communicator& c = comms[static_cast<size_t>(r)];
      errors[static_cast<size_t>(r)] = error_of([&] { all_reduce(Tensor::empty(c.device(), DType::f32, {4}), c); });
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  comms[0].abort("stopped by the test");
  for (auto& t : waiting) t.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  for (int r = 1; r < world(); ++r)
    EXPECT_THAT(errors[static_cast<size_t>(r)], HasSubstr("the communicator was aborted: stopped by the test"))
        << "rank " << r;
}

TEST_P(CollectiveErrors, AFailingRankStopsTheOthers) {
  std::vector<Communicator> comms = Communicator::emulated(world(), timeout_of(std::chrono::seconds(60)));
  auto start = std::chrono::steady_clock::now();
  std::string error = error_of([&] {
    run_ranks(comms, [](Communicator& c) {
      if (c.rank() == 1) throw std::runtime_error("rank one broke");
      all_reduce(Tensor::empty(c.device(), DType::f32, {4}), c);
    });
  });
  EXPECT_EQ(error, "rank 1: rank one broke");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST_P(CollectiveErrors, UseAfterDestroy) {
  std::vector<Communicator> comms = Communicator::emulated(world());
  run_ranks(comms, [](Communicator& c) { c.destroy(); });
  EXPECT_THAT(error_of([&] { all_reduce(Tensor::empty(comms[0].device(), DType::f32, {4}), comms[0]); }),
              HasSubstr(fmt::format("all_reduce: emulated rank 0 of {} was destroyed", world())));
}

// Each rank's groups are valid, but the ranks disagree: the split they make says so.
TEST(CollectiveGroups, RanksPassingDifferentGroupsAreAnError) {
  std::vector<Communicator> comms = Communicator::emulated(4);
  const RankGroups pairs = {{0, 1}, {2, 3}}, other_pairs = {{0, 2}, {1, 3}};
  EXPECT_THAT(error_of([&] {
                run_ranks(comms, [&](Communicator& c) {
                  all_reduce(Tensor::empty(c.device(), DType::f32, {4}), c,
                             reduce_options(ReduceOp::sum, c.rank() < 2 ? pairs : other_pairs));
                });
              }),
              HasSubstr("every rank must pass the same groups"));
}

INSTANTIATE_TEST_SUITE_P(EmulatedRanks, CollectiveErrors, ::testing::Values(2, 4, 8),
                         [](const auto& info) { return fmt::format("ranks{}", info.param); });

}  // namespace
}  // namespace tjcoll
