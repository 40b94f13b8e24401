// The numerics check of the tensor-core GEMM (tests/tensor_core_gemm.h) on the emulator of
// one target: fresh random operands, a poisoned output, a double-precision reference from
// the operands as stored, and a tolerance by operand type relative to the sum of |products|.
#pragma once

#include <cmath>
#include <string>
#include <string_view>

#include "ops_test_util.h"
#include "runtime/emu/tensor_core_numerics.h"
#include "../ptx_dump.h"
#include "../tensor_core_gemm.h"

namespace tjops {

struct TensorCoreCase {
  DType a, b;
  const char* arch;
  int precision;  // of f32 operands: 0 tf32, 1 ieee, 2 tf32x3
  int64_t block_m, block_n, block_k;
  int warps;
  int64_t m, n, k;  // the problem
  int stages = 1;   // num_stages: from 2 on, operand loads are pipelined through cp.async where they qualify
  bool b_transposed = false;  // B stored as (N, K)
  bool a_transposed = false;  // A stored as (K, M)
  bool descriptors = false;   // A and B read through tensor descriptors (TMA on sm_90a); A not transposed
  bool warp_specialize = false;  // with descriptors: a producer warpgroup issues the copies (sm_90a)
  bool persistent = false;       // with descriptors: two programs loop over the output tiles
  int cluster = 1;  // with descriptors, one tile per program: clusters of cluster x cluster CTAs
  bool a_computed = false;  // A computed in registers before the dot (wgmma's register form on sm_90a)
};

inline TensorCoreCase with_a_computed(TensorCoreCase c) {
  c.a_computed = true;
  return c;
}

inline std::string tensor_core_case_name(const TensorCoreCase& c) {
  static constexpr const char* precisions[] = {"tf32", "ieee", "tf32x3"};
  std::string name = name_of(c.a) + "x" + name_of(c.b) + "_" + c.arch;
  if (c.a == DType::f32) name += std::string("_") + precisions[c.precision];
  return name + "_tile" + std::to_string(c.block_m) + "x" + std::to_string(c.block_n) + "x" + std::to_string(c.block_k) +
         "_w" + std::to_string(c.warps) + "_problem" + std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
         std::to_string(c.k) + (c.stages > 1 ? "_stages" + std::to_string(c.stages) : "") +
         (c.b_transposed ? "_bt" : "") + (c.a_transposed ? "_at" : "") + (c.descriptors ? "_desc" : "") + (c.warp_specialize ? "_ws" : "") +
         (c.persistent ? "_persistent" : "") + (c.cluster > 1 ? "_cluster" + std::to_string(c.cluster) : "") +
         (c.a_computed ? "_a_computed" : "");
}

inline void PrintTo(const TensorCoreCase& c, std::ostream* os) { *os << tensor_core_case_name(c); }

// Operands of moderate size, every finite fp8 value allowed, any i8.
inline Host random_gemm_operand(DType d, size_t n, Rng& rng) {
  Host h(d, n);
  for (size_t i = 0; i < n; ++i) {
    if (d == DType::i8) {
      h.set_raw(i, rng.bits());
    } else if (is_fp8(d)) {
      do h.set_raw(i, rng.bits() & 0xff);
      while (!std::isfinite(h.get(i)));
    } else {
      h.set(i, rng.uniform(-2, 2));
    }
  }
  return h;
}

// Whether the case's fp8 products are summed in the tensor cores' own accumulator (sm_80
// multiplies fp8 on the CUDA cores instead).
inline bool fp8_on_tensor_cores(const TensorCoreCase& c) { return is_fp8(c.a) && std::string_view(c.arch) != "sm_80"; }

// The emulator's fp8 tensor cores exactly (runtime/emu/tensor_core_numerics.h): every output
// a chain of k32 instructions over K in order (a DSL dot chains every K step), each a function
// of its C and 32 products alone, so the result does not depend on the tiling.
inline std::vector<LD> fp8_tensor_core_model(const Host& a, const Host& b, int64_t m, int64_t n, int64_t k) {
  std::vector<LD> out(size_t(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0;
      for (int64_t k0 = 0; k0 < k; k0 += 32)
        acc = tilejit::emu::tensor_core_result(tilejit::emu::Encoding::e4m3, acc, 32, [&](int t) {
          return k0 + t < k ? double(a.get(size_t(i * k + k0 + t)) * b.get(size_t((k0 + t) * n + j))) : 0.0;
        });
      out[size_t(i * n + j)] = acc;
    }
  return out;
}

// The relative error allowed against sum |a_ik * b_kj|: tf32 rounds each operand to 11
// significant bits; fp8 products are summed in the tensor cores' own accumulator (on a GPU,
// within fp8_chain_error; the emulator is checked against its model exactly); the other
// operand types multiply exactly and round once per mma into f32.
inline double tensor_core_tolerance(const TensorCoreCase& c) {
  if (c.a == DType::f32 && c.precision == 0) return 2e-3;
  if (fp8_on_tensor_cores(c)) return 1e-5 + fp8_chain_error((c.k + 31) / 32);
  return 1e-5;
}

// A row-major (rows, cols) matrix as the kernel reads it: as is, or transposed.
inline Host stored(const Host& x, int64_t rows, int64_t cols, bool transposed) {
  if (!transposed) return x;
  Host t(x.dtype, x.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t.set_raw(size_t(c * rows + r), x.raw(size_t(r * cols + c)));
  return t;
}

template <DType DA, DType DB>
void run_tensor_core_desc_case(const TensorCoreCase& c, const Host& a, const Host& b, Tensor& out, Device& device,
                               Dim3 grid) {
  static JitKernel kernel(testing_kernels::tensor_core_gemm_desc<DA, DB>());
  Tensor a_tensor = upload(a, {}, device), b_tensor = upload(stored(b, c.k, c.n, c.b_transposed), {}, device);
  TensorDescriptor a_desc{a_tensor.data(), DA, {c.m, c.k}, c.k, {c.block_m, c.block_k}, {}};
  TensorDescriptor b_desc = c.b_transposed
                                ? TensorDescriptor{b_tensor.data(), DB, {c.n, c.k}, c.k, {c.block_n, c.block_k}, {}}
                                : TensorDescriptor{b_tensor.data(), DB, {c.k, c.n}, c.n, {c.block_k, c.block_n}, {}};
  // Whole clusters: CTAs past the edges compute with their cluster and store nothing.
  auto clusters = [&](uint32_t n) { return (n + uint32_t(c.cluster) - 1) / uint32_t(c.cluster) * uint32_t(c.cluster); };
  bind(kernel, {{"PRECISION", c.precision}, {"num_warps", c.warps}, {"num_stages", c.stages},
                {"B_TRANSPOSED", c.b_transposed}, {"warp_specialize", c.warp_specialize}, {"PERSISTENT", c.persistent},
                {"cluster_x", c.cluster}, {"cluster_y", c.cluster}})
      .launch(device.default_stream(), c.persistent ? Dim3{2, 1, 1} : Dim3{clusters(grid.x), clusters(grid.y), 1},
              a_desc, b_desc, out, int32_t(c.m), int32_t(c.n), int32_t(c.k));
}

template <DType DA, DType DB>
void run_tensor_core_case(const TensorCoreCase& c, const Host& a, const Host& b, Tensor& out, Device& device) {
  static JitKernel kernel(testing_kernels::tensor_core_gemm<DA, DB>());
  Dim3 grid{static_cast<uint32_t>((c.m + c.block_m - 1) / c.block_m), static_cast<uint32_t>((c.n + c.block_n - 1) / c.block_n),
            1};
  if (c.descriptors) return run_tensor_core_desc_case<DA, DB>(c, a, b, out, device, grid);
  bind(kernel, {{"BLOCK_M", c.block_m}, {"BLOCK_N", c.block_n}, {"BLOCK_K", c.block_k}, {"PRECISION", c.precision},
                {"num_warps", c.warps}, {"num_stages", c.stages}, {"A_TRANSPOSED", c.a_transposed},
                {"B_TRANSPOSED", c.b_transposed}, {"A_COMPUTED", c.a_computed}})
      .launch(device.default_stream(), grid, upload(stored(a, c.m, c.k, c.a_transposed), {}, device),
              upload(stored(b, c.k, c.n, c.b_transposed), {}, device), out, int32_t(c.m),
              int32_t(c.n), int32_t(c.k));
}

// On `device` (a GPU runs the lowering of its own arch, not c.arch).
inline void check_tensor_core_gemm(const TensorCoreCase& c, Device& device) {
  TJ_SEEDED_RNG(rng);
  Host a = random_gemm_operand(c.a, size_t(c.m * c.k), rng), b = random_gemm_operand(c.b, size_t(c.k * c.n), rng);
  DType acc = c.a == DType::i8 ? DType::i32 : DType::f32;
  Tensor out = poisoned(acc, {c.m * c.n}, device);
  auto launch = [&](auto da, auto db) { run_tensor_core_case<decltype(da)::value, decltype(db)::value>(c, a, b, out, device); };
  using E4 = DT<DType::f8e4m3>;
  using E5 = DT<DType::f8e5m2>;
  std::vector<std::string> ptx = testing_util::ptx_built_by([&] {
    if (c.a == DType::f8e4m3) {
      c.b == DType::f8e4m3 ? launch(E4{}, E4{}) : launch(E4{}, E5{});
    } else if (c.a == DType::f8e5m2) {
      c.b == DType::f8e4m3 ? launch(E5{}, E4{}) : launch(E5{}, E5{});
    } else {
      dispatch(c.a, [&](auto d) {
        if constexpr (decltype(d)::value == DType::f16 || decltype(d)::value == DType::bf16 ||
                      decltype(d)::value == DType::f32 || decltype(d)::value == DType::i8)
          launch(d, d);
        else
          ADD_FAILURE() << "no tensor-core GEMM for " << name_of(c.a);
      });
    }
  });
  // Where a producer warpgroup was asked for and applies, the warps split once (before the
  // loop over tiles when persistent). The emulator compiles each case's kernel afresh.
  if (device.info().kind == DeviceKind::emu && c.descriptors && c.warp_specialize && std::string(c.arch) == "sm_90a") {
    ASSERT_EQ(ptx.size(), 1u);
    size_t first = ptx[0].find("setmaxnreg.inc");
    EXPECT_NE(first, std::string::npos);
    EXPECT_EQ(ptx[0].find("setmaxnreg.inc", first + 1), std::string::npos);
  }

  // An A computed in registers stays there for sm_90a's wgmma (not mma.sync).
  if (device.info().kind == DeviceKind::emu && c.a_computed && std::string(c.arch) == "sm_90a" && c.a != DType::f32) {
    ASSERT_EQ(ptx.size(), 1u);
    EXPECT_NE(ptx[0].find("wgmma.mma_async"), std::string::npos);
    EXPECT_EQ(ptx[0].find("mma.sync"), std::string::npos);
  }
  std::vector<LD> got = download(out).values();
  MatmulReference ref = matmul_reference(a, b, c.m, c.n, c.k);
  auto where = [&](size_t i) { return "row " + std::to_string(i / size_t(c.n)) + " col " + std::to_string(i % size_t(c.n)); };
  if (acc == DType::i32)
    expect_values(tensor_core_case_name(c), got, ref.sum, exact(), where);
  else if (fp8_on_tensor_cores(c) && device.info().kind == DeviceKind::emu)
    expect_values(tensor_core_case_name(c), got, fp8_tensor_core_model(a, b, c.m, c.n, c.k), exact(), where);
  else
    expect_scaled(tensor_core_case_name(c), got, ref.sum, ref.magnitude, tensor_core_tolerance(c), where);
}

inline void check_tensor_core_gemm(const TensorCoreCase& c) {
  check_tensor_core_gemm(c, Device::by_name(std::string("emu:") + c.arch));
}

}  // namespace tjops
