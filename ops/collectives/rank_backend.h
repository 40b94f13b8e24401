// Internal to ops/collectives: what one rank of a communicator must do, whatever carries it
// (NCCL on GPUs, emulated ranks on the emulator). The collectives here work on flat,
// contiguous buffers, as NCCL's do; shapes, groups and packing are handled above them.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "dsl/dtype.h"
#include "ops/collectives.h"
#include "runtime/device.h"

namespace tilejit::ops {

class RankBackend {
 public:
  virtual ~RankBackend() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual Device& device() const = 0;
  virtual bool emulated() const = 0;
  virtual std::string describe() const = 0;

  // Every rank calls it; a negative color joins none and gets null.
  virtual std::unique_ptr<RankBackend> split(int color, int key) = 0;

  // recv (recv_count elements) = chunk `rank` of the reduction of every rank's send, which
  // holds size() chunks of recv_count elements each.
  virtual void reduce_scatter(const void* send, void* recv, size_t recv_count, DType dtype, ReduceOp op,
                              Stream& stream) = 0;
  // recv holds size() chunks of send_count elements: chunk r is rank r's send.
  virtual void all_gather(const void* send, void* recv, size_t send_count, DType dtype, Stream& stream) = 0;
  // recv = the reduction of every rank's send, `count` elements; recv may be send.
  virtual void all_reduce(const void* send, void* recv, size_t count, DType dtype, ReduceOp op, Stream& stream) = 0;

  virtual void check_async_error() = 0;
  // Waits for the work on `stream` within the timeout, calling `check_others` while it waits: it
  // throws the asynchronous error of another communicator whose work is on the stream (those
  // made for groups), which would otherwise keep the stream busy until the timeout.
  virtual void synchronize(Stream& stream, const std::function<void()>& check_others) = 0;
  // Safe from any thread.
  virtual void abort(const std::string& reason) = 0;

  // Teardown as NCCL's finalize works: it completes only once every rank of the communicator
  // has begun it, so a thread holding several ranks (Communicator::local's) must begin each
  // before waiting for any. begin_destroy() never waits for the other ranks; destroy_finished()
  // checks once, frees the communicator when its finalize is done and says whether it is, and
  // throws on an error (the communicator is aborted then). An aborted one is finished.
  virtual void begin_destroy() = 0;
  virtual bool destroy_finished() = 0;
};

}  // namespace tilejit::ops
