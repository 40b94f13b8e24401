// The launch API on the emulator: argument checking against the kernel's signature,
// specialization read off the arguments, and warm launches that neither trace nor compile.
#include <atomic>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/jit.h"
#include "runtime/tensor.h"
#include "runtime/tensor_descriptor.h"
#include "tests/error_message.h"

namespace tilejit {
namespace {

using namespace tilejit::dsl;
using ::testing::HasSubstr;

std::atomic<int> traces{0};

// out[i] = x[i] * scale for i < n, counting how often it is traced.
Kernel scale_kernel() {
  return define_kernel("scale", {"x", "out", "n", "scale"}, {{"BLOCK", 128}},
                       [](const Constants& c, Ptr<f32> x, Ptr<f32> out, Scalar<i32> n, Scalar<f32> scale) {
                         ++traces;
                         Tile offs = program_id(0) * c["BLOCK"] + arange(0, c["BLOCK"]);
                         Tile mask = offs < n;
                         store(out + offs, load(x + offs, mask) * scale, mask);
                       });
}

using testing_util::error_of;

struct Buffers {
  Tensor x = Tensor::empty(Device::emu(), DType::f32, {1000});
  Tensor out = Tensor::empty(Device::emu(), DType::f32, {1000});
  Tensor ints = Tensor::empty(Device::emu(), DType::i32, {1000});
};

TEST(LaunchApi, ChecksArgumentCount) {
  JitKernel k(scale_kernel());
  Buffers b;
  EXPECT_THAT(error_of([&] { k.launch(Device::emu().default_stream(), {1}, b.x, b.out, int32_t{10}); }),
              HasSubstr("kernel scale: 3 arguments given, it takes 4 (x, out, n, scale)"));
}

TEST(LaunchApi, ChecksPointerElementTypes) {
  JitKernel k(scale_kernel());
  Buffers b;
  EXPECT_THAT(error_of([&] { k.launch(Device::emu().default_stream(), {1}, b.ints, b.out, int32_t{10}, 2.0f); }),
              HasSubstr("kernel scale: argument 0 ('x') must be an f32 pointer, got an i32 pointer"));
  EXPECT_THAT(error_of([&] {
                k.launch(Device::emu().default_stream(), {1}, KernelArg::pointer(b.x.data(), DType::bf16), b.out,
                         int32_t{10}, 2.0f);
              }),
              HasSubstr("argument 0 ('x') must be an f32 pointer, got a bf16 pointer"));
}

TEST(LaunchApi, ChecksScalarTypes) {
  JitKernel k(scale_kernel());
  Buffers b;
  EXPECT_THAT(error_of([&] { k.launch(Device::emu().default_stream(), {1}, b.x, b.out, 10.0f, 2.0f); }),
              HasSubstr("argument 2 ('n') must be an i32 scalar, got an f32 scalar"));
  EXPECT_THAT(error_of([&] { k.launch(Device::emu().default_stream(), {1}, b.x, b.out, int32_t{10}, int32_t{2}); }),
              HasSubstr("argument 3 ('scale') must be an f32 scalar, got an i32 scalar"));
  EXPECT_THAT(error_of([&] { k.launch(Device::emu().default_stream(), {1}, b.x, int32_t{3}, int32_t{10}, 2.0f); }),
              HasSubstr("argument 1 ('out') must be an f32 pointer, got an i32 scalar"));
}

TEST(LaunchApi, GridsAGpuDoesNotLaunchAreErrors) {
  JitKernel k(scale_kernel());
  Buffers b;
  Stream& s = Device::emu().default_stream();
  EXPECT_THAT(error_of([&] { k.launch(s, {1, 65536, 1}, b.x, b.out, int32_t{10}, 2.0f); }),
              HasSubstr("launch of scale: grid (1, 65536, 1) exceeds what a GPU launches (2147483647 programs along x, "
                        "65535 along y and z)"));
  EXPECT_THAT(error_of([&] { k.launch(s, {1, 1, 70000}, b.x, b.out, int32_t{10}, 2.0f); }), HasSubstr("grid (1, 1, 70000)"));
  EXPECT_THAT(error_of([&] { k.launch(s, {2147483648u, 1, 1}, b.x, b.out, int32_t{10}, 2.0f); }),
              HasSubstr("grid (2147483648, 1, 1)"));
  // An empty grid is refused here, before a device sees it (CUDA would only say "invalid value").
  EXPECT_THAT(error_of([&] { k.launch(s, {1, 0, 1}, b.x, b.out, int32_t{10}, 2.0f); }),
              HasSubstr("launch of scale: empty grid (1, 0, 1); each dim must be at least 1"));
  b.out.fill_bytes(0xff);
  k.launch(s, {1, 65535, 1}, b.x, b.out, int32_t{0}, 2.0f);  // at the limit; n = 0 stores nothing
  EXPECT_TRUE(std::isnan(b.out.to_host<float>()[0]));
}

// Memory of another device would fault the launch (on a GPU, for the rest of the process).
TEST(LaunchApi, ArgumentsOfAnotherDeviceAreErrors) {
  JitKernel k(scale_kernel());
  Buffers b;
  Device& other = Device::by_name("emu:sm_80");
  Tensor elsewhere = Tensor::empty(other, DType::f32, {1000});
  EXPECT_THAT(error_of([&] { k.launch(Device::emu().default_stream(), {1}, elsewhere, b.out, int32_t{10}, 2.0f); }),
              HasSubstr("kernel scale: argument 0 ('x') is memory of " + other.info().name + ", but the launch is on " +
                        Device::emu().info().name));
  JitKernel copy(define_kernel("copy_tile", {"in", "out"}, {}, [](const Constants&, TensorDesc<f32> in, Ptr<f32> out) {
    store(out + expand_dims(arange(0, 8), 1) * 8 + expand_dims(arange(0, 8), 0), desc_load(in, {0, 0}));
  }));
  TensorDescriptor d = TensorDescriptor::of(Tensor::empty(other, DType::f32, {8, 8}), {8, 8});
  EXPECT_THAT(error_of([&] { copy.launch(Device::emu().default_stream(), {1}, d, b.out); }),
              HasSubstr("argument 0 ('in') is memory of " + other.info().name));
}

// Clusters the caller gives must tile the grid, as those the kernel is compiled for must.
TEST(LaunchApi, GivenClustersMustTileTheGrid) {
  JitKernel k(scale_kernel());
  Buffers b;
  const KernelArg args[] = {b.x, b.out, int32_t{10}, 2.0f};
  BoundKernel bound = k.with({});
  EXPECT_THAT(error_of([&] { bound.launch_args(Device::emu().default_stream(), {{4, 1, 1}, {3, 1, 1}}, args); }),
              HasSubstr("launch of scale: the kernel runs in clusters of (3, 1, 1) CTAs, which do not tile the grid"));
  EXPECT_THAT(error_of([&] { bound.launch_args(Device::emu().default_stream(), {{4, 1, 1}, {0, 1, 1}}, args); }),
              HasSubstr("clusters of (0, 1, 1) CTAs given; each dim must be at least 1"));
}

// A scalar parameter no launch can pass (KernelArg holds i32, i64 and f32) is refused up front.
TEST(LaunchApi, ScalarParametersOfOtherDtypesAreRefused) {
  auto half_scale = [] {
    return define_kernel("half_scale", {"out", "s"}, {},
                         [](const Constants&, Ptr<f16> out, Scalar<f16> s) { store(out, s); });
  };
  EXPECT_THAT(error_of([&] { (void)JitKernel(half_scale()); }),
              HasSubstr("kernel half_scale: scalar parameter 's' is f16; launches pass i32, i64 or f32 scalars"));
}

// An i32 argument of an i64 parameter arrives sign-extended: -5 stays -5, not 2^32 - 5.
TEST(LaunchApi, I32ArgumentOfAnI64ParameterIsSignExtended) {
  JitKernel k(define_kernel("add_offset", {"out", "v"}, {}, [](const Constants&, Ptr<i64> out, Scalar<i64> v) {
    Tile offs = arange(0, 4);
    store(out + offs, cast(offs, i64) + v);
  }));
  Tensor out = Tensor::empty(Device::emu(), DType::i64, {4});
  for (KernelArg v : {KernelArg(int32_t{-5}), KernelArg(int64_t{-5})}) {
    out.fill_bytes(0xff);
    k.launch(Device::emu().default_stream(), {1}, out, v);
    EXPECT_EQ(out.to_host<int64_t>(), (std::vector<int64_t>{-5, -4, -3, -2})) << v.describe();
  }
}

TEST(LaunchApi, UnknownConstantIsAnError) {
  JitKernel k(scale_kernel());
  EXPECT_THAT(error_of([&] { k.with({{"BLOKC", 64}}); }), HasSubstr("BLOKC"));
}

TEST(LaunchApi, SpecializesOnArgumentsAndBuildsEachOnce) {
  JitKernel k(scale_kernel());
  BoundKernel bound = k.with({{"BLOCK", 64}});
  Buffers b;
  Stream& s = Device::emu().default_stream();
  bound.launch(s, {1}, b.x, b.out, int32_t{64}, 2.0f);   // n % 16 == 0
  bound.launch(s, {1}, b.x, b.out, int32_t{48}, 2.0f);   // same specialization
  EXPECT_EQ(bound.builds(), 1);
  bound.launch(s, {1}, b.x, b.out, int32_t{13}, 2.0f);   // n % 16 != 0
  EXPECT_EQ(bound.builds(), 2);
  bound.launch(s, {1}, b.x, b.out, int32_t{1}, 2.0f);    // n == 1
  EXPECT_EQ(bound.builds(), 3);
  float* misaligned = static_cast<float*>(b.x.data()) + 1;
  bound.launch(s, {1}, misaligned, b.out, int32_t{13}, 2.0f);  // x not 16-byte aligned
  EXPECT_EQ(bound.builds(), 4);
  // The largest power of two up to 16 dividing each argument is what counts.
  bound.launch(s, {1}, b.x, b.out, int32_t{24}, 2.0f);  // n % 8 == 0
  bound.launch(s, {1}, b.x, b.out, int32_t{40}, 2.0f);  // same specialization
  EXPECT_EQ(bound.builds(), 5);
  bound.launch(s, {1}, b.x, b.out, int32_t{-32}, 2.0f);  // n % 16 == 0, as 64
  bound.launch(s, {1}, b.x, b.out, int32_t{0}, 2.0f);
  EXPECT_EQ(bound.builds(), 5);
  bound.launch(s, {1}, static_cast<float*>(b.x.data()) + 2, b.out, int32_t{13}, 2.0f);  // x 8-byte aligned
  bound.launch(s, {1}, static_cast<float*>(b.x.data()) + 3, b.out, int32_t{13}, 2.0f);  // 4-byte, as `misaligned`
  EXPECT_EQ(bound.builds(), 6);
  // The same overrides give the same bound kernel, builds included.
  EXPECT_EQ(k.with({{"BLOCK", 64}}).builds(), 6);
  EXPECT_EQ(k.with({{"BLOCK", 32}}).builds(), 0);
}

TEST(LaunchApi, WarmLaunchDoesNotTrace) {
  JitKernel k(scale_kernel());
  Buffers b;
  Stream& s = Device::emu().default_stream();
  k.launch(s, {8}, b.x, b.out, int32_t{999}, 2.0f);
  int after_first = traces.load();
  for (int i = 0; i < 5; ++i) k.launch(s, {8}, b.x, b.out, int32_t{997 - 2 * i}, 3.0f);  // same specialization
  EXPECT_EQ(traces.load(), after_first);
}

TEST(LaunchApi, SpecializedKernelsComputeTheSameResult) {
  JitKernel k(scale_kernel());
  Buffers b;
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i) * 0.5f - 7.0f;
  b.x.copy_from_host(std::span<const float>(x));
  Stream& s = Device::emu().default_stream();
  for (int32_t n : {1, 16, 999, 1000}) {
    b.out.fill_bytes(0xff);
    k.launch(s, {8}, b.x, b.out, n, 1.5f);
    std::vector<float> got = b.out.to_host<float>();
    for (int32_t i = 0; i < n; ++i) ASSERT_EQ(got[size_t(i)], x[size_t(i)] * 1.5f) << "n=" << n << " i=" << i;
    for (int32_t i = n; i < 1000; ++i) ASSERT_TRUE(std::isnan(got[size_t(i)])) << "n=" << n << " i=" << i << " written";
  }
}

}  // namespace
}  // namespace tilejit
