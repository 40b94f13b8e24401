#include "ops/collectives/emulated_rank.h"

#include <cstring>

#include "dsl/error.h"
#include "ops/collectives/emulated_world.h"
#include "ops/collectives/host_reduction.h"

namespace tilejit::ops {
namespace {

// Rank r's share [begin, end) of `count` elements split over `ranks` (the first count % ranks
// shares have one element more).
struct Share {
  size_t begin, end;
};
Share share_of(int rank, int ranks, size_t count) {
  size_t base = count / static_cast<size_t>(ranks), extra = count % static_cast<size_t>(ranks);
  auto r = static_cast<size_t>(rank);
  size_t begin = r * base + std::min(r, extra);
  return Share{begin, begin + base + (r < extra ? 1 : 0)};
}

char* byte_pointer(void* p, size_t elements, DType dtype) {
  return static_cast<char*>(p) + elements * static_cast<size_t>(dtype_storage_bytes(dtype));
}

std::vector<const void*> sends_of(const std::vector<EmulatedWorld::Part>& parts) {
  std::vector<const void*> sends;
  for (const auto& part : parts) sends.push_back(part.send);
  return sends;
}

class EmulatedRank final : public RankBackend {
 public:
  EmulatedRank(std::shared_ptr<EmulatedWorld> world, int rank) : world_(std::move(world)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return world_->size(); }
  Device& device() const override { return Device::emu(); }
  bool emulated() const override { return true; }
  std::string describe() const override { return fmt::format("emulated rank {} of {}", rank_, world_->size()); }

  std::unique_ptr<RankBackend> split(int color, int key) override {
    EmulatedWorld::Membership m = world_->split(rank_, color, key);
    if (!m.world) return nullptr;
    return std::make_unique<EmulatedRank>(std::move(m.world), m.rank);
  }

  void reduce_scatter(const void* send, void* recv, size_t recv_count, DType dtype, ReduceOp op, Stream&) override {
    std::string call =
        fmt::format("reduce_scatter({}, {} elements per rank, {})", dtype_name(dtype), recv_count, reduce_op_name(op));
    auto parts = world_->arrive(rank_, {call, send, recv});
    reduce_elements(dtype, op, sends_of(parts), static_cast<size_t>(rank_) * recv_count, recv_count, recv);
    world_->finish_exchange(rank_, call + " (done)");
  }

  void all_gather(const void* send, void* recv, size_t send_count, DType dtype, Stream&) override {
    std::string call = fmt::format("all_gather({}, {} elements per rank)", dtype_name(dtype), send_count);
    auto parts = world_->arrive(rank_, {call, send, recv});
    const size_t bytes = send_count * static_cast<size_t>(dtype_storage_bytes(dtype));
    for (size_t r = 0; r < parts.size(); ++r) {
      char* chunk = byte_pointer(recv, r * send_count, dtype);
      if (chunk != parts[r].send) std::memcpy(chunk, parts[r].send, bytes);  // in place: already there
    }
    world_->finish_exchange(rank_, call + " (done)");
  }

  // Each rank reduces its share of the elements into its own output, then copies the other
  // ranks' reduced shares from theirs: in place, no rank writes what another still reads.
  void all_reduce(const void* send, void* recv, size_t count, DType dtype, ReduceOp op, Stream&) override {
    std::string call = fmt::format("all_reduce({}, {} elements, {})", dtype_name(dtype), count, reduce_op_name(op));
    auto parts = world_->arrive(rank_, {call, send, recv});
    const int ranks = world_->size();
    Share mine = share_of(rank_, ranks, count);
    reduce_elements(dtype, op, sends_of(parts), mine.begin, mine.end - mine.begin,
                    byte_pointer(recv, mine.begin, dtype));
    world_->finish_exchange(rank_, call + " (reduced)");
    for (int r = 0; r < ranks; ++r) {
      if (r == rank_) continue;
      Share theirs = share_of(r, ranks, count);
      std::memcpy(byte_pointer(recv, theirs.begin, dtype),
                  byte_pointer(parts[static_cast<size_t>(r)].recv, theirs.begin, dtype),
                  (theirs.end - theirs.begin) * static_cast<size_t>(dtype_storage_bytes(dtype)));
    }
    world_->finish_exchange(rank_, call + " (done)");
  }

  void check_async_error() override {
    std::string reason = world_->abort_reason();
    if (!reason.empty()) fail("{}: the communicator was aborted: {}", describe(), reason);
  }
  void synchronize(Stream&, const std::function<void()>& check_others) override {
    check_async_error();
    check_others();
  }
  void abort(const std::string& reason) override { world_->abort(reason); }
  void begin_destroy() override { world_->begin_finalize(rank_); }
  bool destroy_finished() override { return world_->finalized(); }

 private:
  std::shared_ptr<EmulatedWorld> world_;
  int rank_;
};

}  // namespace

std::vector<std::unique_ptr<RankBackend>> make_emulated_ranks(int world_size, std::chrono::milliseconds timeout) {
  if (world_size < 1) fail("emulated communicator: world size {} (it must be 1 or more)", world_size);
  auto world = std::make_shared<EmulatedWorld>(world_size, timeout);
  std::vector<std::unique_ptr<RankBackend>> ranks;
  for (int r = 0; r < world_size; ++r) ranks.push_back(std::make_unique<EmulatedRank>(world, r));
  return ranks;
}

}  // namespace tilejit::ops
