// The emulator's TMA stores (cp.async.bulk.tensor from shared to global memory, bulk
// async-groups) on a hand-written kernel (LLVM IR): 64 threads write a 16 x 4 i32 box to
// shared memory, thread 0 stores it to a tensor by TMA and waits until the copy has read the
// box; the tensor is written by the thread's exit. Each rule is planted broken on purpose: no
// fence.proxy.async between the threads' writes and the copy, no wait before the thread
// exits, the box overwritten before the copy read it. Overwritten after, it is free.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/emu/emu_device.h"
#include "runtime/tensor.h"
#include "runtime/tensor_descriptor.h"
#include "tests/error_message.h"

namespace tilejit {
namespace {

using ::testing::HasSubstr;
using testing_util::error_of;

constexpr int kThreads = 64;

struct Planted {
  bool fence = true;            // fence.proxy.async after the threads' writes
  bool wait = true;             // cp.async.bulk.wait_group.read 0 before thread 0 exits
  bool overwrite_early = false;  // thread 0 writes word 0 again between the copy and the wait
  bool overwrite_late = false;   // and after the wait
  int column = 0;                // the box's column in the tensor
};

// Thread t writes 5 t + 2 to word t of the box at shared offset 0; returns the tensor.
std::vector<int32_t> run(const Planted& p) {
  std::string ir = R"(
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare void @llvm.nvvm.barrier.cta.sync.count(i32, i32)
declare void @llvm.nvvm.fence.proxy.async.shared.cta()
declare void @llvm.nvvm.cp.async.bulk.tensor.s2g.tile.2d(ptr addrspace(3), ptr, i32, i32, i64, i1)
declare void @llvm.nvvm.cp.async.bulk.commit.group()
declare void @llvm.nvvm.cp.async.bulk.wait.group.read(i32)
@smem = external addrspace(3) global [0 x i8], align 1024

define ptx_kernel void @stores(ptr byval([128 x i8]) align 64 %map) {
entry:
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %five_t = mul i32 %t, 5
  %value = add i32 %five_t, 2
  %at = getelementptr i32, ptr addrspace(3) @smem, i32 %t
  store i32 %value, ptr addrspace(3) %at
)" + std::string(p.fence ? "  call void @llvm.nvvm.fence.proxy.async.shared.cta()\n" : "") +
                   R"(  call void @llvm.nvvm.barrier.cta.sync.count(i32 0, i32 64)
  %first = icmp eq i32 %t, 0
  br i1 %first, label %copy, label %done
copy:
  call void @llvm.nvvm.cp.async.bulk.tensor.s2g.tile.2d(ptr addrspace(3) @smem, ptr %map, i32 )" +
                   std::to_string(p.column) + R"(, i32 0, i64 0, i1 false)
  call void @llvm.nvvm.cp.async.bulk.commit.group()
)" + std::string(p.overwrite_early ? "  store i32 -1, ptr addrspace(3) @smem\n" : "") +
                   std::string(p.wait ? "  call void @llvm.nvvm.cp.async.bulk.wait.group.read(i32 0)\n" : "") +
                   std::string(p.overwrite_late ? "  store i32 -1, ptr addrspace(3) @smem\n" : "") + R"(
  br label %done
done:
  ret void
}
)";
  Device& emu = Device::emu();
  Tensor tensor = Tensor::empty(emu, DType::i32, {16, 4});
  tensor.fill_bytes(0);
  TensorMap map = emu.encode_tensor_map(TensorDescriptor::of(tensor, {16, 4}), 1);
  auto loaded = emu_load_llvm_ir(ir, "stores", kThreads, 1024);
  void* args[] = {&map};
  emu.launch(*loaded, LaunchDims{{1, 1, 1}, {}}, args, emu.default_stream());
  emu.default_stream().synchronize();
  return tensor.to_host<int32_t>();
}

TEST(TmaStoreChecks, TheBoxLandsInTheTensor) {
  std::vector<int32_t> got = run({});
  for (int i = 0; i < kThreads; ++i) EXPECT_EQ(got[static_cast<size_t>(i)], 5 * i + 2) << "element " << i;
}

TEST(TmaStoreChecks, WritesTheCopyReadsNeedAProxyFence) {
  EXPECT_THAT(error_of([] { run({.fence = false}); }),
              HasSubstr("cp.async.bulk.tensor.2d.global.shared::cta reads shared offset 0, which thread 0 wrote "
                        "through the generic proxy without a fence.proxy.async since"));
}

TEST(TmaStoreChecks, AThreadWaitsForItsStoresReadsBeforeItExits) {
  EXPECT_THAT(error_of([] { run({.wait = false}); }),
              HasSubstr("the thread exits with 1 TMA stores (cp.async.bulk.tensor to global memory) whose shared "
                        "boxes no cp.async.bulk.wait_group.read has read"));
}

TEST(TmaStoreChecks, TheBoxIsNotWrittenBeforeTheCopyReadIt) {
  EXPECT_THAT(error_of([] { run({.overwrite_early = true}); }),
              HasSubstr("shared memory write at offset 0 into the box of a TMA store of thread 0 that no "
                        "cp.async.bulk.wait_group.read has read yet"));
}

// The GPU faults on a copy whose column is not a whole number of 16 bytes (4 i32s), inside
// the tensor or not.
TEST(TmaStoreChecks, TheColumnIsAWholeNumberOf16Bytes) {
  for (int column : {2, -1})
    EXPECT_THAT(error_of([&] { run({.column = column}); }),
                HasSubstr(fmt::format("cp.async.bulk.tensor.2d.global.shared::cta at column {}: the innermost "
                                      "coordinate must be a multiple of 16 bytes (of 4 4-byte elements)",
                                      column)));
  std::vector<int32_t> outside = run({.column = 4});  // 16 bytes: the whole box lies outside, nothing is written
  for (int32_t v : outside) EXPECT_EQ(v, 0);
}

TEST(TmaStoreChecks, AfterTheReadTheBoxIsFree) {
  std::vector<int32_t> got = run({.overwrite_late = true});
  EXPECT_EQ(got[0], 2);
  EXPECT_EQ(got[1], 7);
}

}  // namespace
}  // namespace tilejit
