// all_reduce (jax.lax.psum, pmax, pmin, pmean): every rank of the caller's group gets the
// reduction of the group's tensors, the same as reduce_scatter followed by all_gather.
#include "ops/collectives.h"
#include "ops/collectives/arguments.h"
#include "ops/collectives/communicator_state.h"
#include "ops/collectives/host_reduction.h"

namespace tilejit::ops {
namespace {

constexpr const char* kOp = "all_reduce";

void check_arguments(const Tensor& x, const Communicator& comm, const AllReduceOptions& options) {
  check_reduction_dtype(x.dtype(), kOp);
  check_input(x, comm, kOp, "x");
  group_place(state_of(comm), options.groups, kOp);
}

// After every argument is checked: the first call with new groups is a collective (group_of).
void run(const Tensor& x, const Tensor& out, const Communicator& comm, const AllReduceOptions& options,
         Stream* stream) {
  Stream& s = stream_for(state_of(comm), stream, kOp);
  GroupView group = group_of(state_of(comm), options.groups, kOp);
  group.group->live(kOp).all_reduce(x.data(), out.data(), static_cast<size_t>(x.numel()), x.dtype(), options.op, s);
}

}  // namespace

Tensor all_reduce(const Tensor& x, const Communicator& comm, const AllReduceOptions& options, Stream* stream) {
  check_arguments(x, comm, options);
  Tensor out = Tensor::empty(comm.device(), x.dtype(), x.shape());
  run(x, out, comm, options, stream);
  return out;
}

void all_reduce(const Tensor& x, const Tensor& out, const Communicator& comm, const AllReduceOptions& options,
                Stream* stream) {
  check_arguments(x, comm, options);
  check_output(out, x, x.shape(), comm, kOp);
  check_in_place_slot(out, "out", x, "x", 0, kOp);
  run(x, out, comm, options, stream);
}

}  // namespace tilejit::ops
