// The tensor-core GEMM swept over tile shapes and warp counts, for each operand pairing on
// sm_80, sm_89 and sm_90a, unpipelined and pipelined, A and B stored as they are multiplied
// and transposed; and on sm_90a through tensor descriptors (TMA), in every schedule: consumer
// warps issuing the copies or a producer warpgroup, one program per tile or persistent
// (label slow: hundreds of kernels through the emulator).
#include <gtest/gtest.h>

#include "tensor_core_check.h"

namespace tjops {
namespace {

class TensorCoreSweep : public ::testing::TestWithParam<TensorCoreCase> {};

TEST_P(TensorCoreSweep, MatchesTheReference) { check_tensor_core_gemm(GetParam()); }

std::vector<TensorCoreCase> sweep() {
  struct Operands {
    DType a, b;
    int precision;
    int64_t min_k;  // the instruction's K
  };
  const Operands operands[] = {{DType::f16, DType::f16, 0, 16},       {DType::bf16, DType::bf16, 0, 16},
                               {DType::f32, DType::f32, 0, 8},        {DType::f32, DType::f32, 2, 8},
                               {DType::i8, DType::i8, 0, 32},         {DType::f8e4m3, DType::f8e5m2, 0, 32},
                               {DType::f8e5m2, DType::f8e4m3, 0, 32}};
  struct Tile {
    int64_t m, n;
    int warps;
  };
  const Tile tiles[] = {{16, 8, 1}, {16, 32, 1}, {32, 16, 2}, {64, 64, 4}, {128, 32, 4}, {32, 128, 8}, {128, 128, 8}};
  std::vector<TensorCoreCase> out;
  for (const char* arch : {"sm_80", "sm_89", "sm_90a"})
    for (const Operands& o : operands)
      for (const Tile& t : tiles)
        for (int64_t k_steps : {1, 2}) {
          int64_t bk = o.min_k * k_steps;
          out.push_back({o.a, o.b, arch, o.precision, t.m, t.n, bk, t.warps, t.m + 3, 2 * t.n - 5, 3 * bk - 1, 1,
                         /*b_transposed=*/k_steps == 2,
                         /*a_transposed=*/k_steps == 2});
        }
  // Pipelined (cp.async) with 2 and 4 stages: multiples of 16 so that rows are aligned, a
  // partial last K step, M and N edges; small tiles exercise copies narrower than 16 bytes.
  for (const char* arch : {"sm_80", "sm_89", "sm_90a"})
    for (const Operands& o : operands)
      for (const Tile& t : tiles)
        for (int stages : {2, 4})
          out.push_back({o.a, o.b, arch, o.precision, t.m, t.n, o.min_k, t.warps, t.m + 16, 2 * t.n + 16,
                         5 * o.min_k + 16, stages, /*b_transposed=*/stages == 4, /*a_transposed=*/stages == 2});
  // Through TMA on sm_90a (the 16- and 8-bit operands, which wgmma reads from shared memory;
  // 8-bit B as (N, K) with 4 stages, else given (K, N): staged as given and stored transposed
  // at each step into its slot's own tile, in flight with 3 stages): whole warpgroups, 2 to 4
  // stages, several laps around the ring, edges in M and N, each schedule.
  const Tile warpgroup_tiles[] = {{64, 64, 4}, {128, 64, 4}, {64, 128, 4}, {128, 128, 8}};
  for (const Operands& o : operands) {
    if (o.a == DType::f32) continue;
    bool eight_bit = o.min_k == 32;
    for (const Tile& t : warpgroup_tiles)
      for (int stages : {2, 3, 4})
        for (bool warp_specialize : {false, true})
          for (bool persistent : {false, true}) {
            int64_t bk = 2 * o.min_k;  // 64-byte rows
            TensorCoreCase c{o.a, o.b, "sm_90a", o.precision, t.m, t.n, bk, t.warps, 2 * t.m + 3, 2 * t.n + 16,
                             (stages + 2) * bk, stages, /*b_transposed=*/eight_bit ? stages == 4 : stages == 3};
            c.descriptors = true, c.warp_specialize = warp_specialize, c.persistent = persistent;
            out.push_back(c);
          }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Tiles, TensorCoreSweep, ::testing::ValuesIn(sweep()),
                         [](const auto& info) { return tensor_core_case_name(info.param); });

}  // namespace
}  // namespace tjops
