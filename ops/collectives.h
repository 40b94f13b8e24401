// Collectives between ranks: reduce_scatter with jax.lax.psum_scatter's semantics, all_gather
// and all_reduce (SEMANTICS.md, "Reduce-scatter and friends"), on tensors, on streams.
//
// A Communicator is one rank's handle. On CUDA devices the collectives go through NCCL; on
// the emulator, ranks are threads of this process that meet in memory, with the same API and
// semantics, so every option is tested without a GPU. The results agree to the dtype's
// rounding: the emulator sums f16 and bf16 in f32 and rounds once, where NCCL may round at
// each step of its ring:
//
//   std::vector<Communicator> ranks = Communicator::emulated(4);   // or local({&gpu0, &gpu1})
//   ReduceScatterOptions options;
//   options.scatter_dimension = 1;
//   options.tiled = true;
//   run_ranks(ranks, [&](Communicator& comm) {                     // one thread per rank
//     Tensor x = ...;                                              // f32[4, 8] on comm.device()
//     Tensor y = reduce_scatter(x, comm, options);                 // f32[4, 2]: the sum's
//   });                                                            // columns 2r, 2r+1
//
// Across processes, rank 0 makes a unique id and the others get it through a file, a TCP
// rendezvous or torchrun's environment (join_by_file, join_by_tcp, join_from_environment).
//
// Every call of a collective must be made by every rank of the communicator, in the same order,
// with the same options and sizes. A rank that never comes is a tilejit::Error after the
// communicator's timeout (the communicator is aborted then), never a hang: on a GPU the
// collectives are queued on the stream, so wait for them with comm.synchronize(stream), which
// keeps to the timeout, rather than with the stream's own synchronize().
//
// In place follows NCCL: reduce_scatter's output may be the slot of x that starts at element
// position * out.numel(), all_gather's input the slot of out that starts at position *
// x.numel() (position: the caller's place in its group), all_reduce's output x itself. For the
// leading dimension the slot is the caller's own chunk; the *_in_place functions use it.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/device.h"
#include "runtime/tensor.h"

namespace tilejit::ops {

// average is the sum divided by the group's size; for i32, NCCL's ncclAvg: the sum (wrapping
// as i32 sums do) divided by the size, rounded toward zero. For floats NCCL's ncclAvg scales
// each input by 1/size before summing, which agrees to the dtype's rounding. max and min skip
// NaNs (fmax / fmin), on both backends; jax.lax.pmax would propagate one.
enum class ReduceOp { sum, max, min, average };
const char* reduce_op_name(ReduceOp op);  // "sum", "max", "min", "average"

// Groups of ranks (jax's axis_index_groups): together they must cover every rank of the
// communicator exactly once, all of one size; a rank's position is its index in its group's
// list, in the order given. Empty: one group of every rank, in rank order.
using RankGroups = std::vector<std::vector<int>>;

struct CommunicatorOptions {
  // How long any call waits for the other ranks; TILEJIT_COLLECTIVE_TIMEOUT (seconds) sets the
  // default, else 300 s.
  std::chrono::milliseconds timeout = default_timeout();
  static std::chrono::milliseconds default_timeout();
};

// The 128 bytes that name an NCCL communicator while its ranks join it.
struct UniqueId {
  std::array<uint8_t, 128> bytes{};
  // A fresh id from NCCL (ncclGetUniqueId); needs the NCCL library, not a GPU.
  static UniqueId create();
};

class Communicator {
 public:
  // `world_size` emulated ranks, all on the emulator device; rank r's handle is element r.
  // Each rank's calls must come from a thread of its own (run_ranks does that).
  static std::vector<Communicator> emulated(int world_size, const CommunicatorOptions& options = {});
  // One rank per device of this process, rank i on devices[i]: NCCL when every device is a GPU
  // (each GPU at most once), emulated ranks when every device is the emulator.
  static std::vector<Communicator> local(const std::vector<Device*>& devices, const CommunicatorOptions& options = {});

  // This process's rank of an NCCL communicator of `world_size` ranks over processes; every
  // rank passes the same id.
  static Communicator join(const UniqueId& id, int rank, int world_size, Device& device,
                           const CommunicatorOptions& options = {});
  // Rank 0 makes the id and writes it to `path` (atomically, replacing any file there); the
  // others wait for the file. Rank 0 removes it once every rank has joined; a file left by a
  // run that failed before must not be there when the job starts.
  static Communicator join_by_file(const std::string& path, int rank, int world_size, Device& device,
                                   const CommunicatorOptions& options = {});
  // Rank 0 listens on `port` (every interface) and hands the id to each rank that connects to
  // address:port; the others retry until rank 0 is there.
  static Communicator join_by_tcp(const std::string& address, int port, int rank, int world_size, Device& device,
                                  const CommunicatorOptions& options = {});
  // As torchrun starts a process: RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT give the rank
  // and the rendezvous (join_by_tcp) and LOCAL_RANK the GPU. torchrun's own store holds
  // MASTER_PORT, so the rendezvous uses MASTER_PORT + 1 unless TILEJIT_RENDEZVOUS_PORT says.
  static Communicator join_from_environment(const CommunicatorOptions& options = {});

  Communicator(const Communicator&) = default;
  Communicator& operator=(const Communicator&) = default;
  Communicator(Communicator&&) noexcept = default;
  Communicator& operator=(Communicator&&) noexcept = default;
  ~Communicator();

  int rank() const;
  int size() const;
  Device& device() const;
  bool emulated_ranks() const;   // false for NCCL
  std::string describe() const;  // "emulated rank 1 of 4", "NCCL rank 0 of 2 on cuda:0"
  // The caller's position in its group of `groups`, after checking them (see RankGroups).
  int position_in(const RankGroups& groups) const;

  // Every rank calls it: ranks passing the same color >= 0 form a new communicator, ranked by
  // key, then by rank (ncclCommSplit). A negative color joins none and gets nothing.
  std::optional<Communicator> split(int color, int key) const;

  // Throws the error an operation ran into asynchronously (an aborted rank, an NCCL failure),
  // also in the communicators made for `groups` arguments.
  void check_async_error() const;
  // Waits until this rank's collectives on `stream` have finished; throws after the timeout
  // instead of hanging, or on an asynchronous error, and then aborts this communicator and
  // those made for groups.
  void synchronize(Stream& stream) const;
  // Stops this rank's communication at once; its calls, and the other ranks' waiting for it,
  // then throw instead of hanging. Safe from any thread.
  void abort(const std::string& reason = "aborted by the user") const;
  // Frees the communicator (and those made for groups) once its work is done; later calls
  // throw. Collective, as NCCL's finalize: it returns once every rank has called it, and after
  // the timeout it aborts and throws. Dropping the last copy of a handle frees it too, without
  // waiting for the other ranks, so one thread may drop the handles of all its ranks in any
  // order; each is freed once every rank has dropped or destroyed its own (or aborted after
  // the timeout, with a warning).
  void destroy() const;

  struct State;

 private:
  explicit Communicator(std::shared_ptr<State> state) : state_(std::move(state)) {}
  friend State& state_of(const Communicator& comm);
  std::shared_ptr<State> state_;
};

// Runs body(comms[r]) on one thread per rank and waits for all. When a rank throws, the other
// ranks' communicators are aborted, so none waits for it forever; the first error is rethrown,
// naming its rank.
void run_ranks(const std::vector<Communicator>& comms, const std::function<void(Communicator&)>& body);

// --- reduce_scatter (jax.lax.psum_scatter) ----------------------------------------------------

struct ReduceScatterOptions {
  int scatter_dimension = 0;  // negative counts from the end
  // false: the dimension's size must equal the group size k and is removed; true: it must be
  // divisible by k and is kept with size / k.
  bool tiled = false;
  RankGroups groups;
  ReduceOp op = ReduceOp::sum;
};

// Reduces x over the caller's group and returns the chunk at the caller's position of the
// result split into k contiguous chunks along scatter_dimension. f32, f16, bf16 and i32.
// `stream` defaults to the device's default stream.
Tensor reduce_scatter(const Tensor& x, const Communicator& comm, const ReduceScatterOptions& options = {},
                      Stream* stream = nullptr);
// The same into `out`, which may be x's in-place slot.
void reduce_scatter(const Tensor& x, const Tensor& out, const Communicator& comm,
                    const ReduceScatterOptions& options = {}, Stream* stream = nullptr);
// The same in x's own memory: returns the view of x's in-place slot that holds the result.
Tensor reduce_scatter_in_place(const Tensor& x, const Communicator& comm, const ReduceScatterOptions& options = {},
                               Stream* stream = nullptr);

// --- all_gather (jax.lax.all_gather) ---------------------------------------------------------

struct AllGatherOptions {
  // false: the ranks' tensors stack along a new axis of size k at `axis` of the result (negative
  // counts from the end of the result); true: they concatenate along x's existing axis.
  int axis = 0;
  bool tiled = false;
  RankGroups groups;
};

// Any dtype: the group's tensors are copied bit for bit.
Tensor all_gather(const Tensor& x, const Communicator& comm, const AllGatherOptions& options = {},
                  Stream* stream = nullptr);
// The same into `out`; x may be out's in-place slot.
void all_gather(const Tensor& x, const Tensor& out, const Communicator& comm, const AllGatherOptions& options = {},
                Stream* stream = nullptr);
// The same with the caller's input already in out's in-place slot.
void all_gather_in_place(const Tensor& out, const Communicator& comm, const AllGatherOptions& options = {},
                         Stream* stream = nullptr);

// --- all_reduce (jax.lax.psum and friends) ---------------------------------------------------

struct AllReduceOptions {
  ReduceOp op = ReduceOp::sum;
  RankGroups groups;
};

// f32, f16, bf16 and i32.
Tensor all_reduce(const Tensor& x, const Communicator& comm, const AllReduceOptions& options = {},
                  Stream* stream = nullptr);
// The same into `out`, which may be x itself (in place).
void all_reduce(const Tensor& x, const Tensor& out, const Communicator& comm, const AllReduceOptions& options = {},
                Stream* stream = nullptr);

}  // namespace tilejit::ops
