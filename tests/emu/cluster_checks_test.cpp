// The emulator's thread-block clusters on hand-written kernels (LLVM IR): the CTAs of a
// cluster run together; the cluster special registers; barrier.cluster; distributed shared
// memory through mapa; mbarrier arrivals on a peer's mbarrier; TMA multicast into every CTA
// of a mask. Each rule it enforces is planted broken on purpose: a thread held away from the
// cluster barrier, a peer read after the peer exited, more arrivals than a phase expects, a
// multicast mask beyond the cluster, clusters that do not tile the grid.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/emu/emu_device.h"
#include "runtime/jit.h"
#include "runtime/tensor.h"
#include "runtime/tensor_descriptor.h"
#include "tests/error_message.h"

namespace tilejit {
namespace {

using ::testing::HasSubstr;
using testing_util::error_of;

constexpr int kThreads = 64;  // per CTA
constexpr uint32_t kCtas = 4;  // two clusters of two

const char* kDeclarations = R"(
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.y()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.z()
declare i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.nctaid.y()
declare i32 @llvm.nvvm.read.ptx.sreg.cluster.ctarank()
declare i32 @llvm.nvvm.read.ptx.sreg.cluster.nctarank()
declare i32 @llvm.nvvm.read.ptx.sreg.cluster.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.cluster.ctaid.y()
declare i32 @llvm.nvvm.read.ptx.sreg.cluster.ctaid.z()
declare i32 @llvm.nvvm.read.ptx.sreg.clusterid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.clusterid.y()
declare i32 @llvm.nvvm.read.ptx.sreg.clusterid.z()
declare i32 @llvm.nvvm.read.ptx.sreg.nclusterid.x()
declare void @llvm.nvvm.barrier.cta.sync.count(i32, i32)
declare void @llvm.nvvm.barrier.cluster.arrive()
declare void @llvm.nvvm.barrier.cluster.arrive.relaxed()
declare void @llvm.nvvm.barrier.cluster.wait()
declare void @llvm.nvvm.fence.mbarrier_init.release.cluster()
declare ptr addrspace(7) @llvm.nvvm.mapa.shared.cluster(ptr addrspace(3), i32)
declare void @llvm.nvvm.mbarrier.init.shared(ptr addrspace(3), i32)
declare void @llvm.nvvm.mbarrier.arrive.scope.cluster.space.cluster(ptr addrspace(7), i32)
declare i64 @llvm.nvvm.mbarrier.arrive.expect.tx.scope.cta.space.cta(ptr addrspace(3), i32)
declare i1 @llvm.nvvm.mbarrier.try.wait.parity.scope.cta.space.cta(ptr addrspace(3), i32)
declare void @llvm.nvvm.cp.async.bulk.tensor.g2s.tile.2d(ptr addrspace(7), ptr addrspace(3), ptr, i32, i32, i16, i64, i1, i1, i32)
@smem = external addrspace(3) global [0 x i8], align 1024
)";

// Runs `body` (IR after %t, the thread id, %cta, the CTA's linear id (x fastest), and %word,
// the i32 at out[cta * kThreads + t], are defined; it ends in `ret void`) on a `grid` of CTAs
// of kThreads threads in clusters of `cluster`, with `map` as the kernel's second parameter
// (a tensor map). Returns out.
std::vector<int32_t> run(const std::string& body, Dim3 cluster = {2, 1, 1}, const TensorMap* map = nullptr,
                         Dim3 grid = {kCtas, 1, 1}) {
  std::string ir = std::string(kDeclarations) + R"(
define ptx_kernel void @clustered(ptr addrspace(1) %out, ptr byval([128 x i8]) align 64 %map) {
entry:
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %cta_x = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %cta_y = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.y()
  %cta_z = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.z()
  %grid_x = call i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()
  %grid_y = call i32 @llvm.nvvm.read.ptx.sreg.nctaid.y()
  %plane = mul i32 %grid_x, %grid_y
  %z_part = mul i32 %cta_z, %plane
  %y_part = mul i32 %cta_y, %grid_x
  %yz = add i32 %z_part, %y_part
  %cta = add i32 %yz, %cta_x
  %cta_first = mul i32 %cta, )" + std::to_string(kThreads) + R"(
  %index = add i32 %cta_first, %t
  %word = getelementptr i32, ptr addrspace(1) %out, i32 %index
)" + body + "}\n";
  Device& emu = Device::emu();
  Tensor out = Tensor::empty(emu, DType::i32, {int64_t{grid.x} * grid.y * grid.z * kThreads});
  out.fill_bytes(0xff);
  auto loaded = emu_load_llvm_ir(ir, "clustered", kThreads, 4096);
  void* out_ptr = out.data();
  TensorMap no_map{};
  void* args[] = {&out_ptr, const_cast<TensorMap*>(map ? map : &no_map)};
  emu.launch(*loaded, LaunchDims{grid, cluster}, args, emu.default_stream());
  emu.default_stream().synchronize();
  return out.to_host<int32_t>();
}

// Every thread of the cluster arrives, then waits: after it, the cluster's CTAs have done
// all they did before it.
const char* kClusterSync = R"(
  call void @llvm.nvvm.barrier.cluster.arrive()
  call void @llvm.nvvm.barrier.cluster.wait()
)";

TEST(ClusterChecks, SpecialRegistersNameTheClusterAndTheRankInIt) {
  std::vector<int32_t> out = run(R"(
  %rank = call i32 @llvm.nvvm.read.ptx.sreg.cluster.ctarank()
  %ranks = call i32 @llvm.nvvm.read.ptx.sreg.cluster.nctarank()
  %x = call i32 @llvm.nvvm.read.ptx.sreg.cluster.ctaid.x()
  %id = call i32 @llvm.nvvm.read.ptx.sreg.clusterid.x()
  %ids = call i32 @llvm.nvvm.read.ptx.sreg.nclusterid.x()
  %a = shl i32 %ranks, 4
  %b = shl i32 %x, 8
  %c = shl i32 %id, 12
  %d = shl i32 %ids, 16
  %ab = or i32 %a, %b
  %cd = or i32 %c, %d
  %abcd = or i32 %ab, %cd
  %v = or i32 %abcd, %rank
  store i32 %v, ptr addrspace(1) %word
  ret void
)");
  for (uint32_t cta = 0; cta < kCtas; ++cta) {
    int32_t rank = static_cast<int32_t>(cta % 2), want = rank | 2 << 4 | rank << 8 | static_cast<int32_t>(cta / 2) << 12 | 2 << 16;
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(out[cta * kThreads + static_cast<size_t>(t)], want) << "CTA " << cta;
  }
}

// In clusters of (1, 2, 2) on a (2, 4, 2) grid, each CTA writes its rank, its place in its
// cluster and its cluster's: rank = x + y nx + z nx ny within the cluster, as PTX numbers it.
TEST(ClusterChecks, RanksFollowTheClustersShapeInEveryDimension) {
  std::vector<int32_t> out = run(R"(
  %rank = call i32 @llvm.nvvm.read.ptx.sreg.cluster.ctarank()
  %x = call i32 @llvm.nvvm.read.ptx.sreg.cluster.ctaid.x()
  %y = call i32 @llvm.nvvm.read.ptx.sreg.cluster.ctaid.y()
  %z = call i32 @llvm.nvvm.read.ptx.sreg.cluster.ctaid.z()
  %cx = call i32 @llvm.nvvm.read.ptx.sreg.clusterid.x()
  %cy = call i32 @llvm.nvvm.read.ptx.sreg.clusterid.y()
  %cz = call i32 @llvm.nvvm.read.ptx.sreg.clusterid.z()
  %x4 = shl i32 %x, 4
  %y8 = shl i32 %y, 8
  %z12 = shl i32 %z, 12
  %cx16 = shl i32 %cx, 16
  %cy20 = shl i32 %cy, 20
  %cz24 = shl i32 %cz, 24
  %a = or i32 %rank, %x4
  %b = or i32 %a, %y8
  %c = or i32 %b, %z12
  %d = or i32 %c, %cx16
  %e = or i32 %d, %cy20
  %v = or i32 %e, %cz24
  store i32 %v, ptr addrspace(1) %word
  ret void
)",
                                 {1, 2, 2}, nullptr, {2, 4, 2});
  for (int z = 0; z < 2; ++z)
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 2; ++x) {
        int rank = (y % 2) + (z % 2) * 2;
        int32_t want = rank | (y % 2) << 8 | (z % 2) << 12 | x << 16 | (y / 2) << 20 | (z / 2) << 24;
        size_t cta = static_cast<size_t>(x + 2 * y + 8 * z);
        EXPECT_EQ(out[cta * kThreads], want) << "CTA (" << x << ", " << y << ", " << z << ")";
      }
}

// Each thread writes its word of its CTA's shared memory, the cluster synchronizes, and each
// thread reads the same word of the other CTA's through mapa; the cluster synchronizes again
// before anyone exits.
const char* kExchangeWithPeer = R"(
  %rank = call i32 @llvm.nvvm.read.ptx.sreg.cluster.ctarank()
  %mine = getelementptr i32, ptr addrspace(3) @smem, i32 %t
  %base = mul i32 %rank, 1000
  %value = add i32 %base, %t
  store i32 %value, ptr addrspace(3) %mine
  call void @llvm.nvvm.barrier.cluster.arrive()
  call void @llvm.nvvm.barrier.cluster.wait()
  %peer = xor i32 %rank, 1
  %theirs = call ptr addrspace(7) @llvm.nvvm.mapa.shared.cluster(ptr addrspace(3) %mine, i32 %peer)
  %v = load i32, ptr addrspace(7) %theirs
  store i32 %v, ptr addrspace(1) %word
  call void @llvm.nvvm.barrier.cluster.arrive()
  call void @llvm.nvvm.barrier.cluster.wait()
  ret void
)";

TEST(ClusterChecks, ACtaReadsItsPeersSharedMemoryAfterTheClusterBarrier) {
  std::vector<int32_t> out = run(kExchangeWithPeer);
  for (uint32_t cta = 0; cta < kCtas; ++cta)
    for (int t = 0; t < kThreads; ++t)
      EXPECT_EQ(out[cta * kThreads + static_cast<size_t>(t)], static_cast<int32_t>((cta % 2 ^ 1) * 1000) + t)
          << "CTA " << cta << " thread " << t;
}

// Rank 1 arrives at the cluster barrier and exits without waiting for the others; rank 0
// reads its shared memory after the barrier.
TEST(ClusterChecks, APeerThatExitedIsReportedNotRead) {
  EXPECT_THAT(error_of([] {
                run(R"(
  %rank = call i32 @llvm.nvvm.read.ptx.sreg.cluster.ctarank()
  call void @llvm.nvvm.barrier.cluster.arrive()
  %is_first = icmp eq i32 %rank, 0
  br i1 %is_first, label %read, label %leave
read:
  call void @llvm.nvvm.barrier.cluster.wait()
  %theirs = call ptr addrspace(7) @llvm.nvvm.mapa.shared.cluster(ptr addrspace(3) @smem, i32 1)
  %v = load i32, ptr addrspace(7) %theirs
  store i32 %v, ptr addrspace(1) %word
  ret void
leave:
  ret void
)");
              }),
              HasSubstr("shared::cluster load at offset 0 of cluster rank 1, which has exited"));
}

// Thread 63 of each CTA exits at once; the others meet at the cluster barrier twice, then
// write 1: the barrier waits for the threads that have not exited only.
TEST(ClusterChecks, AClusterBarrierWaitsForTheThreadsThatHaveNotExited) {
  std::vector<int32_t> out = run(R"(
  %last = icmp eq i32 %t, 63
  br i1 %last, label %leave, label %sync
sync:
)" + std::string(kClusterSync) + kClusterSync + R"(
  store i32 1, ptr addrspace(1) %word
  ret void
leave:
  ret void
)");
  for (uint32_t cta = 0; cta < kCtas; ++cta)
    for (int t = 0; t < kThreads; ++t)
      EXPECT_EQ(out[cta * kThreads + static_cast<size_t>(t)], t == 63 ? -1 : 1) << "CTA " << cta << " thread " << t;
}

// Thread 63 waits at a named barrier no other thread comes to; the others wait for it at the
// cluster barrier.
TEST(ClusterChecks, AThreadHeldElsewhereKeepsTheClusterBarrierWaiting) {
  EXPECT_THAT(error_of([] {
                run(R"(
  %last = icmp eq i32 %t, 63
  br i1 %last, label %held, label %sync
held:
  call void @llvm.nvvm.barrier.cta.sync.count(i32 1, i32 32)
  br label %sync
sync:
)" + std::string(kClusterSync) + R"(
  ret void
)");
              }),
              HasSubstr("block (0, 0, 0): barrier 1 not reached by the 32 threads it counts: 1 thread (63) wait at "
                        "the barrier, 63 threads (0, 1, 2, 3, 4, 5, 6, 7, ...) wait at barrier.cluster"));
}

TEST(ClusterChecks, AWaitNeedsAnArrivalBeforeIt) {
  EXPECT_THAT(error_of([] {
                run(R"(
  call void @llvm.nvvm.barrier.cluster.wait()
  ret void
)");
              }),
              HasSubstr("barrier.cluster.wait without a barrier.cluster.arrive"));
}

// Rank 0's thread 0 initializes an mbarrier for `arrivals` arrivals; after the cluster
// barrier every thread of rank 1 arrives on it remotely `count` times at once, and rank 0's
// threads wait for the phase, then write 7.
std::string remote_arrivals(int arrivals, int count = 1) {
  return std::string(R"(
  %rank = call i32 @llvm.nvvm.read.ptx.sreg.cluster.ctarank()
  %init = icmp eq i32 %t, 0
  br i1 %init, label %do_init, label %synced
do_init:
  call void @llvm.nvvm.mbarrier.init.shared(ptr addrspace(3) @smem, i32 )") + std::to_string(arrivals) + R"()
  call void @llvm.nvvm.fence.mbarrier_init.release.cluster()
  br label %synced
synced:
  call void @llvm.nvvm.barrier.cluster.arrive.relaxed()
  call void @llvm.nvvm.barrier.cluster.wait()
  %is_first = icmp eq i32 %rank, 0
  br i1 %is_first, label %wait, label %arrive
arrive:
  %remote = call ptr addrspace(7) @llvm.nvvm.mapa.shared.cluster(ptr addrspace(3) @smem, i32 0)
  call void @llvm.nvvm.mbarrier.arrive.scope.cluster.space.cluster(ptr addrspace(7) %remote, i32 )" +
         std::to_string(count) + R"()
  br label %done
wait:
  %ok = call i1 @llvm.nvvm.mbarrier.try.wait.parity.scope.cta.space.cta(ptr addrspace(3) @smem, i32 0)
  br i1 %ok, label %waited, label %wait
waited:
  store i32 7, ptr addrspace(1) %word
  br label %done
done:
)" + kClusterSync + R"(
  ret void
)";
}

TEST(ClusterChecks, ArrivalsOnAPeersMbarrierCompleteItsPhase) {
  std::vector<int32_t> out = run(remote_arrivals(kThreads));
  for (uint32_t cta = 0; cta < kCtas; ++cta)
    for (int t = 0; t < kThreads; ++t)
      EXPECT_EQ(out[cta * kThreads + static_cast<size_t>(t)], cta % 2 == 0 ? 7 : -1) << "CTA " << cta;
}

TEST(ClusterChecks, ArrivalsBeyondWhatThePhaseExpectsAreReported) {
  EXPECT_THAT(error_of([] { run(remote_arrivals(kThreads + 1, 2)); }),
              HasSubstr("mbarrier.arrive.shared::cluster with 2 arrivals: the phase expects 1 more"));
}

// Each CTA's thread 0 initializes its mbarrier (offset 0) and announces the box's 256 bytes
// on it; after the cluster barrier rank 0's thread 0 copies the 16 x 4 box of the i32 tensor
// (16-byte rows: no swizzle) to offset 1024 of the CTAs in `mask`; every thread waits for its
// CTA's phase and reads word t of the box.
std::string multicast(int mask, int column = 0) {
  return std::string(R"(
  %rank = call i32 @llvm.nvvm.read.ptx.sreg.cluster.ctarank()
  %box = getelementptr i8, ptr addrspace(3) @smem, i32 1024
  %first_thread = icmp eq i32 %t, 0
  br i1 %first_thread, label %init, label %synced
init:
  call void @llvm.nvvm.mbarrier.init.shared(ptr addrspace(3) @smem, i32 1)
  call void @llvm.nvvm.fence.mbarrier_init.release.cluster()
  %state = call i64 @llvm.nvvm.mbarrier.arrive.expect.tx.scope.cta.space.cta(ptr addrspace(3) @smem, i32 256)
  br label %synced
synced:
)") + kClusterSync + R"(
  %rank_0 = icmp eq i32 %rank, 0
  %issues = and i1 %first_thread, %rank_0
  br i1 %issues, label %copy, label %wait
copy:
  %to = addrspacecast ptr addrspace(3) %box to ptr addrspace(7)
  call void @llvm.nvvm.cp.async.bulk.tensor.g2s.tile.2d(ptr addrspace(7) %to, ptr addrspace(3) @smem, ptr %map, i32 )" +
         std::to_string(column) + ", i32 0, i16 " + std::to_string(mask) + R"(, i64 0, i1 true, i1 false, i32 0)
  br label %wait
wait:
  %ok = call i1 @llvm.nvvm.mbarrier.try.wait.parity.scope.cta.space.cta(ptr addrspace(3) @smem, i32 0)
  br i1 %ok, label %read, label %wait
read:
  %at = getelementptr i32, ptr addrspace(3) %box, i32 %t
  %v = load i32, ptr addrspace(3) %at
  store i32 %v, ptr addrspace(1) %word
)" + kClusterSync + R"(
  ret void
)";
}

// An i32 (16, 4) tensor holding 3 i + 1 at element i, and its tensor map in boxes of all of it.
class Multicast : public ::testing::Test {
 protected:
  Multicast() : tensor_(Tensor::empty(Device::emu(), DType::i32, {16, 4})) {
    std::vector<int32_t> values(16 * 4);
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int32_t>(i * 3 + 1);
    tensor_.copy_from_host(values.data(), values.size() * sizeof(int32_t));
    map_ = Device::emu().encode_tensor_map(TensorDescriptor::of(tensor_, {16, 4}), 1);
  }
  Tensor tensor_;
  TensorMap map_{};
};

TEST_F(Multicast, OneCopyLandsInEveryCtaOfTheMask) {
  std::vector<int32_t> out = run(multicast(0b11), {2, 1, 1}, &map_);
  for (uint32_t cta = 0; cta < kCtas; ++cta)
    for (int t = 0; t < kThreads; ++t)
      EXPECT_EQ(out[cta * kThreads + static_cast<size_t>(t)], t * 3 + 1) << "CTA " << cta << " thread " << t;
}

TEST_F(Multicast, ACtaLeftOutOfTheMaskWaitsForever) {
  EXPECT_THAT(error_of([&] { run(multicast(0b01), {2, 1, 1}, &map_); }),
              HasSubstr("kernel clustered, block (1, 0, 0): mbarrier phase never completes"));
}

TEST_F(Multicast, AMaskBeyondTheClusterIsReported) {
  EXPECT_THAT(error_of([&] { run(multicast(0b101), {2, 1, 1}, &map_); }),
              HasSubstr("multicast::cluster with CTA mask 0x5: the cluster has 2 CTAs"));
}

// The GPU faults on a copy whose column is not a whole number of 16 bytes (4 i32s).
TEST_F(Multicast, TheColumnIsAWholeNumberOf16Bytes) {
  EXPECT_THAT(error_of([&] { run(multicast(0b11, 3), {2, 1, 1}, &map_); }),
              HasSubstr("cp.async.bulk.tensor.2d at column 3: the innermost coordinate must be a multiple of 16 bytes "
                        "(of 4 4-byte elements)"));
}

TEST(ClusterChecks, ClustersMustTileTheGridWithinThePortableSize) {
  EXPECT_THAT(error_of([] { run("  ret void\n", {3, 1, 1}); }),
              HasSubstr("clusters of (3, 1, 1) CTAs do not tile the grid (4, 1, 1)"));
  EXPECT_THAT(error_of([] { run("  ret void\n", {16, 1, 1}, nullptr, {16, 1, 1}); }),
              HasSubstr("a cluster of (16, 1, 1) CTAs exceeds the portable 8 CTAs"));
  std::vector<int32_t> out = run(R"(
  %rank = call i32 @llvm.nvvm.read.ptx.sreg.cluster.ctarank()
  store i32 %rank, ptr addrspace(1) %word
)" + std::string(kClusterSync) + "  ret void\n", {8, 1, 1}, nullptr, {16, 1, 1});
  for (uint32_t cta = 0; cta < 16; ++cta) EXPECT_EQ(out[cta * kThreads], static_cast<int32_t>(cta % 8)) << "CTA " << cta;
}

}  // namespace
}  // namespace tilejit
