// One rank of an NCCL communicator on a CUDA device: creation (from a unique id, or for
// several GPUs of this process), splitting, the collectives tilejit uses, and teardown, with
// NCCL's own types kept inside runtime/nccl/. ops/collectives builds the user-facing
// communicator on it.
//
// Every communicator is non-blocking (NCCL's `blocking = 0`): a call that NCCL has not finished
// is polled, so nothing waits longer than the communicator's timeout. On a timeout or an
// asynchronous NCCL error the communicator is aborted and the call throws tilejit::Error.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dsl/dtype.h"
#include "runtime/device.h"

struct ncclComm;
struct CUctx_st;

namespace tilejit::nccl {

// The bytes that name a communicator while its ranks join it (ncclUniqueId).
using UniqueId = std::array<uint8_t, 128>;

enum class Reduction { sum, max, min, average };

// "NCCL 2.28.9 (libnccl.so.2)", or why NCCL cannot be used. Never throws.
std::string status();
bool available();

// A fresh id (ncclGetUniqueId); one rank makes it and hands it to the others.
UniqueId new_unique_id();

class NcclComm {
 public:
  // This process's rank of a communicator of `world_size` ranks that all pass `id`. Waits for
  // the other ranks up to `timeout`.
  static std::unique_ptr<NcclComm> join(const UniqueId& id, int rank, int world_size, Device& device,
                                        std::chrono::milliseconds timeout);
  // A communicator over GPUs of this process, rank i on devices[i] (each device at most once).
  static std::vector<std::unique_ptr<NcclComm>> create_local(const std::vector<Device*>& devices,
                                                             std::chrono::milliseconds timeout);
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;
  // Aborts the communicator if it was not destroyed; never throws.
  ~NcclComm();

  // Every rank calls it: ranks passing the same color >= 0 form a new communicator, ranked by
  // key (then by rank). A negative color joins none and gets null.
  std::unique_ptr<NcclComm> split(int color, int key);

  int rank() const { return rank_; }
  int size() const { return size_; }
  Device& device() const { return *device_; }
  std::string describe() const;  // "NCCL rank 1 of 4 on cuda:1"

  // The collectives, enqueued on `stream`. Counts are elements; buffers are device memory.
  void reduce_scatter(const void* send, void* recv, size_t recv_count, DType dtype, Reduction op, Stream& stream);
  void all_gather(const void* send, void* recv, size_t send_count, DType dtype, Stream& stream);
  void all_reduce(const void* send, void* recv, size_t count, DType dtype, Reduction op, Stream& stream);

  // Throws if NCCL reported an asynchronous error (the communicator is aborted then).
  void check_async_error();
  // Waits for the work on `stream`, checking for asynchronous errors (this communicator's, and
  // with `check_others` those of the other communicators with work on the stream); aborts and
  // throws after the timeout. An error check_others throws passes through, and its caller
  // aborts what it must.
  void synchronize(Stream& stream, const std::function<void()>& check_others);
  // Stops the communicator's work at once; later calls throw. Safe from any thread: a call
  // polling on another thread returns with an error naming `reason`.
  void abort(const std::string& reason);
  // Teardown in two steps, as ncclCommFinalize is collective: it completes once every rank
  // has called it, so one thread destroying several ranks begins each before waiting for any.
  // begin_destroy() calls ncclCommFinalize, which does not wait (the communicator is
  // non-blocking); destroy_finished() checks once whether it has completed, and then frees the
  // communicator (ncclCommDestroy). Both throw on an NCCL error, after aborting.
  void begin_destroy();
  bool destroy_finished();

 private:
  NcclComm(Device& device, std::chrono::milliseconds timeout);
  void make_current() const;
  ncclComm* live(const char* call);  // the handle, or throws when aborted or destroyed
  // Turns the result of `call` into success or a tilejit::Error, polling the state while it is in
  // progress (and once after a success).
  void finish(int result, const char* call, std::unique_lock<std::mutex>& lock);
  void read_rank_and_size();
  // comm_'s asynchronous state: ncclInProgress, ncclSuccess or its error (mutex_ held).
  int async_state();
  // Aborts comm_ and throws the failure of `call` with `result` (mutex_ held).
  [[noreturn]] void abort_and_fail(int result, const char* call);
  void abort_locked(const std::string& reason);

  Device* device_;
  CUctx_st* context_ = nullptr;  // the device's primary context, retained
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;  // guards comm_ and every NCCL call on it
  ncclComm* comm_ = nullptr;
  std::string ended_;  // why comm_ is gone: "aborted: ...", "destroyed"
  bool finalizing_ = false;  // ncclCommFinalize was called
  int rank_ = 0, size_ = 0;
};

}  // namespace tilejit::nccl
