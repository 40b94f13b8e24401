// all_gather on 2, 4 and 8 emulated ranks: every dtype, every axis of the result (negative ones
// too), tiled and untiled, groups in the order given, allocated / into a given out / in place.
// Results must be bit-exact copies of the right rank's input.
#include "tests/ops/collectives_test_util.h"

namespace tjcoll {
namespace {

class AllGatherSweep : public ::testing::TestWithParam<WorldAndDType> {};

TEST_P(AllGatherSweep, EveryAxisTilingGroupingAndMode) {
  TJ_SEEDED_RNG(rng);
  const auto [world, dtype] = GetParam();
  std::vector<Communicator> comms = Communicator::emulated(world);
  for (const RankGroups& groups : groups_to_sweep(world)) {
    for (bool tiled : {false, true}) {
      // x is 3-D; untiled results are 4-D, so their axes run from -4 to 3.
      const std::vector<int> axes = tiled ? std::vector<int>{0, 1, 2, -1, -3} : std::vector<int>{0, 1, 2, 3, -1, -2};
      for (int axis : axes) {
        for (Mode mode : kModes)
          check_all_gather(comms, {{3, 2, 5}, dtype, gather_options(axis, tiled, groups), mode}, rng);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EmulatedRanks, AllGatherSweep, ::testing::ValuesIn(worlds_and_dtypes()), world_and_dtype_name);

// A scalar per rank gathers into a vector; a 1-D tensor tiled is a concatenation.
TEST(AllGather, ScalarsAndVectors) {
  TJ_SEEDED_RNG(rng);
  std::vector<Communicator> comms = Communicator::emulated(4);
  for (DType dtype : kCollectiveDTypes) {
    check_all_gather(comms, {{}, dtype, gather_options(0, false), Mode::allocate}, rng);
    check_all_gather(comms, {{7}, dtype, gather_options(-1, true, {{3, 1}, {0, 2}}), Mode::in_place}, rng);
  }
}

// Every other dtype is gathered too, bit for bit: along a new leading axis, and along an inner
// one (which packs the chunks), by groups, in each mode.
TEST(AllGather, EveryDTypeIsCopiedBitForBit) {
  TJ_SEEDED_RNG(rng);
  std::vector<Communicator> comms = Communicator::emulated(4);
  for (DType dtype : kGatherOnlyDTypes) {
    check_all_gather(comms, {{3, 5}, dtype, gather_options(0, false), Mode::allocate}, rng);
    check_all_gather(comms, {{3, 5}, dtype, gather_options(1, true, {{3, 1}, {0, 2}}), Mode::into_out}, rng);
    check_all_gather(comms, {{2, 3, 7}, dtype, gather_options(-1, false), Mode::in_place}, rng);
  }
}

// all_gather undoes reduce_scatter's split: gathering the tiled scatter of a sum along the same
// dimension gives every rank the whole sum.
TEST(AllGather, InvertsReduceScatter) {
  TJ_SEEDED_RNG(rng);
  const int world = 4;
  std::vector<Communicator> comms = Communicator::emulated(world);
  std::vector<Host> inputs = random_inputs(world, DType::i32, 2 * 8 * 3, rng);
  std::vector<Host> results(world);
  run_ranks(comms, [&](Communicator& comm) {
    Tensor x = to_device(comm.device(), inputs[static_cast<size_t>(comm.rank())], {2, 8, 3});
    Tensor part = reduce_scatter(x, comm, scatter_options(1, true));
    results[static_cast<size_t>(comm.rank())] = download(all_gather(part, comm, gather_options(1, true)));
  });
  std::vector<LD> sum(inputs[0].size());
  for (const Host& h : inputs)
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += h.get(i);
  for (int r = 0; r < world; ++r)
    expect_values(fmt::format("rank {}", r), results[static_cast<size_t>(r)], sum, exact());
}

}  // namespace
}  // namespace tjcoll
