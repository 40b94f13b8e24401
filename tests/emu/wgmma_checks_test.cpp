// The emulator's wgmma.mma_async on a hand-written kernel (LLVM IR with the inline PTX the
// compiler writes): a 64x8x16 bf16 product read through matrix descriptors from swizzled
// shared tiles matches the reference, and each rule the emulator enforces is planted broken
// on purpose: no fence.proxy.async after the generic writes, no wgmma.fence, an operand
// overwritten before the wgmma.wait_group, inline PTX the emulator does not know. Results
// land at the wait: read earlier they are NaN, also while a later group is in flight.
#include <cmath>
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
  bool read_before_wait = false;  // store D as the wgmma.mma_async leaves it, not after the wait
  // Two groups accumulating into the same registers; the results after `wait_group 1` go to
  // out[512..1023], those after `wait_group 0` to out[0..511].
  bool two_groups = false;
  std::string mma_text;  // empty: the wgmma.mma_async the compiler writes
  std::string second_mma_text;  // two_groups: the second group's (empty: the first's)
};

constexpr const char* kQuad = "{ float, float, float, float }";

// `%name = ` the asm call of `text` with four tied f32 registers (`in`: "%x" names, or
// "0.0" constants), then %name0..3 for its results.
std::string tied_call(const std::string& name, const std::string& text, const std::string& extra_constraints,
                      const std::vector<std::string>& in, const std::string& extra_args) {
  std::string ir = "  %" + name + " = call " + kQuad + " asm sideeffect \"" + text + "\", \"=f,=f,=f,=f,0,1,2,3" +
                   extra_constraints + "\"(";
  for (int i = 0; i < 4; ++i) ir += std::string(i ? ", " : "") + "float " + in[static_cast<size_t>(i)];
  ir += extra_args + ")\n";
  for (int i = 0; i < 4; ++i)
    ir += "  %" + name + std::to_string(i) + " = extractvalue " + kQuad + " %" + name + ", " + std::to_string(i) + "\n";
  return ir;
}

std::vector<std::string> results_of(const std::string& name) {
  std::vector<std::string> r;
  for (int i = 0; i < 4; ++i) r.push_back("%" + name + std::to_string(i));
  return r;
}

// Stores the four registers of thread %t at out[first + 4t ..].
std::string store_four(const std::string& name, int first) {
  std::string ir;
  for (int i = 0; i < 4; ++i) {
    std::string n = name + std::to_string(i);
    ir += "  %o" + n + " = add i32 %slot, " + std::to_string(first + i) + "\n  %p" + n +
          " = getelementptr float, ptr addrspace(1) %out, i32 %o" + n + "\n  store float %" + n +
          ", ptr addrspace(1) %p" + n + "\n";
  }
  return ir;
}

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
  %slot = mul i32 %t, 4
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
  %desc_b = or i64 %wide_b, )" + std::to_string(static_cast<int64_t>(fixed)) + "\n";
  const std::string descriptors = ", i64 %desc_a, i64 %desc_b, i32 1";
  const std::string commit = "  call void @llvm.nvvm.wgmma.commit_group.sync.aligned()\n";
  ir += tied_call("d", mma, ",l,l,r", {"0.0", "0.0", "0.0", "0.0"}, descriptors) + commit;
  std::string last = "d";
  if (p.two_groups) {
    const std::string& second = p.second_mma_text.empty() ? mma : p.second_mma_text;
    ir += tied_call("e", second, ",l,l,r", results_of("d"), descriptors) + commit;
    ir += tied_call("v", "wgmma.wait_group.sync.aligned 1;", "", results_of("e"), "") + store_four("v", 512);
    last = "v";
  }
  if (p.overwrite_before_wait)
    ir += "  %mine = getelementptr i32, ptr addrspace(3) @smem, i32 %t\n  store i32 0, ptr addrspace(3) %mine\n";
  ir += tied_call("w", "wgmma.wait_group.sync.aligned 0;", "", results_of(last), "");
  ir += store_four(p.read_before_wait ? "d" : "w", 0);
  return ir + "  ret void\n}\n";
}

uint16_t bf16_of_small_int(int v) {
  float f = static_cast<float>(v);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return static_cast<uint16_t>(bits >> 16);  // exact: small integers have few mantissa bits
}

struct Outcome {
  std::vector<float> got, expected;  // of the last wait (before it, with read_before_wait)
  std::vector<float> after_first_wait;  // two_groups: after wait_group 1
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
  Tensor out = Tensor::empty(emu, DType::f32, {2 * 128 * 4});
  out.fill_bytes(0x42);  // 48.56f: neither NaN nor a sum of small integers
  auto loaded = emu_load_llvm_ir(kernel(p), "wgmma_tile", 128, kSharedBytes);
  void* in_ptr = in.data();
  void* out_ptr = out.data();
  void* args[] = {&in_ptr, &out_ptr};
  emu.launch(*loaded, LaunchDims{{1, 1, 1}, {}}, args, emu.default_stream());

  Outcome r;
  std::vector<float> all = out.to_host<float>();
  r.got.assign(all.begin(), all.begin() + 512);
  r.after_first_wait.assign(all.begin() + 512, all.end());
  for (int t = 0; t < 128; ++t)
    for (int i = 0; i < 4; ++i) {
      // The ISA's accumulator fragment: warp w rows 16w.., lane l row l/4 (+8), column 2(l%4) + i%2.
      int warp = t / 32, lane = t % 32;
      int row = 16 * warp + lane / 4 + 8 * ((i >> 1) & 1), col = 2 * (lane % 4) + (i & 1);
      int sum = 0;
      for (int k = 0; k < kK; ++k) sum += a[static_cast<size_t>(row * kK + k)] * b[static_cast<size_t>(col * kK + k)];
      r.expected.push_back(static_cast<float>(p.two_groups ? 2 * sum : sum));
    }
  return r;
}

TEST(EmulatorWgmma, ProductThroughDescriptorsMatchesTheReference) {
  Outcome r = run(Planted{});
  EXPECT_EQ(r.got, r.expected);
}

TEST(EmulatorWgmma, ResultsReadBeforeTheWaitAreNaN) {
  Planted p;
  p.read_before_wait = true;
  Outcome r = run(p);
  for (float v : r.got) ASSERT_TRUE(std::isnan(v)) << v;
}

TEST(EmulatorWgmma, GroupsAccumulatingIntoTheSameRegistersLandAtTheirWait) {
  Planted p;
  p.two_groups = true;
  Outcome r = run(p);
  // After wait_group 1 the second group is still in flight: its registers are not there yet.
  for (float v : r.after_first_wait) ASSERT_TRUE(std::isnan(v)) << v;
  EXPECT_EQ(r.got, r.expected);  // both products, the second accumulated onto the first
}

// A wgmma of another shape (here K = 32 instead of 16) may not take over a running one's
// accumulator: the hardware keeps it in flight only between instructions of the same shape.
TEST(EmulatorWgmma, ChainingIntoARunningWgmmaOfAnotherShapeIsReported) {
  Planted p;
  p.two_groups = true;
  p.second_mma_text =
      "{\\0A.reg .pred p;\\0Asetp.ne.b32 p, $10, 0;\\0Awgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 "
      "{$0, $1, $2, $3}, $8, $9, p, 1, 1;\\0A}";
  EXPECT_THAT(error_of([&] { run(p); }),
              HasSubstr("wgmma.mma_async m64n8k32 accumulates into the registers of a running m64n8k16"));
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

TEST(EmulatorWgmma, MalformedWgmmaOperandsAreReportedNotThrown) {
  const std::string name = "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 ";
  const std::pair<std::string, std::string> cases[] = {
      {"{$0, $1, $2, $3}, $8, $9, 1, 1, 1, 0, x;", "immediate x must be 0 or 1"},
      {"{$0, $1, $2, $3}, $8, $9, 1, 1, 1, 0, 0", "expected ';' at the end of wgmma.mma_async"},
      {"{$0, $1, $2, $3, $8, $9, 1, 1, 1, 0, 0;", "D's registers have no closing brace"},
      {"{$0, $1, $2, $q}, $8, $9, 1, 1, 1, 0, 0;", "'$q' is not an operand"},
      {"{$0, $1, $2, $3}, $8, , 1, 1, 1, 0, 0;", "B's descriptor is missing"},
  };
  for (const auto& [operands, why] : cases) {
    Planted p;
    p.mma_text = name + operands;
    std::string error = error_of([&] { run(p); });
    EXPECT_THAT(error, HasSubstr("the emulator cannot run this inline PTX (" + why + ")")) << operands;
  }
}

// s32 accumulators come in N = 8 to 32 and multiples of 16: n40 is refused as ptxas refuses
// it, n48 passes the shape check (and is refused for its register count, which the planted
// kernel does not match).
TEST(EmulatorWgmma, IntegerWidthsTheHardwareLacksAreRefused) {
  const std::string operands = "{$0, $1, $2, $3}, $8, $9, 1;";
  const std::pair<std::string, std::string> cases[] = {
      {"wgmma.mma_async.sync.aligned.m64n40k32.s32.s8.s8 ", "shape and types do not form a wgmma.mma_async instruction"},
      {"wgmma.mma_async.sync.aligned.m64n48k32.s32.s8.s8 ", "D has 4 registers, not 24"},
  };
  for (const auto& [name, why] : cases) {
    Planted p;
    p.mma_text = name + operands;
    EXPECT_THAT(error_of([&] { run(p); }), HasSubstr("the emulator cannot run this inline PTX (" + why + ")")) << name;
  }
}

}  // namespace
}  // namespace tilejit
