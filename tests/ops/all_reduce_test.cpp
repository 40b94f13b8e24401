// all_reduce on 2, 4 and 8 emulated ranks: every dtype and reduction, groups in the order given,
// allocated / into a given out / in place, element counts that the ranks do not divide (and
// fewer elements than ranks); i32 sums that wrap and averages that truncate toward zero.
#include <limits>

#include "tests/ops/collectives_test_util.h"

namespace tjcoll {
namespace {

class AllReduceSweep : public ::testing::TestWithParam<WorldAndDType> {};

TEST_P(AllReduceSweep, EveryReductionGroupingAndMode) {
  TJ_SEEDED_RNG(rng);
  const auto [world, dtype] = GetParam();
  std::vector<Communicator> comms = Communicator::emulated(world);
  for (const RankGroups& groups : groups_to_sweep(world))
    for (ReduceOp op : kReduceOps)
      for (Mode mode : kModes)
        for (const std::vector<int64_t>& shape : {std::vector<int64_t>{5, 7}, std::vector<int64_t>{3}})
          check_all_reduce(comms, {shape, dtype, reduce_options(op, groups), mode}, rng);
}

INSTANTIATE_TEST_SUITE_P(EmulatedRanks, AllReduceSweep, ::testing::ValuesIn(worlds_and_dtypes()), world_and_dtype_name);

TEST(AllReduce, IntegerSumsWrapAndAveragesTruncateTowardZero) {
  TJ_SEEDED_RNG(rng);
  std::vector<Communicator> comms = Communicator::emulated(3);
  const LD big = std::numeric_limits<int32_t>::max();
  // Element 0 wraps past INT32_MAX; element 1 averages -7 / 3 (-2, not -3); element 2 averages 7 / 3.
  std::vector<std::vector<LD>> values = {{big, -1, 1}, {big, -2, 2}, {5, -4, 4}};
  std::vector<Host> inputs;
  for (const auto& v : values) {
    Host h(DType::i32, v.size());
    for (size_t i = 0; i < v.size(); ++i) h.set(i, v[i]);
    inputs.push_back(h);
  }
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::average})
    check_all_reduce(comms, {{3}, DType::i32, reduce_options(op), Mode::allocate}, rng, inputs);
}

}  // namespace
}  // namespace tjcoll
