// The slow sweep of scaled_dot: random problems of rank 2 to 4 with random dimension numbers
// (dims of each role anywhere, in any pairing order), random operand and scale dtypes (or no
// scale), random block sizes per contracting dim and side, both output dtypes, bigger shapes and
// three architectures; and mx_quantize on large random inputs. Every problem is checked against
// the long-double reference.
#include <numeric>

#include "tests/ops/scaled_dot_test_util.h"

namespace tjsdot {
namespace {

constexpr DType kOperands[] = {DType::f8e4m3, DType::f8e5m2, DType::bf16, DType::f16, DType::f32};
constexpr int64_t kBlocks[] = {2, 3, 4, 8, 16, 32, 64};

template <typename T, size_t N>
T pick(const T (&values)[N], Rng& rng) {
  return values[static_cast<size_t>(rng.integer(0, N - 1))];
}

std::vector<int> shuffled(int n, Rng& rng) {
  std::vector<int> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  std::shuffle(v.begin(), v.end(), rng.gen());
  return v;
}

std::string numbers_name(const DotDimensionNumbers& n) {
  auto list = [](const std::vector<int>& v) {
    std::string s = "(";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s + ")";
  };
  return "((" + list(n.lhs_contracting) + ", " + list(n.rhs_contracting) + "), (" + list(n.lhs_batch) + ", " +
         list(n.rhs_batch) + "))";
}

// One random problem: roles placed at random, sizes that every chosen block divides.
ScaledDotCall random_problem(Rng& rng, std::string& name) {
  const int rank = static_cast<int>(rng.integer(2, 4));
  const int batch = static_cast<int>(rng.integer(0, rank - 2));
  const int contracting = static_cast<int>(rng.integer(1, std::min(2, rank - batch)));
  std::vector<int> lhs_dims = shuffled(rank, rng), rhs_dims = shuffled(rank, rng);
  DotDimensionNumbers n;
  Shape lhs_shape(static_cast<size_t>(rank)), rhs_shape(static_cast<size_t>(rank));
  std::vector<int64_t> lhs_blocks(static_cast<size_t>(rank), 1), rhs_blocks(static_cast<size_t>(rank), 1);
  const DType operands[2] = {pick(kOperands, rng), pick(kOperands, rng)};
  std::optional<DType> scales[2];
  for (auto& s : scales)
    if (rng.coin(0.85)) s = rng.coin() ? DType::e8m0 : DType::bf16;
  for (int i = 0; i < batch; ++i) {
    const int l = lhs_dims[static_cast<size_t>(i)], r = rhs_dims[static_cast<size_t>(i)];
    n.lhs_batch.push_back(l), n.rhs_batch.push_back(r);
    lhs_shape[static_cast<size_t>(l)] = rhs_shape[static_cast<size_t>(r)] = rng.integer(1, 3);
  }
  for (int i = batch; i < batch + contracting; ++i) {
    const int l = lhs_dims[static_cast<size_t>(i)], r = rhs_dims[static_cast<size_t>(i)];
    n.lhs_contracting.push_back(l), n.rhs_contracting.push_back(r);
    const int64_t lb = pick(kBlocks, rng), rb = pick(kBlocks, rng);
    lhs_blocks[static_cast<size_t>(l)] = lb, rhs_blocks[static_cast<size_t>(r)] = rb;
    const int64_t unit = std::lcm(lb, rb);
    lhs_shape[static_cast<size_t>(l)] = rhs_shape[static_cast<size_t>(r)] =
        unit * rng.integer(1, std::max<int64_t>(1, (contracting == 1 ? 320 : 48) / unit));
  }
  const int64_t free_size = rank == 2 ? 150 : rank == 3 ? 24 : 8;  // keeps the reference's work bounded
  for (int i = batch + contracting; i < rank; ++i) {
    lhs_shape[static_cast<size_t>(lhs_dims[static_cast<size_t>(i)])] = rng.integer(1, free_size);
    rhs_shape[static_cast<size_t>(rhs_dims[static_cast<size_t>(i)])] = rng.integer(1, free_size);
  }
  ScaledDotCall c;
  make_operand(c.lhs, c.lhs_scale, operands[0], scales[0], lhs_shape, lhs_blocks, rng);
  make_operand(c.rhs, c.rhs_scale, operands[1], scales[1], rhs_shape, rhs_blocks, rng);
  c.options = ScaledDotOptions{n, rng.coin() ? DType::bf16 : DType::f32};
  auto scale_name = [](const std::optional<HostTensor>& s) {
    return s ? name_of(s->values.dtype) + shape_name(s->shape) : std::string("none");
  };
  name = name_of(operands[0]) + shape_name(lhs_shape) + " x " + name_of(operands[1]) + shape_name(rhs_shape) +
         ", scales " + scale_name(c.lhs_scale) + " x " + scale_name(c.rhs_scale) + ", dims " + numbers_name(n) +
         ", out " + name_of(c.options.preferred_element_type);
  return c;
}

TEST(ScaledDotSweep, RandomProblems) {
  TJ_SEEDED_RNG(rng);
  for (int i = 0; i < 300; ++i) {
    std::string name;
    ScaledDotCall c = random_problem(rng, name);
    expect_scaled_dot("problem " + std::to_string(i) + ": " + name, c);
    if (HasFailure()) break;
  }
}

TEST(ScaledDotSweep, Architectures) {
  TJ_SEEDED_RNG(rng);
  for (const char* arch : {"emu:sm_80", "emu:sm_89", "emu:sm_90a"})
    for (int i = 0; i < 40; ++i) {
      std::string name;
      ScaledDotCall c = random_problem(rng, name);
      expect_scaled_dot(std::string(arch) + " problem " + std::to_string(i) + ": " + name, c, Device::by_name(arch));
      if (HasFailure()) return;
    }
}

TEST(ScaledDotSweep, LargerMatrices) {
  TJ_SEEDED_RNG(rng);
  for (int64_t block : {2, 32, 64})
    for (DType operand : {DType::f8e4m3, DType::bf16}) {
      ScaledDotCall c;
      make_operand(c.lhs, c.lhs_scale, operand, DType::e8m0, {2, 200, 512}, {1, 1, block}, rng);
      make_operand(c.rhs, c.rhs_scale, operand, DType::e8m0, {2, 512, 260}, {1, block, 1}, rng);
      expect_scaled_dot(name_of(operand) + " 2 x 200 x 260, K 512, block " + std::to_string(block), c);
    }
}

TEST(MxQuantizeSweep, LargeRandomInputs) {
  TJ_SEEDED_RNG(rng);
  for (DType d : {DType::f32, DType::bf16, DType::f16}) {
    const Shape shape = {37, 4096};
    Host x = random_mx_input(d, shape, d == DType::f16 ? 12 : 100, rng);
    expect_mx_quantized(name_of(d), x, shape);
  }
}

}  // namespace
}  // namespace tjsdot
