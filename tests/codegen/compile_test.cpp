// Every registered kernel and every DSL op compiles to PTX that ptxas accepts for sm_80 and
// sm_90a; compiles are deterministic and thread-safe.
#include <gtest/gtest.h>

#include <thread>

#include "codegen/compiler.h"
#include "ptx_text.h"
#include "ptxas_check.h"
#include "ops/kernels/registry.h"

namespace tilejit::codegen {
namespace {

using namespace tilejit::dsl;

const char* const kArchs[] = {"sm_80", "sm_90a"};

class RegisteredKernels : public testing::TestWithParam<std::string> {};

TEST_P(RegisteredKernels, CompileForEveryTarget) {
  const Kernel& kernel = ops::find_kernel(GetParam()).kernel;
  for (bool specialized : {false, true}) {
    auto fn = kernel.trace(kernel.constants(), specialized ? kernel.aligned_facts() : std::vector<ir::ArgFacts>{});
    for (const char* arch : kArchs) {
      CompiledKernel k = compile_to_ptx(*fn, find_target(arch));
      EXPECT_NE(k.ptx.find(".entry " + kernel.name()), std::string::npos);
      EXPECT_NE(k.ptx.find(".maxntid 128"), std::string::npos);
      EXPECT_NE(k.ptx.find(std::string(".target ") + arch), std::string::npos);
      expect_ptxas_accepts(k, true);
    }
  }
}

TEST_P(RegisteredKernels, PtxIsByteIdenticalAcrossCompiles) {
  const Kernel& kernel = ops::find_kernel(GetParam()).kernel;
  auto first = compile_to_ptx(*kernel.trace(kernel.constants()), find_target("sm_90a"));
  auto second = compile_to_ptx(*kernel.trace(kernel.constants()), find_target("sm_90a"));
  EXPECT_EQ(first.ptx, second.ptx);
}

std::vector<std::string> registered_names() {
  std::vector<std::string> names;
  for (auto& k : ops::registered_kernels()) names.push_back(k.kernel.name());
  return names;
}

INSTANTIATE_TEST_SUITE_P(All, RegisteredKernels, testing::ValuesIn(registered_names()),
                         [](const auto& info) { return info.param; });

TEST(Compile, ParallelCompilesMatchSerial) {
  const Kernel& kernel = ops::find_kernel("gemm").kernel;
  auto fn = kernel.trace(kernel.constants());
  std::string serial = compile_to_ptx(*fn, find_target("sm_80")).ptx;
  std::vector<std::string> results(8);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      auto own = kernel.trace(kernel.constants());
      results[i] = compile_to_ptx(*own, find_target("sm_80")).ptx;
    });
  for (auto& t : threads) t.join();
  for (auto& r : results) EXPECT_EQ(r, serial);
}

TEST(Compile, AlignmentFactsGiveVectorAccesses) {
  const Kernel& kernel = ops::find_kernel("vector_add").kernel;
  auto generic = compile_to_ptx(*kernel.trace(kernel.constants()), find_target("sm_90a"));
  auto aligned = compile_to_ptx(*kernel.trace(kernel.constants(), kernel.aligned_facts()), find_target("sm_90a"));
  EXPECT_EQ(generic.ptx.find("ld.global.v4"), std::string::npos);
  EXPECT_NE(aligned.ptx.find("ld.global.v4.b32"), std::string::npos);
  EXPECT_NE(aligned.ptx.find("st.global.v4.b32"), std::string::npos);
}

TEST(Compile, LoopInductionVariablesKeepVectorAccesses) {
  // a_ptrs + k with k stepping by BLOCK_K: the A tile still loads 16 bytes at a time.
  const Kernel& kernel = ops::find_kernel("gemm").kernel;
  auto k = compile_to_ptx(*kernel.trace(kernel.constants(), kernel.aligned_facts()), find_target("sm_90a"));
  size_t vector_loads = 0;
  for (size_t at = k.ptx.find("ld.global.v4"); at != std::string::npos; at = k.ptx.find("ld.global.v4", at + 1))
    ++vector_loads;
  EXPECT_EQ(vector_loads, 2u) << "one vector load each for the A and B tiles";
  EXPECT_EQ(k.ptx.find("ld.global.b32"), std::string::npos);
}

// out[r, c] = x[r * row_stride + (c % n) * col_stride]: the pattern of every strided op
// (gemm wraps its column offsets the same way).
Kernel strided_copy_kernel() {
  return define_kernel("strided_copy", {"x", "out", "n", "row_stride", "col_stride"}, {{"B", 64}},
                       [](const Constants& c, Ptr<f32> x, Ptr<f32> out, Scalar<i32> n, Scalar<i32> row_stride,
                          Scalar<i32> col_stride) {
                         Tile r = expand_dims(arange(0, c["B"]), 1), cols = expand_dims(arange(0, c["B"]) % n, 0);
                         store(out + r * c["B"] + cols, load(x + r * row_stride + cols * col_stride));
                       });
}

TEST(Compile, UnitStrideArgumentsGiveVectorAccesses) {
  Kernel kernel = strided_copy_kernel();
  auto compile = [&](const std::vector<ir::ArgFacts>& facts) {
    return compile_to_ptx(*kernel.trace(kernel.constants(), facts), find_target("sm_90a")).ptx;
  };
  auto facts = kernel.aligned_facts();  // pointers 16-byte aligned, integers multiples of 16
  EXPECT_EQ(compile(facts).find("ld.global.v4"), std::string::npos) << "col_stride may be anything";
  facts[4] = ir::ArgFacts{};
  facts[4].equals_one = true;
  std::string unit = compile(facts);
  EXPECT_NE(unit.find("ld.global.v4.b32"), std::string::npos) << "col_stride == 1, n % 16 == 0: runs of 4 stay";
  EXPECT_NE(unit.find("st.global.v4.b32"), std::string::npos);
  facts[2].divisibility = 1;  // c % n may wrap inside any run
  EXPECT_EQ(compile(facts).find("ld.global.v4"), std::string::npos);
}

// Rows of f16 at a row stride known to be a multiple of 16, 8, 4, 2 or 1 elements: each
// row's 64 elements (128 bytes) are read 16, 16, 8, 4 and 2 bytes at a time.
TEST(Compile, FinerDivisibilityGivesNarrowerVectors) {
  Kernel kernel = define_kernel("f16_rows", {"x", "out", "row_stride"}, {{"B", 64}},
                                [](const Constants& c, Ptr<f16> x, Ptr<f16> out, Scalar<i32> row_stride) {
                                  Tile r = expand_dims(arange(0, c["B"]), 1), cols = expand_dims(arange(0, c["B"]), 0);
                                  store(out + r * c["B"] + cols, load(x + r * row_stride + cols));
                                });
  struct Case {
    int64_t pointer_alignment, stride_divisibility;
    const char* load;
  };
  for (const Case& c : {Case{16, 16, "ld.global.v4.b32"}, Case{16, 8, "ld.global.v4.b32"},
                        Case{16, 4, "ld.global.v2.b32"}, Case{16, 2, "ld.global.b32"}, Case{16, 1, "ld.global.b16"},
                        Case{8, 16, "ld.global.v2.b32"}, Case{4, 8, "ld.global.b32"}}) {
    SCOPED_TRACE(fmt::format("x aligned to {} bytes, row_stride % {} == 0", c.pointer_alignment, c.stride_divisibility));
    std::vector<ir::ArgFacts> facts = kernel.aligned_facts();
    facts[0].divisibility = c.pointer_alignment;
    facts[2].divisibility = c.stride_divisibility;
    CompiledKernel k = compile_to_ptx(*kernel.trace(kernel.constants(), facts), find_target("sm_80"));
    EXPECT_GT(count(k.ptx, std::string(c.load) + " "), 0u) << k.ptx;
    for (const char* wider : {"ld.global.v4.b32", "ld.global.v2.b32", "ld.global.b32", "ld.global.b16"}) {
      if (std::string(wider) == c.load) break;
      EXPECT_EQ(count(k.ptx, std::string(wider) + " "), 0u) << wider;
    }
    EXPECT_GT(count(k.ptx, "st.global.v4.b32 "), 0u) << "the output is aligned and contiguous";
    EXPECT_EQ(count(k.ptx, "st.global.b16 "), 0u);
    expect_ptxas_accepts(k, true);
  }
}

// Column offsets of rank 1 added to row offsets of rank 2 take a leading dim implicitly (numpy
// broadcasting): the accesses are as wide as with the dim expanded by hand.
TEST(Compile, ImplicitlyBroadcastOffsetsGiveVectorAccesses) {
  for (bool implicit : {false, true}) {
    SCOPED_TRACE(implicit ? "cols of rank 1" : "expand_dims(cols, 0)");
    Kernel kernel = define_kernel("rows", {"x", "out", "row_stride"}, {{"B", 64}},
                                  [implicit](const Constants& c, Ptr<f32> x, Ptr<f32> out, Scalar<i32> row_stride) {
                                    Tile rows = expand_dims(arange(0, c["B"]), 1), cols = arange(0, c["B"]);
                                    Tile col_offsets = implicit ? cols : expand_dims(cols, 0);
                                    store(out + rows * c["B"] + col_offsets, load(x + rows * row_stride + col_offsets));
                                  });
    std::string ptx = compile_to_ptx(*kernel.trace(kernel.constants(), kernel.aligned_facts()), find_target("sm_80")).ptx;
    EXPECT_GT(count(ptx, "ld.global.v4.b32 "), 0u);
    EXPECT_GT(count(ptx, "st.global.v4.b32 "), 0u);
    EXPECT_EQ(count(ptx, "ld.global.b32 "), 0u);
  }
}

// Offsets keep their runs through trans: out's offsets, built along dim 0 and transposed, run
// along the last dim, so the transposed tile (a column of x as a row of out) is stored 16 bytes
// a thread after its trip through shared memory.
TEST(Compile, TransposedOffsetsGiveVectorAccesses) {
  Kernel kernel = define_kernel("transpose", {"x", "out"}, {{"B", 64}}, [](const Constants& c, Ptr<f32> x, Ptr<f32> out) {
    Tile rows = expand_dims(arange(0, c["B"]), 1), cols = expand_dims(arange(0, c["B"]), 0);
    store(out + trans(rows + cols * c["B"]), trans(load(x + rows * c["B"] + cols)));
  });
  std::string ptx = compile_to_ptx(*kernel.trace(kernel.constants(), kernel.aligned_facts()), find_target("sm_80")).ptx;
  EXPECT_GT(count(ptx, "st.global.v4.b32 "), 0u) << ptx;
  EXPECT_EQ(count(ptx, "st.global.b32 "), 0u) << ptx;
}

// A thread's run of 2 to 8 bytes loads as one integer (masked or not), its bytes taken apart by
// shifts, not as a vector of i8 (each element its own 16-bit register in LLVM's lowering).
TEST(Compile, RunsOfBytesLoadAsOneWord) {
  for (bool masked : {false, true}) {
    SCOPED_TRACE(masked ? "masked" : "unmasked");
    Kernel kernel = define_kernel("bytes", {"x", "out", "n"}, {{"B", 256}},
                                  [masked](const Constants& c, Ptr<i8> x, Ptr<i32> out, Scalar<i32> n) {
                                    Tile offs = arange(0, c["B"]);  // 2 bytes per thread on 4 warps
                                    Tile v = masked ? load(x + offs, offs < n) : load(x + offs);
                                    store(out + offs, cast(v, DType::i32) << 23);
                                  });
    std::string ptx = compile_to_ptx(*kernel.trace(kernel.constants(), kernel.aligned_facts()), find_target("sm_90a")).ptx;
    EXPECT_EQ(count(ptx, "ld.global.b16 "), 1u) << ptx;
    EXPECT_EQ(count(ptx, "ld.global.v2.b8 "), 0u) << ptx;
  }
}

TEST(Compile, AValueRepeatedOverABlockLoadsOnce) {
  // A (64, 32) tile of one scale per block of 16 columns, x[row * 2 + (col >> 4)]: 16 elements
  // per thread on 4 warps, all in one block, so one load each (16 without the block's runs).
  for (bool masked : {false, true}) {
    SCOPED_TRACE(masked ? "masked" : "unmasked");
    Kernel kernel = define_kernel("block_scales", {"x", "out", "n"}, {},
                                  [masked](const Constants&, Ptr<i8> x, Ptr<i32> out, Scalar<i32> n) {
                                    Tile rows = expand_dims(arange(0, 64), 1), cols = expand_dims(arange(0, 32), 0);
                                    Tile at = x + rows * 2 + (cols >> 4);
                                    Tile v = masked ? load(at, rows < n) : load(at);
                                    store(out + rows * 32 + cols, cast(v, DType::i32));
                                  });
    std::string ptx = compile_to_ptx(*kernel.trace(kernel.constants(), kernel.aligned_facts()), find_target("sm_90a")).ptx;
    EXPECT_EQ(count(ptx, "ld.global"), 1u) << ptx;
  }
}

// exp2_flushing_subnormals is the single ex2.approx.ftz.f32; exp2 keeps libdevice's, which
// takes subnormal results (ex2.approx.f32, which ptxas expands to four instructions).
TEST(Compile, FlushingExp2IsOneFtzInstruction) {
  for (bool flushing : {false, true}) {
    SCOPED_TRACE(flushing ? "exp2_flushing_subnormals" : "exp2");
    Kernel kernel = define_kernel("exp2s", {"x", "out"}, {{"B", 128}}, [flushing](const Constants& c, Ptr<f32> x, Ptr<f32> out) {
      Tile offs = arange(0, c["B"]);
      Tile v = load(x + offs);
      store(out + offs, flushing ? exp2_flushing_subnormals(v) : exp2(v));
    });
    std::string ptx = compile_to_ptx(*kernel.trace(kernel.constants(), kernel.aligned_facts()), find_target("sm_90a")).ptx;
    EXPECT_EQ(count(ptx, "ex2.approx.ftz.f32 ") > 0, flushing) << ptx;
    EXPECT_EQ(count(ptx, "ex2.approx.f32 ") > 0, !flushing) << ptx;
  }
}

TEST(Compile, ReductionsUseShufflesAndSharedMemory) {
  const Kernel& kernel = ops::find_kernel("softmax").kernel;
  auto k = compile_to_ptx(*kernel.trace(kernel.constants()), find_target("sm_80"));
  EXPECT_NE(k.ptx.find("shfl.sync.bfly"), std::string::npos);
  EXPECT_NE(k.ptx.find("bar.sync"), std::string::npos);
  EXPECT_GT(k.shared_bytes, 0);
}

TEST(Compile, UnknownTargetIsAnError) {
  EXPECT_THROW(find_target("sm_12"), Error);
}

// A dot the tensor cores do not take is unrolled FMA by FMA in each thread: one too large for
// that is a clear error naming the dot, not a compile that runs for minutes (512 x 512 x 512 in
// 4 warps: 1048576 per thread).
TEST(Compile, ADotTooLargeToUnrollIsAnError) {
  auto ieee_dot = [](int64_t n) {
    return define_kernel("big_dot", {"x"}, {{"N", n}}, [](const Constants& c, Ptr<f32> x) {
      Tile r = arange(0, c["N"]);
      Tile offs = expand_dims(r, 1) * c["N"] + expand_dims(r, 0);
      Tile a = load(x + offs);
      store(x + offs, dot(a, a, zeros({c["N"], c["N"]}, DType::f32), Precision::ieee));
    });
  };
  Kernel big = ieee_dot(512);
  std::string msg;
  try {
    compile_to_ptx(*big.trace(big.constants()), find_target("sm_90a"));
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("compile_test.cpp:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("dot of [512x512] by [512x512] on the CUDA cores (f32 operands in ieee precision, sm_90a) "
                     "unrolls 1048576 multiply-adds per thread, more than 262144"),
            std::string::npos)
      << msg;
}

// One kernel that uses every op of the DSL, so every lowering is exercised and assembled.
Kernel every_op_kernel() {
  return define_kernel(
      "every_op", {"f", "h", "bh", "q", "q2", "s", "i", "l", "b", "n", "alpha"}, {{"B", 32}},
      [](const Constants& c, Ptr<f32> f, Ptr<f16> h, Ptr<bf16> bh, Ptr<f8e4m3> q, Ptr<f8e5m2> q2, Ptr<e8m0> s,
         Ptr<i32> i, Ptr<i64> l, Ptr<i8> b, Scalar<i32> n, Scalar<f32> alpha) {
        int64_t B = c["B"];
        Tile r = arange(0, B);
        Tile rows = expand_dims(r, 1), cols = expand_dims(r, 0);
        Tile offs = rows * B + cols;  // (B, B)
        Tile mask = (offs < n) || (offs % 3 == 1);
        Tile x = load(f + offs, mask, 1.5);
        Tile y = x * alpha + cast(program_id(1) - num_programs(2), DType::f32);
        y = where(y > 0.0, exp(y) + exp2(y) - log(abs(y) + 1) + log2(abs(y) + 2), sqrt(abs(y)) * rsqrt(abs(y) + 1));
        y = y + sin(y) * cos(y) + tanh(y) + erf(y) + sigmoid(y) + fma(y, y, 1.0);
        y = minimum(y, 100.0) / maximum(y, -100.0);
        Tile xi = cast(y, DType::i32);
        xi = ((xi / 3 + xi % 5 - (xi << 2) + (xi >> 1)) & 0xff) | (~xi ^ 7);
        Tile xb = cast(xi, DType::i8);
        store(b + offs, xb, !(offs == 5) && mask);
        store(l + offs, cast(xb, DType::i64) + cast(abs(-xi), DType::i64));
        // Every float format, with and without saturation, and their round trips.
        store(h + offs, cast(y, DType::f16));
        store(bh + offs, cast(cast(load(h + offs), DType::f32), DType::bf16));
        store(q + offs, cast(load(bh + offs), DType::f8e4m3, true));
        store(q2 + offs, cast(cast(load(q + offs), DType::f16), DType::f8e5m2));
        store(s + offs, cast(cast(load(q2 + offs), DType::f32), DType::e8m0));
        Tile back = cast(load(s + offs), DType::f32) + cast(cast(bitcast(load(i + offs), DType::f32) > 1.0, DType::i32), DType::f32);
        // Shapes, reductions, dot products of every input type.
        Tile t = trans(back);
        Tile flat = reshape(t, {B * B});
        store(f + reshape(offs, {B * B}), flat);
        store(f + r, sum(t, 1) + max(t, 0) + min(t, 1, false) + cast(argmax(t, 0) + argmin(t, -1), DType::f32));
        store(f + r + B, sum(sum(t, 0, true), 1));
        Tile d = dot(t, back, zeros({B, B}, DType::f32), Precision::ieee);
        d = dot(cast(t, DType::f16), cast(back, DType::f16), d);
        d = dot(cast(t, DType::bf16), cast(back, DType::bf16), d);
        d = dot(cast(t, DType::f8e4m3), cast(back, DType::f8e5m2), d);
        Tile di = dot(cast(t, DType::i8), cast(back, DType::i8));
        store(f + offs, d + cast(di, DType::f32), mask);
        // Control flow, atomics and print.
        Tile acc = for_range(0, n, 4, zeros({B}, DType::f32), [&](Tile k, Tile a) {
          std::vector<Tile> v = if_else(k > 8, [&] { return std::vector<Tile>{a + 1.0}; },
                                        [&] { return std::vector<Tile>{a * 2.0}; });
          return v[0];
        });
        if_then(n > 3, [&] { print("acc", {acc, n}); });
        atomic_add(f + r, acc, r < n);
        atomic_max(i + r, cast(acc, DType::i32));
        atomic_max(f + r, acc);
        atomic_cas(i + r, 0, 1);
        atomic_add(l + 0, scalar(1, DType::i64));
        static_check(B >= 16, "B must be at least 16");
      });
}

TEST(Compile, EveryOpLowersAndAssembles) {
  Kernel k = every_op_kernel();
  auto fn = k.trace(k.constants());
  for (const char* arch : kArchs) {
    CompiledKernel compiled = compile_to_ptx(*fn, find_target(arch));
    EXPECT_NE(compiled.ptx.find("atom.global"), std::string::npos);
    EXPECT_NE(compiled.ptx.find("vprintf"), std::string::npos);
    expect_ptxas_accepts(compiled, false);
  }
}

}  // namespace
}  // namespace tilejit::codegen
