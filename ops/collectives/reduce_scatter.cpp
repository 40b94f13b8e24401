// reduce_scatter with jax.lax.psum_scatter's semantics (SEMANTICS.md): the arguments are
// checked before any rank communicates, a non-leading scatter dimension is packed so that every
// rank's chunk is contiguous, and the caller's group reduce-scatters the flat buffer.
#include "dsl/error.h"
#include "ops/collectives.h"
#include "ops/collectives/arguments.h"
#include "ops/collectives/chunk_transpose.h"
#include "ops/collectives/communicator_state.h"
#include "ops/collectives/host_reduction.h"

namespace tilejit::ops {
namespace {

constexpr const char* kOp = "reduce_scatter";

// The caller receives the reduction of x's part at its position.
ChunkPlan plan_for(const Tensor& x, const Communicator& comm, const ReduceScatterOptions& options) {
  check_reduction_dtype(x.dtype(), kOp);
  check_input(x, comm, kOp, "x");
  const int k = checked_group_size(options.groups, comm.size(), kOp);
  if (x.rank() == 0) fail("{}: x is {}: a scalar has no dimension to scatter", kOp, x.describe());
  const auto d = static_cast<size_t>(normalize_axis(options.scatter_dimension, x.rank(), kOp, "scatter_dimension", x));
  ChunkPlan plan;
  plan.out_shape = part_shape(x, "x", options.scatter_dimension, d, options.tiled, k, kOp, "scatter_dimension");
  plan.outer = product(x.shape(), 0, d);
  plan.chunk = x.shape()[d] / k * product(x.shape(), d + 1, x.shape().size());
  plan.group = group_place(state_of(comm), options.groups, kOp);
  return plan;
}

// After every argument is checked: the first call with new groups is a collective (group_of).
void run(const Tensor& x, const Tensor& out, const ChunkPlan& plan, const Communicator& comm,
         const ReduceScatterOptions& options, Stream* stream) {
  Communicator::State& state = state_of(comm);
  Stream& s = stream_for(state, stream, kOp);
  GroupView group = group_of(state, options.groups, kOp);
  const void* send = x.data();
  if (plan.needs_packing()) {
    void* packed = scratch(state, static_cast<size_t>(x.bytes()), s);  // (k, outer, chunk)
    swap_leading_axes(x.data(), packed, plan.outer, plan.group.size, plan.chunk, x.dtype(), s);
    send = packed;
  }
  group.group->live(kOp).reduce_scatter(send, out.data(), static_cast<size_t>(plan.part()), x.dtype(), options.op, s);
}

}  // namespace

Tensor reduce_scatter(const Tensor& x, const Communicator& comm, const ReduceScatterOptions& options, Stream* stream) {
  ChunkPlan plan = plan_for(x, comm, options);
  Tensor out = Tensor::empty(comm.device(), x.dtype(), plan.out_shape);
  run(x, out, plan, comm, options, stream);
  return out;
}

void reduce_scatter(const Tensor& x, const Tensor& out, const Communicator& comm, const ReduceScatterOptions& options,
                    Stream* stream) {
  ChunkPlan plan = plan_for(x, comm, options);
  check_output(out, x, plan.out_shape, comm, kOp);
  check_in_place_slot(out, "out", x, "x", plan.group.position * plan.part(), kOp);
  run(x, out, plan, comm, options, stream);
}

Tensor reduce_scatter_in_place(const Tensor& x, const Communicator& comm, const ReduceScatterOptions& options,
                               Stream* stream) {
  ChunkPlan plan = plan_for(x, comm, options);
  Tensor out = x.view(plan.out_shape, plan.group.position * plan.part());
  run(x, out, plan, comm, options, stream);
  return out;
}

}  // namespace tilejit::ops
