// The collectives on the NCCL path, on one GPU: a world of one rank (NCCL places one rank per
// GPU), which still runs every call through NCCL and its argument checks, every dtype, reduction,
// dimension and mode, the packing kernel on the GPU, communicators made in one process, from a
// file, a TCP rendezvous and torchrun's environment, split, abort, destroy, and the timeout of a
// rank that never comes. Each test skips, saying why, without a GPU or without NCCL.
#include <gmock/gmock.h>

#include "ops/collectives/chunk_transpose.h"
#include "runtime/nccl/nccl_comm.h"
#include "tests/error_message.h"
#include "tests/ops/collectives_test_util.h"
#include "tests/scoped_env.h"
#include "tests/temp_directory.h"

namespace tjcoll {
namespace {

using ::testing::HasSubstr;
using tilejit::testing_util::error_of;
using tilejit::testing_util::ScopedEnv;
using tilejit::testing_util::TempDirectory;

class NcclOnGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Device::cuda_device_count() == 0) GTEST_SKIP() << "no GPU: " << tilejit::cuda_driver_status();
    if (!tilejit::nccl::available()) GTEST_SKIP() << "no NCCL: " << tilejit::nccl::status();
  }
  static std::vector<Communicator> world_of_one() { return Communicator::local({&Device::cuda(0)}); }
};

TEST_F(NcclOnGpu, AWorldOfOneGoesThroughNccl) {
  std::vector<Communicator> comms = world_of_one();
  ASSERT_EQ(comms.size(), 1u);
  EXPECT_FALSE(comms[0].emulated_ranks());
  EXPECT_EQ(comms[0].describe(), "NCCL rank 0 of 1 on cuda:0");
  EXPECT_EQ(&comms[0].device(), &Device::cuda(0));
}

TEST_F(NcclOnGpu, ReduceScatterEveryOption) {
  TJ_SEEDED_RNG(rng);
  std::vector<Communicator> comms = world_of_one();
  for (DType dtype : kCollectiveDTypes)
    for (ReduceOp op : kReduceOps)
      for (int dim : {0, 1, -1})
        for (bool tiled : {false, true})
          for (Mode mode : kModes) {
            std::vector<int64_t> shape = {3, 4, 5};
            shape[normalized_axis(dim, 3)] = tiled ? 6 : 1;
            check_reduce_scatter(comms, {shape, dtype, scatter_options(dim, tiled, {{0}}, op), mode}, rng);
          }
}

TEST_F(NcclOnGpu, AllGatherEveryOption) {
  TJ_SEEDED_RNG(rng);
  std::vector<Communicator> comms = world_of_one();
  for (DType dtype : kCollectiveDTypes)
    for (bool tiled : {false, true})
      for (int axis : {0, 1, -1})
        for (Mode mode : kModes) check_all_gather(comms, {{3, 2, 5}, dtype, gather_options(axis, tiled), mode}, rng);
  for (DType dtype : kGatherOnlyDTypes)  // gathered as bytes
    check_all_gather(comms, {{3, 2, 5}, dtype, gather_options(1, true), Mode::into_out}, rng);
}

TEST_F(NcclOnGpu, AllReduceEveryOption) {
  TJ_SEEDED_RNG(rng);
  std::vector<Communicator> comms = world_of_one();
  for (DType dtype : kCollectiveDTypes)
    for (ReduceOp op : kReduceOps)
      for (Mode mode : kModes) check_all_reduce(comms, {{7, 9}, dtype, reduce_options(op), mode}, rng);
}

// The packing kernel on the GPU against the emulator's result, bit for bit.
TEST_F(NcclOnGpu, PackingKernelMatchesTheEmulator) {
  TJ_SEEDED_RNG(rng);
  for (DType dtype : kCollectiveDTypes)
    for (int64_t m : {1, 3, 8, 1000}) {
      SCOPED_TRACE(fmt::format("{} (5, 7, {})", name_of(dtype), m));
      const int64_t n = 5 * 7 * m;
      Host bits(dtype, static_cast<size_t>(n));
      Host random = random_full_range(DType::i32, static_cast<size_t>(n), rng);
      std::memcpy(bits.bytes.data(), random.bytes.data(), bits.bytes.size());
      std::vector<Host> results;
      for (Device* device : {&Device::cuda(0), &Device::emu()}) {
        Tensor in = to_device(*device, bits, {n});
        Tensor out = poisoned_on(*device, dtype, {n});
        swap_leading_axes(in.data(), out.data(), 5, 7, m, dtype, device->default_stream());
        results.push_back(download(out));
      }
      EXPECT_EQ(results[0].bytes, results[1].bytes);
    }
}

TEST_F(NcclOnGpu, StreamsAndSynchronize) {
  TJ_SEEDED_RNG(rng);
  std::vector<Communicator> comms = world_of_one();
  Device& gpu = Device::cuda(0);
  Stream stream = gpu.create_stream();
  Host h = random_host(DType::f32, 64, rng, -1, 1);
  Tensor x = to_device(gpu, h, {8, 8});
  Tensor y = all_reduce(x, comms[0], reduce_options(ReduceOp::sum), &stream);
  comms[0].synchronize(stream);
  EXPECT_EQ(download(y).bytes, h.bytes);
  comms[0].check_async_error();
  EXPECT_THAT(error_of([&] { all_reduce(x, comms[0], {}, &Device::emu().default_stream()); }),
              HasSubstr("all_reduce: the stream is on tilejit emulator"));
}

void expect_a_working_world_of_one(const Communicator& comm) {
  TJ_SEEDED_RNG(rng);
  EXPECT_EQ(comm.size(), 1);
  EXPECT_EQ(comm.rank(), 0);
  check_all_reduce({comm}, {{33}, DType::f32, reduce_options(ReduceOp::sum), Mode::allocate}, rng);
}

TEST_F(NcclOnGpu, JoinFromAFileATcpRendezvousAndTheEnvironment) {
  TempDirectory dir;
  expect_a_working_world_of_one(Communicator::join_by_file(dir / "unique-id", 0, 1, Device::cuda(0)));
  expect_a_working_world_of_one(Communicator::join_by_tcp("127.0.0.1", free_port(), 0, 1, Device::cuda(0)));
  std::string port = std::to_string(free_port());
  ScopedEnv rank("RANK", "0"), world("WORLD_SIZE", "1"), local_rank("LOCAL_RANK", "0"),
      address("MASTER_ADDR", "127.0.0.1"), master_port("MASTER_PORT", port.c_str());
  expect_a_working_world_of_one(Communicator::join_from_environment());
}

TEST_F(NcclOnGpu, SplitAndGroups) {
  std::vector<Communicator> comms = world_of_one();
  std::optional<Communicator> part = comms[0].split(5, 0);
  ASSERT_TRUE(part.has_value());
  expect_a_working_world_of_one(*part);
  EXPECT_FALSE(comms[0].split(-1, 0).has_value());
}

TEST_F(NcclOnGpu, AbortAndDestroy) {
  std::vector<Communicator> comms = world_of_one();
  Tensor x = Tensor::empty(Device::cuda(0), DType::f32, {4});
  comms[0].abort("stopped by the test");
  EXPECT_THAT(error_of([&] { all_reduce(x, comms[0]); }), HasSubstr("aborted (stopped by the test)"));
  std::vector<Communicator> fresh = world_of_one();
  all_reduce(x, fresh[0]);
  fresh[0].destroy();
  EXPECT_THAT(error_of([&] { all_reduce(x, fresh[0]); }),
              HasSubstr("all_reduce: NCCL rank 0 of 1 on cuda:0 was destroyed"));
}

// Rank 1 of 2 never joins: rank 0's join is a timeout error, not a hang.
TEST_F(NcclOnGpu, AMissingRankIsATimeout) {
  auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(error_of([] {
                Communicator::join(UniqueId::create(), 0, 2, Device::cuda(0), timeout_of(std::chrono::seconds(3)));
              }),
              HasSubstr("did not finish within 3000 ms"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
}

TEST_F(NcclOnGpu, OneRankPerGpu) {
  EXPECT_THAT(error_of([] {
                Communicator::local({&Device::cuda(0), &Device::cuda(0)});
              }),
              HasSubstr("ranks 0 and 1 are both on"));
  EXPECT_THAT(error_of([] {
                Communicator::local({&Device::cuda(0), &Device::emu()});
              }),
              HasSubstr("1 of the 2 devices are the emulator"));
}

}  // namespace
}  // namespace tjcoll
