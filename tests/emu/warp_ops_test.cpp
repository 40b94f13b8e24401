// Warp collectives in the emulator, as the PTX ISA defines them: shfl.sync in its four
// modes, vote.sync and match.sync, on two warps (each warp exchanges only within itself).
#include <gtest/gtest.h>

#include "runtime/emu/emu_device.h"
#include "runtime/tensor.h"

namespace tilejit {
namespace {

constexpr int kResults = 9;  // per thread

constexpr const char* kWarpOps = R"(
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.shfl.sync.idx.i32(i32, i32, i32, i32)
declare i32 @llvm.nvvm.shfl.sync.up.i32(i32, i32, i32, i32)
declare i32 @llvm.nvvm.shfl.sync.down.i32(i32, i32, i32, i32)
declare i32 @llvm.nvvm.shfl.sync.bfly.i32(i32, i32, i32, i32)
declare i32 @llvm.nvvm.vote.ballot.sync(i32, i1)
declare i1 @llvm.nvvm.vote.all.sync(i32, i1)
declare i1 @llvm.nvvm.vote.any.sync(i32, i1)
declare i32 @llvm.nvvm.match.any.sync.i32(i32, i32)
declare {i32, i1} @llvm.nvvm.match.all.sync.i32p(i32, i32)

define ptx_kernel void @warp_ops(ptr addrspace(1) %out) {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %lane = and i32 %t, 31
  %v = mul i32 %t, 10
  %r0 = call i32 @llvm.nvvm.shfl.sync.idx.i32(i32 -1, i32 %v, i32 5, i32 31)
  %r1 = call i32 @llvm.nvvm.shfl.sync.up.i32(i32 -1, i32 %v, i32 3, i32 0)
  %r2 = call i32 @llvm.nvvm.shfl.sync.down.i32(i32 -1, i32 %v, i32 3, i32 31)
  %r3 = call i32 @llvm.nvvm.shfl.sync.bfly.i32(i32 -1, i32 %v, i32 6, i32 31)
  %odd = trunc i32 %t to i1
  %r4 = call i32 @llvm.nvvm.vote.ballot.sync(i32 -1, i1 %odd)
  %all = call i1 @llvm.nvvm.vote.all.sync(i32 -1, i1 %odd)
  %r5 = zext i1 %all to i32
  %is7 = icmp eq i32 %lane, 7
  %any = call i1 @llvm.nvvm.vote.any.sync(i32 -1, i1 %is7)
  %r6 = zext i1 %any to i32
  %quad = lshr i32 %lane, 2
  %r7 = call i32 @llvm.nvvm.match.any.sync.i32(i32 -1, i32 %quad)
  %m = call {i32, i1} @llvm.nvvm.match.all.sync.i32p(i32 -1, i32 42)
  %r8 = extractvalue {i32, i1} %m, 0
  %base = mul i32 %t, 9
  %p0 = getelementptr i32, ptr addrspace(1) %out, i32 %base
  store i32 %r0, ptr addrspace(1) %p0
  %p1 = getelementptr i32, ptr addrspace(1) %p0, i32 1
  store i32 %r1, ptr addrspace(1) %p1
  %p2 = getelementptr i32, ptr addrspace(1) %p0, i32 2
  store i32 %r2, ptr addrspace(1) %p2
  %p3 = getelementptr i32, ptr addrspace(1) %p0, i32 3
  store i32 %r3, ptr addrspace(1) %p3
  %p4 = getelementptr i32, ptr addrspace(1) %p0, i32 4
  store i32 %r4, ptr addrspace(1) %p4
  %p5 = getelementptr i32, ptr addrspace(1) %p0, i32 5
  store i32 %r5, ptr addrspace(1) %p5
  %p6 = getelementptr i32, ptr addrspace(1) %p0, i32 6
  store i32 %r6, ptr addrspace(1) %p6
  %p7 = getelementptr i32, ptr addrspace(1) %p0, i32 7
  store i32 %r7, ptr addrspace(1) %p7
  %p8 = getelementptr i32, ptr addrspace(1) %p0, i32 8
  store i32 %r8, ptr addrspace(1) %p8
  ret void
}
)";

TEST(EmulatorWarpOps, MatchThePtxDefinitions) {
  const int threads = 64;
  auto kernel = emu_load_llvm_ir(kWarpOps, "warp_ops", threads, 0);
  Tensor out = Tensor::empty(Device::emu(), DType::i32, {threads * kResults});
  out.fill_bytes(0xff);
  void* ptr = out.data();
  void* args[] = {&ptr};
  Device::emu().launch(*kernel, LaunchDims{{1, 1, 1}, {}}, args, Device::emu().default_stream());
  std::vector<int32_t> got = out.to_host<int32_t>();
  for (int t = 0; t < threads; ++t) {
    int lane = t % 32, warp_base = t - lane;
    auto value_of = [&](int l) { return (warp_base + l) * 10; };
    const int32_t* r = &got[size_t(t) * kResults];
    EXPECT_EQ(r[0], value_of(5)) << "shfl.idx, thread " << t;
    EXPECT_EQ(r[1], lane >= 3 ? value_of(lane - 3) : value_of(lane)) << "shfl.up, thread " << t;
    EXPECT_EQ(r[2], lane + 3 <= 31 ? value_of(lane + 3) : value_of(lane)) << "shfl.down, thread " << t;
    EXPECT_EQ(r[3], value_of(lane ^ 6)) << "shfl.bfly, thread " << t;
    EXPECT_EQ(static_cast<uint32_t>(r[4]), 0xaaaaaaaau) << "vote.ballot, thread " << t;
    EXPECT_EQ(r[5], 0) << "vote.all, thread " << t;
    EXPECT_EQ(r[6], 1) << "vote.any, thread " << t;
    EXPECT_EQ(static_cast<uint32_t>(r[7]), 0xfu << (lane / 4 * 4)) << "match.any, thread " << t;
    EXPECT_EQ(static_cast<uint32_t>(r[8]), 0xffffffffu) << "match.all, thread " << t;
  }
}

}  // namespace
}  // namespace tilejit
