// What the lowering does next to a tensor-core dot, run on the emulator: on sm_90a a wgmma
// whose operand was stored into the scratch space (a B computed in registers) runs on until
// its result is used, and the next lowering that takes the scratch space waits for it first
// (the emulator reports an operand overwritten while its group runs), before the branch when
// only one path takes it; an atomic add of a
// dot's accumulator adds each element from the registers that hold it, with no trip through
// shared memory. Small integer operands: every result is exact.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "dsl/builder.h"
#include "dsl/kernel.h"
#include "ops_test_util.h"
#include "tests/ptx_dump.h"

namespace tjops {
namespace {

using namespace tilejit::dsl;

constexpr int64_t kM = 64, kN = 64, kK = 16;

// A (M, K) bf16 and B (K, N) f32 operands and their product with B doubled, in exact arithmetic.
struct Operands {
  Host a{DType::bf16, size_t(kM * kK)}, b{DType::f32, size_t(kK * kN)};
  std::vector<LD> product(LD b_factor) const {
    std::vector<LD> out(size_t(kM * kN), 0);
    for (int64_t m = 0; m < kM; ++m)
      for (int64_t n = 0; n < kN; ++n)
        for (int64_t k = 0; k < kK; ++k) out[size_t(m * kN + n)] += a.get(size_t(m * kK + k)) * b_factor * b.get(size_t(k * kN + n));
    return out;
  }
};

Operands random_operands(Rng& rng) {
  Operands o;
  o.a = random_host(DType::bf16, size_t(kM * kK), rng, -3, 3);
  o.b = random_host(DType::f32, size_t(kK * kN), rng, -3, 3);
  for (Host* h : {&o.a, &o.b})
    for (size_t i = 0; i < h->size(); ++i) h->set(i, std::round(h->get(i)));
  return o;
}

Tile matrix_offsets(int64_t rows, int64_t cols) {
  return expand_dims(arange(0, rows), 1) * cols + expand_dims(arange(0, cols), 0);
}

// The text of `ptx` from the first `from` on.
std::string after(const std::string& ptx, const std::string& from) {
  size_t at = ptx.find(from);
  return at == std::string::npos ? std::string() : ptx.substr(at);
}

// out = a · (2 b) + the column sums of c (a reduction across the warps, through the scratch
// space), c loaded after the dot.
TEST(DotNeighbours, AWgmmaReadingTheScratchSpaceRunsOnUntilTheSpaceIsTakenAgain) {
  TJ_SEEDED_RNG(rng);
  static tilejit::JitKernel k(define_kernel(
      "scratch_reader_runs_on", {"a", "b", "c", "out"}, {},
      [](const Constants&, Ptr<DType::bf16> a, Ptr<DType::f32> b, Ptr<DType::f32> c, Ptr<DType::f32> out) {
        Tile computed_b = cast(load(b + matrix_offsets(kK, kN)) * 2.0, DType::bf16);
        Tile acc = dot(load(a + matrix_offsets(kM, kK)), computed_b, zeros({kM, kN}, DType::f32));
        Tile column_sums = sum(load(c + matrix_offsets(kM, kN)), 0);
        store(out + matrix_offsets(kM, kN), acc + expand_dims(column_sums, 0));
      }));
  Device& device = Device::by_name("emu:sm_90a");
  Operands o = random_operands(rng);
  Host c = random_host(DType::f32, size_t(kM * kN), rng, -50, 50);
  for (size_t i = 0; i < c.size(); ++i) c.set(i, std::round(c.get(i)));
  Tensor out = poisoned(DType::f32, {kM * kN}, device);
  std::vector<std::string> ptx = tilejit::testing_util::ptx_built_by([&] {
    bind(k, {{"num_warps", 4}})
        .launch(device.default_stream(), {1}, upload(o.a, {}, device), upload(o.b, {}, device), upload(c, {}, device),
                out);
  });
  std::vector<LD> want = o.product(2);
  for (int64_t m = 0; m < kM; ++m)
    for (int64_t n = 0; n < kN; ++n)
      for (int64_t r = 0; r < kM; ++r) want[size_t(m * kN + n)] += c.get(size_t(r * kN + n));
  expect_values("a · 2b + column sums of c", download(out), want, exact());
  ASSERT_EQ(ptx.size(), 1u);
  // The group is committed, c is loaded, and the wait comes when the reduction takes the space.
  const std::string running = after(ptx[0], "wgmma.commit_group");
  const size_t wait = running.find("wgmma.wait_group");
  ASSERT_NE(wait, std::string::npos);
  EXPECT_NE(running.substr(0, wait).find("ld.global"), std::string::npos) << "the dot waited at once";
}

// A block read through a descriptor at a column not proven a whole number of 16 bytes takes TMA
// (and the scratch space) or global loads, as a run-time test says: a running group reading the
// scratch space completes before that branch, on both paths. Columns 8 (TMA) and 3.
TEST(DotNeighbours, ABranchThatMayTakeTheScratchSpaceWaitsForItsReadersBeforeIt) {
  TJ_SEEDED_RNG(rng);
  static tilejit::JitKernel k(define_kernel(
      "scratch_reader_before_a_branch", {"a", "b", "src", "copy", "out", "column"}, {},
      [](const Constants&, Ptr<DType::bf16> a, Ptr<DType::f32> b, TensorDesc<DType::bf16> src, Ptr<DType::bf16> copy,
         Ptr<DType::f32> out, Scalar<DType::i32> column) {
        Tile computed_b = cast(load(b + matrix_offsets(kK, kN)) * 2.0, DType::bf16);
        Tile acc = dot(load(a + matrix_offsets(kM, kK)), computed_b, zeros({kM, kN}, DType::f32));
        store(copy + matrix_offsets(16, 32), desc_load(src, {0, column}));
        store(out + matrix_offsets(kM, kN), acc);
      }));
  Device& device = Device::by_name("emu:sm_90a");
  for (int32_t column : {8, 3}) {
    SCOPED_TRACE(column);
    Operands o = random_operands(rng);
    Host src(DType::bf16, 16 * 64);
    for (size_t i = 0; i < src.size(); ++i) src.set(i, std::round(rng.uniform(-100, 100)));
    Tensor src_tensor = upload(src, {16, 64}, device), copy = poisoned(DType::bf16, {16 * 32}, device),
           out = poisoned(DType::f32, {kM * kN}, device);
    bind(k, {{"num_warps", 4}})
        .launch(device.default_stream(), {1}, upload(o.a, {}, device), upload(o.b, {}, device),
                TensorDescriptor::of(src_tensor, {16, 32}), copy, out, column);
    expect_values("a · 2b", download(out), o.product(2), exact());
    std::vector<LD> block;
    for (int64_t r = 0; r < 16; ++r)
      for (int64_t c = 0; c < 32; ++c) block.push_back(src.get(size_t(r * 64 + column + c)));
    expect_values("the block at the column", download(copy), block, exact());
  }
}

// Two programs add a · b into out: each element from the thread whose accumulator holds it.
TEST(DotNeighbours, AnAtomicAddOfADotAccumulatorStaysInItsRegisters) {
  TJ_SEEDED_RNG(rng);
  static tilejit::JitKernel k(define_kernel(
      "atomic_add_of_dot", {"a", "b", "out"}, {}, [](const Constants&, Ptr<DType::bf16> a, Ptr<DType::f32> b, Ptr<DType::f32> out) {
        Tile acc = dot(load(a + matrix_offsets(kM, kK)), cast(load(b + matrix_offsets(kK, kN)), DType::bf16),
                       zeros({kM, kN}, DType::f32));
        atomic_add(out + matrix_offsets(kM, kN), acc);
      }));
  for (const char* arch : {"emu:sm_90a", "emu:sm_80"}) {
    SCOPED_TRACE(arch);
    Device& device = Device::by_name(arch);
    Operands o = random_operands(rng);
    Host zeros_host(DType::f32, size_t(kM * kN));
    Tensor out = upload(zeros_host, {}, device);
    std::vector<std::string> ptx = tilejit::testing_util::ptx_built_by([&] {
      bind(k, {{"num_warps", 4}}).launch(device.default_stream(), {2}, upload(o.a, {}, device), upload(o.b, {}, device), out);
    });
    std::vector<LD> want = o.product(1);
    for (LD& v : want) v *= 2;
    expect_values("2 (a · b)", download(out), want, exact());
    ASSERT_EQ(ptx.size(), 1u);
    const std::string product = std::string(arch) == "emu:sm_90a" ? "wgmma.wait_group" : "mma.sync";
    const std::string adds = after(ptx[0].substr(ptx[0].rfind(product)), "atom.global");
    ASSERT_FALSE(adds.empty());
    EXPECT_EQ(after(ptx[0].substr(ptx[0].rfind(product)), "st.shared"), std::string()) << "through shared memory";
  }
}

}  // namespace
}  // namespace tjops
