#include "ops/collectives/nccl_rank.h"

#include "dsl/error.h"

namespace tilejit::ops {
namespace {

nccl::Reduction reduction_of(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return nccl::Reduction::sum;
    case ReduceOp::max: return nccl::Reduction::max;
    case ReduceOp::min: return nccl::Reduction::min;
    case ReduceOp::average: return nccl::Reduction::average;
  }
  fail("unknown ReduceOp {}", static_cast<int>(op));
}

class NcclRank final : public RankBackend {
 public:
  explicit NcclRank(std::unique_ptr<nccl::NcclComm> comm) : comm_(std::move(comm)) {}

  int rank() const override { return comm_->rank(); }
  int size() const override { return comm_->size(); }
  Device& device() const override { return comm_->device(); }
  bool emulated() const override { return false; }
  std::string describe() const override { return comm_->describe(); }

  std::unique_ptr<RankBackend> split(int color, int key) override {
    std::unique_ptr<nccl::NcclComm> child = comm_->split(color, key);
    return child ? make_nccl_rank(std::move(child)) : nullptr;
  }

  void reduce_scatter(const void* send, void* recv, size_t recv_count, DType dtype, ReduceOp op,
                      Stream& stream) override {
    comm_->reduce_scatter(send, recv, recv_count, dtype, reduction_of(op), stream);
  }
  void all_gather(const void* send, void* recv, size_t send_count, DType dtype, Stream& stream) override {
    comm_->all_gather(send, recv, send_count, dtype, stream);
  }
  void all_reduce(const void* send, void* recv, size_t count, DType dtype, ReduceOp op, Stream& stream) override {
    comm_->all_reduce(send, recv, count, dtype, reduction_of(op), stream);
  }

  void check_async_error() override { comm_->check_async_error(); }
  void synchronize(Stream& stream, const std::function<void()>& check_others) override {
    comm_->synchronize(stream, check_others);
  }
  void abort(const std::string& reason) override { comm_->abort(reason); }
  void begin_destroy() override { comm_->begin_destroy(); }
  bool destroy_finished() override { return comm_->destroy_finished(); }

 private:
  std::unique_ptr<nccl::NcclComm> comm_;
};

}  // namespace

std::unique_ptr<RankBackend> make_nccl_rank(std::unique_ptr<nccl::NcclComm> comm) {
  return std::make_unique<NcclRank>(std::move(comm));
}

}  // namespace tilejit::ops
