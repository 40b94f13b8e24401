// all_gather with jax.lax.all_gather's semantics, the inverse of reduce_scatter: the group's
// tensors stacked along a new axis (untiled) or concatenated along an existing one (tiled), in
// the order of positions. Along a non-leading axis the ranks' chunks are gathered flat and
// then unpacked into the result's layout.
#include "dsl/error.h"
#include "ops/collectives.h"
#include "ops/collectives/arguments.h"
#include "ops/collectives/chunk_transpose.h"
#include "ops/collectives/communicator_state.h"

namespace tilejit::ops {
namespace {

constexpr const char* kOp = "all_gather";

// The result's part at position p is position p's x.
ChunkPlan plan_for(const Tensor& x, const Communicator& comm, const AllGatherOptions& options) {
  check_input(x, comm, kOp, "x");
  const int k = checked_group_size(options.groups, comm.size(), kOp);
  // `axis` indexes the result, whose rank is x's (tiled) or one more (untiled).
  const auto a = static_cast<size_t>(normalize_axis(options.axis, x.rank() + (options.tiled ? 0 : 1), kOp, "axis", x));
  const std::vector<int64_t>& shape = x.shape();
  ChunkPlan plan;
  plan.out_shape = shape;
  if (options.tiled)
    plan.out_shape[a] *= k;
  else
    plan.out_shape.insert(plan.out_shape.begin() + static_cast<std::ptrdiff_t>(a), k);
  plan.outer = product(shape, 0, a);
  plan.chunk = product(shape, a, shape.size());
  plan.group = group_place(state_of(comm), options.groups, kOp);
  return plan;
}

// After every argument is checked: the first call with new groups is a collective (group_of).
void run(const Tensor& x, const Tensor& out, const ChunkPlan& plan, const Communicator& comm,
         const AllGatherOptions& options, Stream* stream) {
  Communicator::State& state = state_of(comm);
  Stream& s = stream_for(state, stream, kOp);
  RankBackend& group = group_of(state, options.groups, kOp).group->live(kOp);
  const auto count = static_cast<size_t>(plan.part());
  if (!plan.needs_packing()) {
    group.all_gather(x.data(), out.data(), count, x.dtype(), s);
    return;
  }
  void* gathered = scratch(state, static_cast<size_t>(out.bytes()), s);  // (k, outer, chunk)
  group.all_gather(x.data(), gathered, count, x.dtype(), s);
  swap_leading_axes(gathered, out.data(), plan.group.size, plan.outer, plan.chunk, x.dtype(), s);
}

}  // namespace

Tensor all_gather(const Tensor& x, const Communicator& comm, const AllGatherOptions& options, Stream* stream) {
  ChunkPlan plan = plan_for(x, comm, options);
  Tensor out = Tensor::empty(comm.device(), x.dtype(), plan.out_shape);
  run(x, out, plan, comm, options, stream);
  return out;
}

void all_gather(const Tensor& x, const Tensor& out, const Communicator& comm, const AllGatherOptions& options,
                Stream* stream) {
  ChunkPlan plan = plan_for(x, comm, options);
  check_output(out, x, plan.out_shape, comm, kOp);
  check_in_place_slot(x, "x", out, "out", plan.group.position * plan.part(), kOp);
  run(x, out, plan, comm, options, stream);
}

void all_gather_in_place(const Tensor& out, const Communicator& comm, const AllGatherOptions& options, Stream* stream) {
  check_input(out, comm, kOp, "out");
  const int k = checked_group_size(options.groups, comm.size(), kOp);
  const size_t a = static_cast<size_t>(normalize_axis(options.axis, out.rank(), kOp, "axis", out));
  const std::vector<int64_t> x_shape = part_shape(out, "out", options.axis, a, options.tiled, k, kOp, "axis");
  const int position = comm.position_in(options.groups);
  Tensor x = out.view(x_shape, position * product(x_shape, 0, x_shape.size()));
  run(x, out, plan_for(x, comm, options), comm, options, stream);
}

}  // namespace tilejit::ops
