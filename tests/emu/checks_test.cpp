// The emulator's checks, each planted on purpose: out-of-bounds and misaligned global
// accesses, shared memory beyond the allocation, a barrier some threads never reach, and
// (with TILEJIT_EMU_RACECHECK=1) a shared-memory race. Kernels the lowering would never
// produce are written by hand in LLVM IR; the same kernels with the bug fixed must pass.
#include <cstdlib>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ops/kernels/examples.h"
#include "runtime/emu/emu_device.h"
#include "runtime/jit.h"
#include "runtime/tensor.h"
#include "tests/error_message.h"
#include "tests/scoped_env.h"

namespace tilejit {
namespace {

using ::testing::HasSubstr;

constexpr const char* kDeclarations = R"(
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare void @llvm.nvvm.barrier.cta.sync.aligned.all(i32)
@smem = external addrspace(3) global [0 x i8], align 16
)";

// Launches a hand-written kernel with one i32 output pointer on one CTA.
void launch_ir(const std::string& body, const std::string& name, int threads, int64_t shared, Tensor& out) {
  auto kernel = emu_load_llvm_ir(std::string(kDeclarations) + body, name, threads, shared);
  void* ptr = out.data();
  void* args[] = {&ptr};
  Device::emu().launch(*kernel, LaunchDims{{1, 1, 1}, {}}, args, Device::emu().default_stream());
}

using testing_util::error_of;

// The race detector on for a test's scope (ctest sets it for every test; a direct run may not).
class RaceCheck {
  testing_util::ScopedEnv on_{"TILEJIT_EMU_RACECHECK", "1"};
};

// out[t] = shared[(t + 1) % 128] after every thread stored shared[t] = t, shared holding
// `element` (i32, or i8: four threads' stores share one word).
std::string neighbour_exchange(bool with_barrier, const std::string& element = "i32") {
  bool narrow = element != "i32";
  auto typed = [&](std::string text) {
    auto replace = [&](const std::string& from, const std::string& to) {
      for (size_t at; (at = text.find(from)) != std::string::npos;) text.replace(at, from.size(), to);
    };
    replace("ELEM", element);
    replace("NARROW", narrow ? "trunc" : "bitcast");
    replace("WIDEN", narrow ? "zext" : "bitcast");
    return text;
  };
  return typed(R"(
define ptx_kernel void @exchange(ptr addrspace(1) %out) {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %p = getelementptr ELEM, ptr addrspace(3) @smem, i32 %t
  %e = NARROW i32 %t to ELEM
  store ELEM %e, ptr addrspace(3) %p
)") + (with_barrier ? "  call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)\n" : "") + typed(R"(
  %n = add i32 %t, 1
  %m = and i32 %n, 127
  %q = getelementptr ELEM, ptr addrspace(3) @smem, i32 %m
  %v = load ELEM, ptr addrspace(3) %q
  %w = WIDEN ELEM %v to i32
  %o = getelementptr i32, ptr addrspace(1) %out, i32 %t
  store i32 %w, ptr addrspace(1) %o
  ret void
}
)");
}

TEST(EmulatorChecks, RaceWithoutBarrierIsReported) {
  RaceCheck on;
  Tensor out = Tensor::empty(Device::emu(), DType::i32, {128});
  std::string error = error_of([&] { launch_ir(neighbour_exchange(false), "exchange", 128, 512, out); });
  EXPECT_THAT(error, HasSubstr("shared memory race at offset 4"));
  EXPECT_THAT(error, HasSubstr("kernel exchange, block (0, 0, 0), thread (1, 0, 0)"));
}

TEST(EmulatorChecks, BarrierOrdersTheExchange) {
  RaceCheck on;
  for (const char* element : {"i32", "i8"}) {
    SCOPED_TRACE(element);
    Tensor out = Tensor::empty(Device::emu(), DType::i32, {128});
    out.fill_bytes(0xff);
    launch_ir(neighbour_exchange(true, element), "exchange", 128, 512, out);
    std::vector<int32_t> got = out.to_host<int32_t>();
    for (int t = 0; t < 128; ++t) ASSERT_EQ(got[size_t(t)], (t + 1) % 128) << "thread " << t;
  }
}

// Races are tracked per byte: threads storing neighbouring bytes of one word do not race
// (the exchange above passes), and a byte read before its writer's barrier still does.
TEST(EmulatorChecks, ByteRaceIsReportedAtItsByte) {
  RaceCheck on;
  Tensor out = Tensor::empty(Device::emu(), DType::i32, {128});
  std::string error = error_of([&] { launch_ir(neighbour_exchange(false, "i8"), "exchange", 128, 128, out); });
  EXPECT_THAT(error, HasSubstr("shared memory race at offset 1"));
  EXPECT_THAT(error, HasSubstr("thread (1, 0, 0)"));
}

TEST(EmulatorChecks, DivergentBarrierIsReported) {
  std::string body = R"(
define ptx_kernel void @divergent(ptr addrspace(1) %out) {
entry:
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %low = icmp ult i32 %t, 32
  br i1 %low, label %sync, label %done
sync:
  call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  br label %done
done:
  ret void
}
)";
  Tensor out = Tensor::empty(Device::emu(), DType::i32, {128});
  std::string error = error_of([&] { launch_ir(body, "divergent", 128, 0, out); });
  EXPECT_THAT(error, HasSubstr("kernel divergent, block (0, 0, 0): barrier not reached by every thread of the CTA"));
  EXPECT_THAT(error, HasSubstr("32 threads (0, 1, 2"));
  EXPECT_THAT(error, HasSubstr("96 threads (32, 33"));
}

TEST(EmulatorChecks, SharedAccessBeyondAllocationIsReported) {
  std::string body = R"(
define ptx_kernel void @overflow(ptr addrspace(1) %out) {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %p = getelementptr i32, ptr addrspace(3) @smem, i32 %t
  store i32 %t, ptr addrspace(3) %p
  ret void
}
)";
  Tensor out = Tensor::empty(Device::emu(), DType::i32, {128});
  std::string error = error_of([&] { launch_ir(body, "overflow", 128, 256, out); });  // room for 64 threads
  EXPECT_THAT(error, HasSubstr("thread (64, 0, 0): shared memory store of 4 bytes at offset 256 is outside the CTA's 256 bytes"));
}

TEST(EmulatorChecks, MisalignedVectorAccessIsReported) {
  std::string body = R"(
define ptx_kernel void @misaligned(ptr addrspace(1) %out) {
  %p = getelementptr i8, ptr addrspace(1) %out, i64 4
  store <4 x i32> zeroinitializer, ptr addrspace(1) %p, align 16
  ret void
}
)";
  Tensor out = Tensor::empty(Device::emu(), DType::i32, {128});
  std::string error = error_of([&] { launch_ir(body, "misaligned", 32, 0, out); });
  EXPECT_THAT(error, HasSubstr("kernel misaligned, block (0, 0, 0), thread (0, 0, 0): misaligned 16-byte global store at 0x"));
}

TEST(EmulatorChecks, OutOfBoundsGlobalLoadIsReported) {
  // vector_add told there are more elements than the buffers hold.
  JitKernel add(ops::vector_add_kernel());
  const int n = 1000;
  Tensor x = Tensor::empty(Device::emu(), DType::f32, {n}), y = Tensor::empty(Device::emu(), DType::f32, {n});
  Tensor out = Tensor::empty(Device::emu(), DType::f32, {n});
  std::string error = error_of([&] {
    add.with({{"BLOCK", 256}}).launch(Device::emu().default_stream(), {8}, x, y, out, int32_t{2000});
  });
  EXPECT_THAT(error, HasSubstr("kernel vector_add, block (3, 0, 0), thread ("));
  EXPECT_THAT(error, HasSubstr("out-of-bounds global load of"));
  EXPECT_THAT(error, HasSubstr("bytes past the start of the 4000-byte allocation at"));
}

TEST(EmulatorChecks, InBoundsLaunchAfterAFailureWorks) {
  JitKernel add(ops::vector_add_kernel());
  const int n = 1000;
  Tensor x = Tensor::empty(Device::emu(), DType::f32, {n}), y = Tensor::empty(Device::emu(), DType::f32, {n});
  Tensor out = Tensor::empty(Device::emu(), DType::f32, {n});
  EXPECT_THROW(add.launch(Device::emu().default_stream(), {8}, x, y, out, int32_t{1 << 20}), Error);
  std::vector<float> ones(n, 1.0f);
  x.copy_from_host(std::span<const float>(ones));
  y.copy_from_host(std::span<const float>(ones));
  add.launch(Device::emu().default_stream(), {1}, x, y, out, int32_t{n});
  for (float v : out.to_host<float>()) ASSERT_EQ(v, 2.0f);
}

}  // namespace
}  // namespace tilejit
