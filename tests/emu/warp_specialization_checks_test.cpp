// The emulator's operations for warp-specialized kernels on hand-written kernels (LLVM IR):
// named barriers that count part of the CTA (bar.sync id, count) and arrivals that do not
// wait there (bar.arrive), plain mbarrier arrivals that complete a phase another thread waits
// for, and setmaxnreg; each rule it enforces planted broken on purpose: counts that differ at
// one barrier, a barrier its count of threads never reaches, a register count setmaxnreg does
// not take; and the race check's ordering by named barriers among some warps and by mbarrier
// phases.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/emu/emu_device.h"
#include "runtime/jit.h"
#include "runtime/tensor.h"
#include "tests/error_message.h"
#include "tests/scoped_env.h"

namespace tilejit {
namespace {

using ::testing::HasSubstr;
using testing_util::error_of;

constexpr int kThreads = 128;

const char* kDeclarations = R"(
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare void @llvm.nvvm.barrier.cta.sync.aligned.count(i32, i32)
declare void @llvm.nvvm.barrier.cta.arrive.aligned.count(i32, i32)
declare void @llvm.nvvm.setmaxnreg.inc.sync.aligned.u32(i32 immarg)
declare void @llvm.nvvm.bar.warp.sync(i32)
declare void @llvm.nvvm.mbarrier.init.shared(ptr addrspace(3), i32)
declare i64 @llvm.nvvm.mbarrier.arrive.shared(ptr addrspace(3))
declare i1 @llvm.nvvm.mbarrier.try.wait.parity.scope.cta.space.cta(ptr addrspace(3), i32)
@smem = external addrspace(3) global [0 x i8], align 1024
)";

// Runs `body` (IR after %t, the thread id, %cta, the CTA's index, and %word, the i32 at
// out[t], are defined; it ends in `ret void`) on `ctas` CTAs of `threads` threads; returns out.
std::vector<int32_t> run(const std::string& body, int threads = kThreads, uint32_t ctas = 1) {
  std::string ir = std::string(kDeclarations) + R"(
define ptx_kernel void @checked(ptr addrspace(1) %out) {
entry:
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %cta = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %word = getelementptr i32, ptr addrspace(1) %out, i32 %t
)" + body + "}\n";
  Device& emu = Device::emu();
  Tensor out = Tensor::empty(emu, DType::i32, {threads});
  out.fill_bytes(0xff);
  auto loaded = emu_load_llvm_ir(ir, "checked", threads, 512);
  void* out_ptr = out.data();
  void* args[] = {&out_ptr};
  emu.launch(*loaded, LaunchDims{{ctas, 1, 1}, {}}, args, emu.default_stream());
  emu.default_stream().synchronize();
  return out.to_host<int32_t>();
}

// Warps 0 and 1 meet at barrier 1 (64 threads), with `count` threads named by warp 1; warps
// 2 and 3 leave at once. Thread 0 writes shared memory before the barrier, every thread of
// the first two warps reads it after.
std::string two_warps_at_barrier_1(int count_of_warp_1, bool warp_1_leaves = false) {
  return R"(
  %warp = lshr i32 %t, 5
  %stays = icmp ult i32 %warp, 2
  br i1 %stays, label %work, label %leave
work:
  %first = icmp eq i32 %t, 0
  br i1 %first, label %write, label %meet
write:
  store i32 42, ptr addrspace(3) @smem
  br label %meet
meet:
  %warp_1 = icmp eq i32 %warp, 1
  br i1 %warp_1, label %second, label %sync_64
second:
  )" + std::string(warp_1_leaves ? "ret void" : "br label %sync_other") + R"(
sync_other:
  call void @llvm.nvvm.barrier.cta.sync.aligned.count(i32 1, i32 )" +
         std::to_string(count_of_warp_1) + R"()
  br label %read
sync_64:
  call void @llvm.nvvm.barrier.cta.sync.aligned.count(i32 1, i32 64)
  br label %read
read:
  %v = load i32, ptr addrspace(3) @smem
  store i32 %v, ptr addrspace(1) %word
  ret void
leave:
  ret void
)";
}

TEST(WarpSpecializationChecks, ANamedBarrierWaitsForTheThreadsItCounts) {
  std::vector<int32_t> out = run(two_warps_at_barrier_1(64));
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(out[static_cast<size_t>(t)], t < 64 ? 42 : -1) << "thread " << t;
}

TEST(WarpSpecializationChecks, ThreadsAtOneBarrierMustNameOneCount) {
  EXPECT_THAT(error_of([] { run(two_warps_at_barrier_1(96)); }),
              HasSubstr("bar.sync 1, 96: 32 threads already arrived there for a count of 64"));
}

TEST(WarpSpecializationChecks, ABarrierItsCountNeverReachesIsReported) {
  EXPECT_THAT(error_of([] { run(two_warps_at_barrier_1(64, /*warp_1_leaves=*/true)); }),
              HasSubstr("barrier 1 not reached by the 64 threads it counts: 32 threads (0, 1, 2, 3, 4, 5, 6, 7, ...) "
                        "wait at the barrier, 96 threads (32, 33, 34, 35, 36, 37, 38, 39, ...) exited"));
}

TEST(WarpSpecializationChecks, ABarrierCountIsWholeWarpsOfTheCta) {
  EXPECT_THAT(error_of([] { run("  call void @llvm.nvvm.barrier.cta.sync.aligned.count(i32 1, i32 48)\n  ret void\n"); }),
              HasSubstr("bar.sync 1, 48: the count must be a multiple of 32 in [32, 128]"));
  EXPECT_THAT(error_of([] { run("  call void @llvm.nvvm.barrier.cta.sync.aligned.count(i32 16, i32 128)\n  ret void\n"); }),
              HasSubstr("bar.sync 16: barriers are numbered 0 to 15"));
}

// bar.arrive: each thread of warp 1 writes its id to a halfword of shared memory and arrives
// at barrier 2 (64 threads) without waiting; thread t of warp 0 waits there and reads halfword
// t, written by thread t + 32. Warp 1 stores 5 after its arrival: alone (warp 0 leaving at once), it still
// goes on.
std::string warp_1_arrives_at_barrier_2(bool warp_0_waits) {
  return R"(
  %warp = lshr i32 %t, 5
  switch i32 %warp, label %leave [ i32 0, label %first_warp
                                   i32 1, label %signal ]
signal:
  %slot = sub i32 %t, 32
  %mine = getelementptr i16, ptr addrspace(3) @smem, i32 %slot
  %id = trunc i32 %t to i16
  store i16 %id, ptr addrspace(3) %mine
  call void @llvm.nvvm.barrier.cta.arrive.aligned.count(i32 2, i32 64)
  store i32 5, ptr addrspace(1) %word
  ret void
first_warp:
  )" + std::string(warp_0_waits ? "br label %wait" : "ret void") + R"(
wait:
  call void @llvm.nvvm.barrier.cta.sync.aligned.count(i32 2, i32 64)
  %theirs = getelementptr i16, ptr addrspace(3) @smem, i32 %t
  %half = load i16, ptr addrspace(3) %theirs
  %v = zext i16 %half to i32
  store i32 %v, ptr addrspace(1) %word
  ret void
leave:
  ret void
)";
}

TEST(WarpSpecializationChecks, AnArrivalCountsTowardsABarrierWithoutWaiting) {
  for (bool warp_0_waits : {true, false}) {
    std::vector<int32_t> out = run(warp_1_arrives_at_barrier_2(warp_0_waits));
    for (int t = 0; t < kThreads; ++t)
      EXPECT_EQ(out[static_cast<size_t>(t)], t < 32 ? (warp_0_waits ? t + 32 : -1) : t < 64 ? 5 : -1)
          << "thread " << t << (warp_0_waits ? "" : ", warp 0 gone");
  }
  const std::string uneven = "  call void @llvm.nvvm.barrier.cta.arrive.aligned.count(i32 2, i32 48)\n  ret void\n";
  EXPECT_THAT(error_of([&] { run(uneven); }),
              HasSubstr("bar.arrive 2, 48: the count must be a multiple of 32 in [32, 128]"));
}

// Thread 0 initializes an mbarrier for two arrivals; threads 1 and 2 arrive, thread 3 waits
// for the phase and records it; the others leave.
TEST(WarpSpecializationChecks, PlainArrivalsCompleteAPhase) {
  std::vector<int32_t> out = run(R"(
  %first = icmp eq i32 %t, 0
  br i1 %first, label %init, label %after_init
init:
  call void @llvm.nvvm.mbarrier.init.shared(ptr addrspace(3) @smem, i32 2)
  br label %after_init
after_init:
  call void @llvm.nvvm.barrier.cta.sync.aligned.count(i32 0, i32 128)
  %arrives = icmp ule i32 %t, 2
  %not_first = icmp ne i32 %t, 0
  %arriving = and i1 %arrives, %not_first
  br i1 %arriving, label %arrive, label %maybe_wait
arrive:
  %state = call i64 @llvm.nvvm.mbarrier.arrive.shared(ptr addrspace(3) @smem)
  ret void
maybe_wait:
  %waits = icmp eq i32 %t, 3
  br i1 %waits, label %wait, label %leave
wait:
  %done = call i1 @llvm.nvvm.mbarrier.try.wait.parity.scope.cta.space.cta(ptr addrspace(3) @smem, i32 0)
  br i1 %done, label %record, label %wait
record:
  store i32 7, ptr addrspace(1) %word
  br label %leave
leave:
  ret void
)");
  EXPECT_EQ(out[3], 7);
}

// The race check orders accesses by the barriers their threads took part in: a barrier among
// other warps orders nothing between these, one barrier after another orders transitively,
// and an mbarrier phase orders what its arrivals wrote before them before what its waiter
// reads after the wait.
class RaceCheckedRun : public testing::Test {
  testing_util::ScopedEnv on_{"TILEJIT_EMU_RACECHECK", "1"};
};

// Thread 0 writes shared word 0; warps `first` and `first + 1` meet at barrier 1, then warps
// `first + 1` and `first + 2` at barrier 2 (when `second`); thread 96 (warp 3) reads the word.
std::string write_then_barriers(int first, bool second) {
  auto warp_is = [](int w, const std::string& name) {
    return "  %" + name + " = icmp eq i32 %warp, " + std::to_string(w) + "\n";
  };
  return R"(
  %warp = lshr i32 %t, 5
  %writer = icmp eq i32 %t, 0
  br i1 %writer, label %write, label %first_barrier
write:
  store i32 42, ptr addrspace(3) @smem
  br label %first_barrier
first_barrier:
)" + warp_is(first, "a") + warp_is(first + 1, "b") + warp_is(first + 2, "c") + R"(
  %at_1 = or i1 %a, %b
  br i1 %at_1, label %sync_1, label %second_barrier
sync_1:
  call void @llvm.nvvm.barrier.cta.sync.aligned.count(i32 1, i32 64)
  br label %second_barrier
second_barrier:
  %at_2 = or i1 %b, %c
  %syncs_2 = and i1 %at_2, )" + (second ? "true" : "false") + R"(
  br i1 %syncs_2, label %sync_2, label %read
sync_2:
  call void @llvm.nvvm.barrier.cta.sync.aligned.count(i32 2, i32 64)
  br label %read
read:
  %reader = icmp eq i32 %t, 96
  br i1 %reader, label %load, label %leave
load:
  %v = load i32, ptr addrspace(3) @smem
  store i32 %v, ptr addrspace(1) %word
  br label %leave
leave:
  ret void
)";
}

TEST_F(RaceCheckedRun, ABarrierAmongOtherWarpsOrdersNothing) {
  // Warps 1 and 2 meet; neither wrote nor reads: thread 96's read races with thread 0's write.
  EXPECT_THAT(error_of([] { run(write_then_barriers(1, false)); }),
              HasSubstr("shared memory race at offset 0: read here, written by thread 0 with no barrier ordering "
                        "the two"));
  // Warps 0 and 1 meet, then 1 and 2: still not warp 3.
  EXPECT_THAT(error_of([] { run(write_then_barriers(0, true)); }), HasSubstr("shared memory race at offset 0"));
}

TEST_F(RaceCheckedRun, BarriersOrderTransitively) {
  // Warps 1 and 2 meet, then 2 and 3: a chain to warp 3, but warp 0, the writer, is not on it.
  EXPECT_THAT(error_of([] { run(write_then_barriers(1, true)); }), HasSubstr("shared memory race at offset 0"));
  // Warps 0 and 1 meet, then 1 and 3: the write reaches warp 3 through warp 1.
  std::vector<int32_t> out = run(R"(
  %warp = lshr i32 %t, 5
  %writer = icmp eq i32 %t, 0
  br i1 %writer, label %write, label %after
write:
  store i32 42, ptr addrspace(3) @smem
  br label %after
after:
  switch i32 %warp, label %leave [ i32 0, label %first
                                   i32 1, label %middle
                                   i32 3, label %last ]
first:
  call void @llvm.nvvm.barrier.cta.sync.aligned.count(i32 1, i32 64)
  br label %leave
middle:
  call void @llvm.nvvm.barrier.cta.sync.aligned.count(i32 1, i32 64)
  call void @llvm.nvvm.barrier.cta.sync.aligned.count(i32 2, i32 64)
  br label %leave
last:
  call void @llvm.nvvm.barrier.cta.sync.aligned.count(i32 2, i32 64)
  %v = load i32, ptr addrspace(3) @smem
  store i32 %v, ptr addrspace(1) %word
  br label %leave
leave:
  ret void
)");
  EXPECT_EQ(out[96], 42);
}

// Thread 0 sets up an mbarrier for two arrivals at offset 0; thread 32 writes word 4 and
// arrives; thread 64 arrives, then writes word 5 (when `late_write`); thread 96 waits for the
// phase and reads word 4 and, with `late_write`, word 5.
std::string arrivals_then_wait(bool late_write) {
  return R"(
  %first = icmp eq i32 %t, 0
  br i1 %first, label %init, label %after_init
init:
  call void @llvm.nvvm.mbarrier.init.shared(ptr addrspace(3) @smem, i32 2)
  br label %after_init
after_init:
  call void @llvm.nvvm.barrier.cta.sync.aligned.count(i32 0, i32 128)
  %word_4 = getelementptr i32, ptr addrspace(3) @smem, i32 4
  %word_5 = getelementptr i32, ptr addrspace(3) @smem, i32 5
  switch i32 %t, label %leave [ i32 32, label %early
                                i32 64, label %late
                                i32 96, label %wait ]
early:
  store i32 11, ptr addrspace(3) %word_4
  %s1 = call i64 @llvm.nvvm.mbarrier.arrive.shared(ptr addrspace(3) @smem)
  br label %leave
late:
  %s2 = call i64 @llvm.nvvm.mbarrier.arrive.shared(ptr addrspace(3) @smem)
  store i32 12, ptr addrspace(3) %word_5
  br label %leave
wait:
  %done = call i1 @llvm.nvvm.mbarrier.try.wait.parity.scope.cta.space.cta(ptr addrspace(3) @smem, i32 0)
  br i1 %done, label %read, label %wait
read:
  %v = load i32, ptr addrspace(3) %word_4
)" + std::string(late_write ? "  %late_v = load i32, ptr addrspace(3) %word_5\n  %sum = add i32 %v, %late_v\n"
                            : "  %sum = add i32 %v, 0\n") + R"(
  store i32 %sum, ptr addrspace(1) %word
  br label %leave
leave:
  ret void
)";
}

TEST_F(RaceCheckedRun, AnMbarrierPhaseOrdersWhatItsArrivalsDidBefore) {
  EXPECT_EQ(run(arrivals_then_wait(false))[96], 11);
  // The waiter reads before thread 64 goes on from its arrival: the late write finds its read.
  EXPECT_THAT(error_of([] { run(arrivals_then_wait(true)); }),
              HasSubstr("thread (64, 0, 0): shared memory race at offset 20: written here, read by thread 96"));
}

// bar.arrive releases without acquiring: thread 63's arrival completes barrier 2, where warp 0
// waits after thread 0's write, but what warp 0 did is not ordered before thread 63's read.
TEST_F(RaceCheckedRun, AnArrivalDoesNotAcquire) {
  EXPECT_THAT(error_of([] {
                run(R"(
  %warp = lshr i32 %t, 5
  switch i32 %warp, label %leave [ i32 0, label %writer
                                   i32 1, label %arriver ]
writer:
  %first = icmp eq i32 %t, 0
  br i1 %first, label %write, label %wait
write:
  store i32 42, ptr addrspace(3) @smem
  br label %wait
wait:
  call void @llvm.nvvm.barrier.cta.sync.aligned.count(i32 2, i32 64)
  br label %leave
arriver:
  call void @llvm.nvvm.barrier.cta.arrive.aligned.count(i32 2, i32 64)
  %last = icmp eq i32 %t, 63
  br i1 %last, label %read, label %leave
read:
  %v = load i32, ptr addrspace(3) @smem
  store i32 %v, ptr addrspace(1) %word
  br label %leave
leave:
  ret void
)");
              }),
              HasSubstr("thread (63, 0, 0): shared memory race at offset 0: read here, written by thread 0"));
}

// The shadow outlives CTAs and launches: what an earlier CTA (or a launch with more warps)
// wrote is no race with a later CTA's reads.
TEST_F(RaceCheckedRun, EarlierCtasAccessesAreNoRaces) {
  std::vector<int32_t> out = run(R"(
  %odd = and i32 %cta, 1
  %reads = icmp eq i32 %odd, 1
  %next = add i32 %t, 1
  %neighbour = and i32 %next, 127
  %mine = getelementptr i32, ptr addrspace(3) @smem, i32 %t
  %theirs = getelementptr i32, ptr addrspace(3) @smem, i32 %neighbour
  br i1 %reads, label %read, label %write
write:
  store i32 %t, ptr addrspace(3) %mine
  ret void
read:
  %v = load i32, ptr addrspace(3) %theirs
  store i32 1, ptr addrspace(1) %word
  ret void
)", kThreads, 16);
  EXPECT_EQ(out[0], 1);
  out = run(R"(
  %high = add i32 %t, 64
  %theirs = getelementptr i32, ptr addrspace(3) @smem, i32 %high
  %v = load i32, ptr addrspace(3) %theirs
  store i32 2, ptr addrspace(1) %word
  ret void
)", 64, 4);
  EXPECT_EQ(out[63], 2);
}

// Lane 0 writes a word that lane 1 reads: bar.warp.sync between orders them; without it they race.
std::string lane_hand_off(bool warp_sync) {
  return R"(
  %lane_0 = icmp eq i32 %t, 0
  br i1 %lane_0, label %write, label %meet
write:
  store i32 42, ptr addrspace(3) @smem
  br label %meet
meet:
)" + std::string(warp_sync ? "  call void @llvm.nvvm.bar.warp.sync(i32 -1)\n" : "") + R"(
  %lane_1 = icmp eq i32 %t, 1
  br i1 %lane_1, label %read, label %leave
read:
  %v = load i32, ptr addrspace(3) @smem
  store i32 %v, ptr addrspace(1) %word
  br label %leave
leave:
  ret void
)";
}

TEST_F(RaceCheckedRun, AWarpBarrierOrdersItsLanes) {
  EXPECT_EQ(run(lane_hand_off(true), 32)[1], 42);
  EXPECT_THAT(error_of([] { run(lane_hand_off(false), 32); }),
              HasSubstr("thread (1, 0, 0): shared memory race at offset 0: read here, written by thread 0"));
}

TEST(WarpSpecializationChecks, SetmaxnregTakesMultiplesOf8From24To256) {
  std::vector<int32_t> out = run(R"(
  call void @llvm.nvvm.setmaxnreg.inc.sync.aligned.u32(i32 232)
  store i32 1, ptr addrspace(1) %word
  ret void
)");
  EXPECT_EQ(out[127], 1);
  for (int count : {16, 260, 100})
    EXPECT_THAT(error_of([&] {
                  run("  call void @llvm.nvvm.setmaxnreg.inc.sync.aligned.u32(i32 " + std::to_string(count) +
                      ")\n  ret void\n");
                }),
                HasSubstr("setmaxnreg " + std::to_string(count) +
                          ": the register count must be a multiple of 8 in [24, 256]"));
}

}  // namespace
}  // namespace tilejit
