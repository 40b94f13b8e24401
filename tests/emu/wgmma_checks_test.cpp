// The emulator's wgmma.mma_async on a hand-written kernel (LLVM IR with the inline PTX the
// compiler writes): a 64x8x16 bf16 product read through matrix descriptors from swizzled
// shared tiles matches the reference, and each rule the emulator enforces is planted broken
// on purpose: no fence.proxy.async after the generic writes, no wgmma.fence, an operand
// overwritten before the wgmma.wait_group, inline PTX the emulator does not know.
#include <cstring>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "codegen/shared_layout.h"
#include "runtime/emu/emu_device.h"
#include "runtime/jit.h"
#include "runtime/tensor.h"
#include "tests/error_message.h"

namespace tilejit {
namespace {

using ::testing::HasSubstr;
using testing_util::error_of;

// A: 64 rows (M) x 32 bytes (K = 16 bf16), B: 8 rows (N) x 32 bytes, both K-major with the
// 32-byte swizzle; B right after A.
constexpr int64_t kRowsA = 64, kRowsB = 8, kK = 16, kRowBytes = 32, kOffsetB = kRowsA * kRowBytes;
constexpr int64_t kSharedBytes = kOffsetB + kRowsB * kRowBytes;

struct Planted {
  bool proxy_fence = true, wgmma_fence = true, overwrite_before_wait = false;
  std::string mma_text;  // empty: the wgmma.mma_async the compiler writes
};

std::string kernel(const Planted& p) {
  // Descriptor bits: leading offset 1 (unused), stride offset 256 bytes >> 4, 32-byte swizzle.
  uint64_t fixed = uint64_t{1} << 16 | uint64_t{256 >> 4} << 32 | uint64_t{3} << 62;
  std::string mma = p.mma_text.empty()
                        ? "{\\0A.reg .pred p;\\0Asetp.ne.b32 p, $10, 0;\\0Awgmma.mma_async.sync.aligned.m64n8k16.f32."
                          "bf16.bf16 {$0, $1, $2, $3}, $8, $9, p, 1, 1, 0, 0;\\0A}"
                        : p.mma_text;
  std::string ir = R"(
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare void @llvm.nvvm.barrier.cta.sync.aligned.all(i32)
declare void @llvm.nvvm.wgmma.fence.sync.aligned()
declare void @llvm.nvvm.wgmma.commit_group.sync.aligned()
declare void @llvm.nvvm.fence.proxy.async.shared_cta()
declare void @llvm.memcpy.p3.p1.i64(ptr addrspace(3), ptr addrspace(1), i64, i1)
@smem = external addrspace(3) global [0 x i8], align 1024

define ptx_kernel void @wgmma_tile(ptr addrspace(1) %in, ptr addrspace(1) %out) {
entry:
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %first = icmp eq i32 %t, 0
  br i1 %first, label %fill, label %filled
fill:
  call void @llvm.memcpy.p3.p1.i64(ptr addrspace(3) @smem, ptr addrspace(1) %in, i64 )" +
                   std::to_string(kSharedBytes) + R"(, i1 false)
  br label %filled
filled:
)" + (p.proxy_fence ? "  call void @llvm.nvvm.fence.proxy.async.shared_cta()\n" : "") +
                   "  call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)\n" +
                   (p.wgmma_fence ? "  call void @llvm.nvvm.wgmma.fence.sync.aligned()\n" : "") + R"(
  %base = ptrtoint ptr addrspace(3) @smem to i32
  %window = and i32 %base, 262143
  %start_a = lshr i32 %window, 4
  %start_b = add i32 %start_a, )" + std::to_string(kOffsetB >> 4) + R"(
  %wide_a = zext i32 %start_a to i64
  %wide_b = zext i32 %start_b to i64
  %desc_a = or i64 %wide_a, )" + std::to_string(static_cast<int64_t>(fixed)) + R"(
  %desc_b = or i64 %wide_b, )" + std::to_string(static_cast<int64_t>(fixed)) + R"(
  %d = call { float, float, float, float } asm sideeffect ")" + mma + R"(", "=f,=f,=f,=f,0,1,2,3,l,l,r"(float 0.0, float 0.0, float 0.0, float 0.0, i64 %desc_a, i64 %desc_b, i32 1)
  call void @llvm.nvvm.wgmma.commit_group.sync.aligned()
)" + (p.overwrite_before_wait ? "  %mine = getelementptr i32, ptr addrspace(3) @smem, i32 %t\n  store i32 0, ptr addrspace(3) %mine\n"
                               : "") + R"(
  %d0 = extractvalue { float, float, float, float } %d, 0
  %d1 = extractvalue { float, float, float, float } %d, 1
  %d2 = extractvalue { float, float, float, float } %d, 2
  %d3 = extractvalue { float, float, float, float } %d, 3
  %w = call { float, float, float, float } asm sideeffect "wgmma.wait_group.sync.aligned 0;", "=f,=f,=f,=f,0,1,2,3"(float %d0, float %d1, float %d2, float %d3)
  %slot = mul i32 %t, 4
)";
  // The four results, one store each.
  for (int i = 0; i < 4; ++i)
    ir += "  %r" + std::to_string(i) + " = extractvalue { float, float, float, float } %w, " + std::to_string(i) +
          "\n  %o" + std::to_string(i) + " = add i32 %slot, " + std::to_string(i) +
          "\n  %p" + std::to_string(i) + " = getelementptr float, ptr addrspace(1) %out, i32 %o" + std::to_string(i) +
          "\n  store float %r" + std::to_string(i) + ", ptr addrspace(1) %p" + std::to_string(i) + "\n";
  return ir + "  ret void\n}\n";
}

uint16_t bf16_of_small_int(int v) {
  float f = static_cast<float>(v);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return static_cast<uint16_t>(bits >> 16);  // exact: small integers have few mantissa bits
}

struct Outcome {
  std::vector<float> got, expected;
};

Outcome run(const Planted& p) {
  // Small integers: every product and sum is exact in f32.
  std::vector<int> a(kRowsA * kK), b(kRowsB * kK);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<int>((i * 7 + 3) % 9) - 4;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<int>((i * 5 + 1) % 7) - 3;
  std::vector<uint8_t> image(static_cast<size_t>(kSharedBytes));
  auto put = [&](int64_t offset, const codegen::SwizzledTile& tile, int64_t row, int64_t k, int v) {
    uint16_t h = bf16_of_small_int(v);
    std::memcpy(&image[static_cast<size_t>(offset + tile.byte_offset(row, k * 2))], &h, 2);
  };
  codegen::SwizzledTile ta{kRowsA, kRowBytes}, tb{kRowsB, kRowBytes};
  for (int64_t r = 0; r < kRowsA; ++r)
    for (int64_t k = 0; k < kK; ++k) put(0, ta, r, k, a[static_cast<size_t>(r * kK + k)]);
  for (int64_t n = 0; n < kRowsB; ++n)
    for (int64_t k = 0; k < kK; ++k) put(kOffsetB, tb, n, k, b[static_cast<size_t>(n * kK + k)]);

  Device& emu = Device::emu();
  Tensor in = Tensor::empty(emu, DType::i8, {kSharedBytes});
  in.copy_from_host(image.data(), image.size());
  Tensor out = Tensor::empty(emu, DType::f32, {128 * 4});
  out.fill_bytes(0xff);
  auto loaded = emu_load_llvm_ir(kernel(p), "wgmma_tile", 128, kSharedBytes);
  void* in_ptr = in.data();
  void* out_ptr = out.data();
  void* args[] = {&in_ptr, &out_ptr};
  emu.launch(*loaded, LaunchDims{{1, 1, 1}, {}}, args, emu.default_stream());

  Outcome r;
  r.got = out.to_host<float>();
  for (int t = 0; t < 128; ++t)
    for (int i = 0; i < 4; ++i) {
      // The ISA's accumulator fragment: warp w rows 16w.., lane l row l/4 (+8), column 2(l%4) + i%2.
      int warp = t / 32, lane = t % 32;
      int row = 16 * warp + lane / 4 + 8 * ((i >> 1) & 1), col = 2 * (lane % 4) + (i & 1);
      int sum = 0;
      for (int k = 0; k < kK; ++k) sum += a[static_cast<size_t>(row * kK + k)] * b[static_cast<size_t>(col * kK + k)];
      r.expected.push_back(static_cast<float>(sum));
    }
  return r;
}

TEST(EmulatorWgmma, ProductThroughDescriptorsMatchesTheReference) {
  Outcome r = run(Planted{});
  EXPECT_EQ(r.got, r.expected);
}

TEST(EmulatorWgmma, GenericWritesWithoutProxyFenceAreReported) {
  Planted p;
  p.proxy_fence = false;
  EXPECT_THAT(error_of([&] { run(p); }), HasSubstr("through the generic proxy without a fence.proxy.async"));
}

TEST(EmulatorWgmma, MissingWgmmaFenceIsReported) {
  Planted p;
  p.wgmma_fence = false;
  EXPECT_THAT(error_of([&] { run(p); }), HasSubstr("wgmma.mma_async without a wgmma.fence before it"));
}

TEST(EmulatorWgmma, OperandOverwrittenBeforeTheWaitIsReported) {
  Planted p;
  p.overwrite_before_wait = true;
  EXPECT_THAT(error_of([&] { run(p); }),
              HasSubstr("shared memory read by a wgmma.mma_async changed before the wgmma.wait_group"));
}

TEST(EmulatorWgmma, UnknownInlinePtxIsReportedWithItsText) {
  Planted p;
  p.mma_text = "mov.b32 $0, 0;";
  std::string error = error_of([&] { run(p); });
  EXPECT_THAT(error, HasSubstr("the emulator cannot run this inline PTX"));
  EXPECT_THAT(error, HasSubstr("mov.b32 $0, 0;"));
}

}  // namespace
}  // namespace tilejit
