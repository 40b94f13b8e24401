// reduce_scatter, all_gather and all_reduce on emulated ranks against jax.lax's psum_scatter,
// all_gather and psum / pmax / pmin / pmean under shard_map (tests/data/crosscheck/
// collectives.json, scripts/crosscheck/make_crosscheck.py): rank r's input and output are
// element r of the case's leading dim.
#include <optional>

#include "ops/collectives.h"
#include "tests/ops/crosscheck_ops.h"

namespace tjops {
namespace {

namespace crosscheck = tilejit::crosscheck;
using tilejit::ops::Communicator;
using tilejit::ops::ReduceOp;

ReduceOp reduce_op_of(const std::string& name) {
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min, ReduceOp::average})
    if (name == tilejit::ops::reduce_op_name(op)) return op;
  ADD_FAILURE() << "no reduction named " << name;
  return ReduceOp::sum;
}

// Runs `collective` on every rank with its slice of x; checks each rank's output.
void check_ranks(const crosscheck::Case& c,
                 const std::function<Tensor(const Tensor& x, const Communicator& comm)>& collective) {
  int world = c.option<int>("world_size");
  const crosscheck::Array& x = c.input("x");
  ASSERT_EQ(x.shape.at(0), world);
  std::vector<Tensor> inputs;
  std::vector<std::optional<Tensor>> outputs(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) inputs.push_back(upload_case_array(leading_slice(x, r)));
  std::vector<Communicator> comms = Communicator::emulated(world);
  tilejit::ops::run_ranks(comms, [&](Communicator& comm) {
    auto r = static_cast<size_t>(comm.rank());
    outputs[r] = collective(inputs[r], comm);
  });
  for (int r = 0; r < world; ++r)
    expect_case_output(c.name() + " rank " + std::to_string(r), outputs[static_cast<size_t>(r)].value(),
                       leading_slice(c.output("out"), r));
}

tilejit::ops::RankGroups groups_of(const crosscheck::Case& c) {
  return c.option<tilejit::ops::RankGroups>("groups", {});
}

TEST(CollectivesCrosscheck, ReduceScatterMatchesJax) {
  for_each_case("collectives", "reduce_scatter", [](const crosscheck::Case& c) {
    tilejit::ops::ReduceScatterOptions o;
    o.scatter_dimension = c.option<int>("scatter_dimension");
    o.tiled = c.option<bool>("tiled");
    o.groups = groups_of(c);
    check_ranks(c, [&](const Tensor& x, const Communicator& comm) { return reduce_scatter(x, comm, o); });
  });
}

TEST(CollectivesCrosscheck, AllGatherMatchesJax) {
  for_each_case("collectives", "all_gather", [](const crosscheck::Case& c) {
    tilejit::ops::AllGatherOptions o;
    o.axis = c.option<int>("axis");
    o.tiled = c.option<bool>("tiled");
    o.groups = groups_of(c);
    check_ranks(c, [&](const Tensor& x, const Communicator& comm) { return all_gather(x, comm, o); });
  });
}

TEST(CollectivesCrosscheck, AllReduceMatchesJax) {
  for_each_case("collectives", "all_reduce", [](const crosscheck::Case& c) {
    tilejit::ops::AllReduceOptions o;
    o.op = reduce_op_of(c.option<std::string>("op"));
    o.groups = groups_of(c);
    check_ranks(c, [&](const Tensor& x, const Communicator& comm) { return all_reduce(x, comm, o); });
  });
}

}  // namespace
}  // namespace tjops
