// The slow sweep of the norm ops: hidden sizes around every power of two up to 16384 (in
// registers, several rows per tile, walked in blocks, and the edges between), with rank-1 to
// rank-3 x, every dtype pair, LayerNorm with and without zero-centered gamma and RMSNorm, each
// forward (with its fp8 copy) and backward against the long-double references.
#include "tests/ops/norms_test_util.h"

namespace tjnorms {
namespace {

std::vector<NormCase> sweep_cases() {
  const int64_t hidden_sizes[] = {2, 31, 32, 33, 127, 255, 256, 257, 1023, 1025, 4095, 4097, 8191, 8192, 12289, 16384};
  std::vector<NormCase> cases;
  size_t index = 0;
  for (int64_t h : hidden_sizes)
    for (const auto& [x, gamma] : kNormDTypes)
      for (int kind = 0; kind < 3; ++kind, ++index) {  // LayerNorm, zero-centered LayerNorm, RMSNorm
        const int64_t rows = std::max<int64_t>(1, 8192 / h);
        const std::vector<int64_t> shapes[] = {{rows, h}, {1, rows, h}, {h}};
        const std::vector<int64_t>& shape = shapes[(index / 3) % 3];
        cases.push_back({kind != 2, shape, x, gamma, kind == 1, index % 2 ? 1e-5f : 1e-6f});
      }
  return cases;
}

class NormsSweep : public ::testing::TestWithParam<NormCase> {};

TEST_P(NormsSweep, ForwardAndBackward) {
  const NormCase c = GetParam();
  TJ_SEEDED_RNG(rng);
  SCOPED_TRACE(c.describe());
  const NormInputs in = norm_inputs(c, rng);
  check_forward_and_backward(c, in, rng);
}

INSTANTIATE_TEST_SUITE_P(Shapes, NormsSweep, ::testing::ValuesIn(sweep_cases()),
                         [](const auto& info) { return std::to_string(info.index) + "_" + case_name(info.param); });

}  // namespace
}  // namespace tjnorms
