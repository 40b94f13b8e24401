// gemm against a long-double reference of ops/gemm.h's definition, on the emulator: every
// operand pairing, transposes, batches (broadcast too), strided views, every epilogue step,
// split-K, both targets' lowerings, and every error.
#include <dlpack/dlpack.h>
#include <gtest/gtest.h>

#include "ops/gemm/gemm_launch.h"
#include "tests/error_message.h"
#include "tests/ops/gemm_check.h"
#include "tests/ptx_dump.h"

namespace {

using namespace tjops;

TEST(Gemm, EveryOperandPairing) {
  TJ_SEEDED_RNG(rng);
  for (DType d : {DType::f16, DType::bf16, DType::i8}) {
    SCOPED_TRACE(name_of(d));
    check_gemm(GemmCase{.a = d, .b = d}, rng);
  }
  for (auto precision : {dsl::Precision::tf32, dsl::Precision::tf32x3, dsl::Precision::ieee}) {
    SCOPED_TRACE(static_cast<int>(precision));
    GemmCase c{.a = DType::f32, .b = DType::f32};
    c.options.precision = precision;
    check_gemm(c, rng);
  }
  for (DType a : {DType::f8e4m3, DType::f8e5m2})
    for (DType b : {DType::f8e4m3, DType::f8e5m2}) {
      SCOPED_TRACE(name_of(a) + " x " + name_of(b));
      check_gemm(GemmCase{.a = a, .b = b}, rng);
    }
}

// An fp8 product over a long K of same-signed terms: the tensor cores cut each product to 13
// fraction bits of the running sum (runtime/emu/tensor_core_numerics.h), so a K loop chaining
// all 32 blocks of 128 into one accumulator loses about 7% of the sum, over four times what
// adding each block's product in f32 allows (gemm_check.h; that loses 6e-4 here). By default
// each block's product is added in f32 (ops/common/f32_dot.h); with fp8_fast_accumulation the
// whole loop chains, and its error shows it.
TEST(Gemm, Fp8SumsOverALongKStayWithinF32AccumulationUnlessFast) {
  TJ_SEEDED_RNG(rng);
  for (const char* device : {"emu:sm_90a", "emu:sm_89"}) {
    SCOPED_TRACE(device);
    GemmCase c{.a = DType::f8e4m3, .b = DType::f8e4m3, .m = 64, .n = 64, .k = 4096, .device = device,
               .positive = true};
    c.out_dtype = DType::f32;
    c.options.split_k = 1;
    const double split_bound = accumulation_error(c);
    EXPECT_LE(check_gemm(c, rng), split_bound);
    c.options.fp8_fast_accumulation = true;
    EXPECT_GT(check_gemm(c, rng), split_bound);
  }
}

// fp8 products of small integers over a long K, held to an f32 sum's error (gemm_check.h): a K
// block lost, counted twice or added from the wrong stage shows, where the bound for arbitrary
// fp8 values (about 1.6% of the sum of |products| per block) would hide it. Shapes that are not
// multiples of the tiles, transposed operands, split-K and per-tensor scales, on both fp8
// lowerings; fast accumulation where its chain is still exact (K < 1024).
TEST(Gemm, Fp8SumsOfSmallIntegersAreExactOverALongK) {
  TJ_SEEDED_RNG(rng);
  Tensor placeholder = Tensor::empty(emu(), DType::f32, {1});
  for (const char* device : {"emu:sm_90a", "emu:sm_89"}) {
    SCOPED_TRACE(device);
    GemmCase plain{.a = DType::f8e4m3, .b = DType::f8e4m3, .m = 50, .n = 70, .k = 2000, .device = device,
                   .small_integers = true};
    plain.out_dtype = DType::f32;
    check_gemm(plain, rng);
    GemmCase every_option = plain;
    every_option.a = DType::f8e5m2;
    every_option.options.transpose_a = every_option.options.transpose_b = true;
    every_option.options.split_k = 3;
    every_option.options.a_scale_inv = placeholder, every_option.options.b_scale_inv = placeholder;
    check_gemm(every_option, rng);
    GemmCase fast = plain;
    fast.k = 1000;
    fast.options.fp8_fast_accumulation = true;
    check_gemm(fast, rng);
  }
}

TEST(Gemm, Transposes) {
  TJ_SEEDED_RNG(rng);
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(std::string("transpose_a ") + (ta ? "yes" : "no") + ", transpose_b " + (tb ? "yes" : "no"));
      GemmCase c;
      c.options.transpose_a = ta, c.options.transpose_b = tb;
      check_gemm(c, rng);
      c.a = c.b = DType::i8;
      check_gemm(c, rng);
    }
}

TEST(Gemm, BatchesAndBroadcasting) {
  TJ_SEEDED_RNG(rng);
  check_gemm(GemmCase{.batch_a = 3, .batch_b = 3, .m = 20, .n = 30, .k = 24}, rng);
  check_gemm(GemmCase{.batch_a = 3, .batch_b = 1, .m = 20, .n = 30, .k = 24}, rng);             // B rank 2, shared
  check_gemm(GemmCase{.batch_a = 1, .batch_b = 2, .m = 20, .n = 30, .k = 24, .rank3 = true}, rng);  // A (1, M, K)
  GemmCase t{.batch_a = 2, .batch_b = 2, .m = 20, .n = 30, .k = 24};
  t.options.transpose_a = t.options.transpose_b = true;
  check_gemm(t, rng);
}

// relu keeps NaN, as jax.nn.relu does: a NaN in A makes its row of the output NaN (a max with
// 0 would turn it into 0).
TEST(Gemm, ReluKeepsNaN) {
  TJ_SEEDED_RNG(rng);
  const int64_t m = 16, n = 16, k = 32;
  Host a = random_host(DType::bf16, size_t(m * k), rng, -1, 1), b = random_host(DType::bf16, size_t(k * n), rng, -1, 1);
  a.set(size_t(3 * k + 5), NAN);  // row 3
  tilejit::ops::GemmOptions o;
  o.activation = Activation::relu;
  o.out_dtype = DType::f32;
  Host out = download(tilejit::ops::gemm(upload(a, {m, k}), upload(b, {k, n}), o));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const LD v = out.get(size_t(i * n + j));
      if (i == 3) EXPECT_TRUE(std::isnan(v)) << i << ", " << j;
      else EXPECT_TRUE(v >= 0) << i << ", " << j << ": " << double(v);
    }
}

TEST(Gemm, EpilogueSteps) {
  TJ_SEEDED_RNG(rng);
  Tensor placeholder_f32 = Tensor::empty(emu(), DType::f32, {1});
  Tensor placeholder_bf16 = Tensor::empty(emu(), DType::bf16, {1});
  for (Activation act : {Activation::relu, Activation::gelu_tanh, Activation::gelu_erf, Activation::silu}) {
    SCOPED_TRACE(tilejit::ops::activation_name(act));
    GemmCase c;
    c.options.activation = act;
    c.options.bias = placeholder_bf16;
    check_gemm(c, rng);
  }
  GemmCase full{.a = DType::f16, .b = DType::f16};
  full.options.alpha = 0.5f, full.options.beta = -1.5f, full.options.c = placeholder_f32;
  full.options.bias = placeholder_f32, full.options.bias_axis = BiasAxis::row;
  full.options.row_scale = placeholder_f32, full.options.col_scale = placeholder_f32;
  full.options.residual = placeholder_bf16, full.options.activation = Activation::gelu_erf;
  check_gemm(full, rng);
  full.out_dtype = DType::f32;
  check_gemm(full, rng);
  GemmCase batched_c{.batch_a = 2, .batch_b = 2, .m = 20, .n = 30, .k = 24};
  batched_c.options.beta = 1, batched_c.options.c = placeholder_f32, batched_c.options.residual = placeholder_f32;
  check_gemm(batched_c, rng);
}

// Calls that differ only in an epilogue operand's dtype take kernels of their own, whatever
// ran before them in the process (split-K's two kernels too).
TEST(Gemm, EpilogueOperandsOfEveryDtypeOneAfterAnother) {
  TJ_SEEDED_RNG(rng);
  for (int64_t split_k : {1, 3})
    for (DType d : {DType::bf16, DType::f32, DType::f16}) {
      SCOPED_TRACE(fmt::format("split_k {}, operands of {}", split_k, dtype_name(d)));
      Tensor placeholder = Tensor::empty(emu(), d, {1});
      GemmCase bias{.m = 30, .n = 40, .k = 96}, c{.m = 30, .n = 40, .k = 96}, residual{.m = 30, .n = 40, .k = 96};
      bias.options.bias = placeholder;
      c.options.beta = 0.5f, c.options.c = placeholder;
      residual.options.residual = placeholder;
      for (GemmCase* g : {&bias, &c, &residual}) {
        g->options.split_k = split_k;
        check_gemm(*g, rng);
      }
    }
}

TEST(Gemm, OutputCastsAndQuantizedEpilogues) {
  TJ_SEEDED_RNG(rng);
  Tensor placeholder = Tensor::empty(emu(), DType::f32, {1});
  GemmCase to_bf16{.a = DType::f32, .b = DType::f32, .out_dtype = DType::bf16};
  check_gemm(to_bf16, rng);
  GemmCase to_fp8{.out_dtype = DType::f8e4m3};
  to_fp8.options.alpha = 0.05f;
  check_gemm(to_fp8, rng);
  // FJFormer's dequantizing epilogue: an i8 product scaled per row and per column.
  GemmCase dequantized{.a = DType::i8, .b = DType::i8, .out_dtype = DType::f32};
  dequantized.options.row_scale = placeholder, dequantized.options.col_scale = placeholder;
  check_gemm(dequantized, rng);
  // Transformer Engine's fp8 GEMM: per-tensor scale_inv of each operand.
  GemmCase fp8{.a = DType::f8e4m3, .b = DType::f8e5m2};
  fp8.options.a_scale_inv = placeholder, fp8.options.b_scale_inv = placeholder;
  check_gemm(fp8, rng);
}

TEST(Gemm, SplitK) {
  TJ_SEEDED_RNG(rng);
  Tensor placeholder = Tensor::empty(emu(), DType::f32, {1});
  GemmCase c{.m = 30, .n = 40, .k = 300};
  c.options.split_k = 3;
  c.options.bias = placeholder, c.options.activation = Activation::silu;
  check_gemm(c, rng);
  GemmCase ints{.a = DType::i8, .b = DType::i8, .batch_a = 2, .batch_b = 2, .m = 20, .n = 24, .k = 200};
  ints.options.split_k = 4;
  check_gemm(ints, rng);
  GemmCase more_slices_than_steps{.m = 16, .n = 16, .k = 40};
  more_slices_than_steps.options.split_k = 16;
  check_gemm(more_slices_than_steps, rng);
}

// A launch's grid holds 65535 batches: more run in launches of that many, each over its slice
// of the batched operands (c and the residual too) and the shared ones whole. Here in launches of
// 3 batches (65536 would take the emulator minutes).
TEST(Gemm, MoreBatchesThanOneLaunchHolds) {
  TJ_SEEDED_RNG(rng);
  Tensor placeholder = Tensor::empty(emu(), DType::f32, {1});
  auto in_launches_of_three = [](const Tensor& a, const Tensor& b, const Tensor& out, const GemmOptions& o) {
    tilejit::ops::gemm_detail::launch_gemm(tilejit::ops::gemm_detail::check_gemm(a, b, o, &out), stream(), 3);
  };
  GemmCase c{.batch_a = 7, .batch_b = 1, .m = 20, .n = 24, .k = 16, .launch = in_launches_of_three};
  c.options.beta = 1, c.options.c = placeholder, c.options.residual = placeholder;
  check_gemm(c, rng);
  GemmCase shared_a{
      .batch_a = 1, .batch_b = 8, .m = 20, .n = 24, .k = 16, .rank3 = true, .launch = in_launches_of_three};
  check_gemm(shared_a, rng);
  GemmCase split{.batch_a = 4, .batch_b = 4, .m = 20, .n = 24, .k = 96, .launch = in_launches_of_three};
  split.options.split_k = 2;
  check_gemm(split, rng);
}

TEST(Gemm, StridedViews) {
  TJ_SEEDED_RNG(rng);
  // A is k columns of a wider matrix (rows k + 5 = 29 elements apart) from column `first`; B is
  // a permuted (batch, N, K) tensor read as (K, N). With M = 64 and A's data aligned, the rows'
  // indices are multiples of 16 where they start a tile: only the row stride may say that the
  // rows are not 16-byte aligned.
  struct View {
    int64_t m, first;
  };
  for (View v : {View{33, 3}, View{64, 0}}) {
    SCOPED_TRACE(fmt::format("M = {}, A from column {}", v.m, v.first));
    const int64_t m = v.m, n = 20, k = 24, batch = 2;
    Host a_wide = random_host(DType::bf16, size_t(batch * m * (k + 5)), rng, -2, 2);
    Host b_nk = random_host(DType::bf16, size_t(batch * n * k), rng, -2, 2);
    Tensor a = upload(a_wide, {batch, m, k + 5}).slice(2, v.first, k);
    Tensor b = upload(b_nk, {batch, n, k}).permute({0, 2, 1});
    Tensor out = poisoned(DType::f32, {batch, m, n});
    GemmOptions o;
    o.out_dtype = DType::f32;
    tilejit::ops::gemm(a, b, out, o);
    Host got = download(out);
    std::vector<LD> want(size_t(batch * m * n)), scale(want.size());
    for (int64_t z = 0; z < batch; ++z)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          LD s = 0, mag = 0;
          for (int64_t t = 0; t < k; ++t) {
            LD p = a_wide.get(size_t(z * m * (k + 5) + i * (k + 5) + v.first + t)) *
                   b_nk.get(size_t(z * n * k + j * k + t));
            s += p, mag += std::fabs(p);
          }
          want[size_t(z * m * n + i * n + j)] = s, scale[size_t(z * m * n + i * n + j)] = mag * 1e-5L + 1e-6L;
        }
    expect_scaled("strided gemm", got.values(), want, scale, 1.0);
  }
}

TEST(Gemm, BothTargetsLowerings) {
  TJ_SEEDED_RNG(rng);
  for (const char* device : {"emu:sm_80", "emu:sm_90a"}) {
    SCOPED_TRACE(device);
    check_gemm(GemmCase{.device = device}, rng);
    check_gemm(GemmCase{.a = DType::i8, .b = DType::i8, .device = device}, rng);
  }
  // fp8 needs sm_89's mma; sm_80 multiplies fp8 on the CUDA cores.
  check_gemm(GemmCase{.a = DType::f8e4m3, .b = DType::f8e4m3, .device = "emu:sm_80"}, rng);
}

// The PTX of the one gemm kernel the call builds (TILEJIT_DUMP_DIR), on emu:sm_89: a device no
// other test of this binary builds gemm for, so each new operand layout is built here.
std::string gemm_ptx(DType dtype, const GemmOptions& options, int64_t m = 64, int64_t n = 64, int64_t k = 64) {
  Device& device = Device::by_name("emu:sm_89");
  Host a(dtype, size_t(m * k)), b(dtype, size_t(k * n));
  std::vector<int64_t> a_shape = options.transpose_a ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k};
  std::vector<int64_t> b_shape = options.transpose_b ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n};
  std::vector<std::string> ptx = tilejit::testing_util::ptx_built_by(
      [&] { tilejit::ops::gemm(upload(a, a_shape, device), upload(b, b_shape, device), options); });
  EXPECT_EQ(ptx.size(), 1u);
  return ptx.empty() ? "" : ptx[0];
}

TEST(Gemm, OperandsAreCopiedSixteenBytesAtATimeInEveryLayout) {
  // Unit strides reach the kernel as arguments; the specialization on them must still give
  // 16-byte accesses to both operand tiles (asynchronous copies into a pipeline on sm_80+),
  // whichever way the operands are stored: each is loaded in its memory order, and a
  // transposed one goes to the tensor cores through ldmatrix as it lies in shared memory.
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (DType dtype : {DType::bf16, DType::i8}) {
        if (dtype == DType::i8 && ta) continue;  // ldmatrix cannot transpose 8-bit elements
        SCOPED_TRACE(name_of(dtype) + (ta ? " A (K, M)" : " A (M, K)") + (tb ? " B (N, K)" : " B (K, N)"));
        GemmOptions o;
        o.transpose_a = ta, o.transpose_b = tb;
        std::string text = gemm_ptx(dtype, o);
        EXPECT_NE(text.find(".entry gemm"), std::string::npos);
        // Both operands staged, except an 8-bit B that is not transposed (it goes through registers).
        bool b_staged = dtype != DType::i8 || tb;
        EXPECT_NE(text.find("cp.async.cg.shared.global"), std::string::npos);
        EXPECT_NE(text.find("cp.async.wait_group"), std::string::npos);
        EXPECT_EQ(text.find("cp.async.ca"), std::string::npos) << "copies narrower than 16 bytes";
        EXPECT_EQ(text.find("ld.global.b16"), std::string::npos) << "a 16-bit operand loaded element by element";
        EXPECT_EQ(text.find("ld.global.b8"), std::string::npos) << "an 8-bit operand loaded element by element";
        EXPECT_EQ(text.find("ld.global.v4") != std::string::npos, !b_staged) << "the register-path B tile's loads";
        EXPECT_EQ(text.find("ldmatrix.sync.aligned.m8n8.x4.trans") != std::string::npos, dtype != DType::i8 && (ta || !tb));
      }
}

TEST(Gemm, RowsOfOddMultiplesOfEightElementsAreCopiedSixteenBytesAtATime) {
  // K = 200 and N = 40: each row of A and of B is a multiple of 16 bytes long but not of 16
  // elements. The specialization records divisibility by 8, so both operands are still staged
  // by 16-byte copies (with divisibility by 16 as the only fact, rows of 2-byte loads, which
  // cp.async cannot stage).
  std::string text = gemm_ptx(DType::bf16, {}, 64, 40, 200);
  EXPECT_NE(text.find("cp.async.cg.shared.global"), std::string::npos);
  EXPECT_EQ(text.find("cp.async.ca"), std::string::npos) << "copies narrower than 16 bytes";
  EXPECT_EQ(text.find("ld.global.b16"), std::string::npos) << "an operand loaded element by element";
  // K = 100 and N = 36, multiples of 4 elements: 8-byte copies.
  std::string narrower = gemm_ptx(DType::bf16, {}, 20, 36, 100);
  EXPECT_NE(narrower.find("cp.async.ca.shared.global"), std::string::npos);
  EXPECT_EQ(narrower.find("cp.async.cg"), std::string::npos);
  TJ_SEEDED_RNG(rng);
  check_gemm(GemmCase{.m = 64, .n = 40, .k = 200, .device = "emu:sm_89"}, rng);
  check_gemm(GemmCase{.m = 20, .n = 36, .k = 100, .device = "emu:sm_89"}, rng);
}

TEST(Gemm, ZeroSizedDimensions) {
  Tensor a = Tensor::empty(emu(), DType::bf16, {0, 8}), b = Tensor::empty(emu(), DType::bf16, {8, 4});
  EXPECT_EQ(tilejit::ops::gemm(a, b).shape(), (std::vector<int64_t>{0, 4}));
  // No batches: a batch of 1 (or none) against 0 broadcasts to 0, as numpy does.
  auto bf16 = [](std::vector<int64_t> shape) { return Tensor::empty(emu(), DType::bf16, shape); };
  EXPECT_EQ(tilejit::ops::gemm(bf16({0, 4, 8}), b).shape(), (std::vector<int64_t>{0, 4, 4}));
  EXPECT_EQ(tilejit::ops::gemm(bf16({0, 4, 8}), bf16({1, 8, 4})).shape(), (std::vector<int64_t>{0, 4, 4}));
  tilejit::ops::gemm(bf16({1, 4, 8}), bf16({0, 8, 4}), bf16({0, 4, 4}));
  EXPECT_EQ(tilejit::ops::matmul(bf16({2, 0, 4, 8}), bf16({1, 8, 4})).shape(), (std::vector<int64_t>{2, 0, 4, 4}));
  EXPECT_EQ(tilejit::ops::matmul(bf16({0, 1, 4, 8}), bf16({3, 8, 4})).shape(), (std::vector<int64_t>{0, 3, 4, 4}));
  // An empty batch still checks the matrices and the options, as numpy does.
  using tilejit::testing_util::expect_error_naming;
  EXPECT_EQ(tilejit::ops::matmul(bf16({2, 0, 4, 0}), bf16({1, 0, 4})).shape(), (std::vector<int64_t>{2, 0, 4, 4}));
  expect_error_naming([&] { tilejit::ops::matmul(bf16({0, 2, 4, 8}), bf16({2, 7, 4})); }, {"gemm", "8", "7"});
  expect_error_naming([&] { tilejit::ops::matmul(bf16({2, 0, 4, 8}), bf16({3, 1, 8, 4})); },
                      {"batch dims do not broadcast"});
  GemmOptions bias_of_3;
  bias_of_3.bias = bf16({3});
  expect_error_naming([&] { tilejit::ops::matmul(bf16({0, 2, 4, 8}), bf16({2, 8, 4}), bias_of_3); }, {"bias", "3"});
  // K = 0: the product is zero and the epilogue still applies.
  Tensor a0 = Tensor::empty(emu(), DType::f32, {3, 0}), b0 = Tensor::empty(emu(), DType::f32, {0, 2});
  Host bias(DType::f32, 2);
  bias.set(0, 1.5), bias.set(1, -2);
  GemmOptions o;
  o.bias = upload(bias, {2});
  Host got = download(tilejit::ops::gemm(a0, b0, o));
  expect_values("K = 0", got, {1.5, -2, 1.5, -2, 1.5, -2}, exact());
}

void expect_gemm_error(const Tensor& a, const Tensor& b, const GemmOptions& o, const std::vector<std::string>& words,
                       const Tensor* out = nullptr) {
  std::string message = tilejit::testing_util::error_of([&] {
    if (out) tilejit::ops::gemm(a, b, *out, o);
    else tilejit::ops::gemm(a, b, o);
  });
  for (const std::string& word : words) EXPECT_NE(message.find(word), std::string::npos) << word << " not in: " << message;
}

TEST(Gemm, Errors) {
  auto t = [](DType d, std::vector<int64_t> shape, Device& dev = emu()) { return Tensor::empty(dev, d, shape); };
  Tensor a = t(DType::bf16, {8, 16}), b = t(DType::bf16, {16, 4});
  GemmOptions o;
  expect_gemm_error(t(DType::bf16, {16}), b, o, {"gemm", "a", "rank 2 to 3", "bf16[16]"});
  expect_gemm_error(a, t(DType::bf16, {2, 3, 16, 4}), o, {"gemm", "b", "rank"});
  expect_gemm_error(t(DType::i32, {8, 16}), t(DType::i32, {16, 4}), o, {"gemm", "a must be", "i32[8, 16]"});
  expect_gemm_error(a, t(DType::f16, {16, 4}), o, {"gemm", "b must have a's dtype bf16", "f16[16, 4]"});
  expect_gemm_error(a, t(DType::bf16, {15, 4}), o, {"contracting", "K = 16", "K = 15"});
  expect_gemm_error(t(DType::bf16, {3, 8, 16}), t(DType::bf16, {2, 16, 4}), o, {"batch sizes", "3", "2"});
  Tensor wrong_out = t(DType::bf16, {8, 5});
  expect_gemm_error(a, b, o, {"out", "[8, 4]", "bf16[8, 5]"}, &wrong_out);
  Tensor wrong_dtype = t(DType::f32, {8, 4});
  expect_gemm_error(a, b, o, {"out", "output dtype is bf16"}, &wrong_dtype);
  Tensor other_device = t(DType::bf16, {16, 4}, Device::by_name("emu:sm_80"));
  expect_gemm_error(a, other_device, o, {"one device", "a", "b"});

  GemmOptions beta;
  beta.beta = 1;
  expect_gemm_error(a, b, beta, {"beta", "no c"});
  beta.c = t(DType::f32, {8, 3});
  expect_gemm_error(a, b, beta, {"c must have the output's shape [8, 4]", "f32[8, 3]"});
  GemmOptions bias;
  bias.bias = t(DType::f32, {8});
  expect_gemm_error(a, b, bias, {"bias (per column)", "[4]", "f32[8]"});
  bias.bias_axis = BiasAxis::row;
  bias.bias = t(DType::i8, {8});
  expect_gemm_error(a, b, bias, {"bias (per row)", "f32, f16 or bf16", "i8[8]"});
  GemmOptions scales;
  scales.row_scale = t(DType::f32, {4});
  expect_gemm_error(a, b, scales, {"row_scale", "[8]"});
  GemmOptions fp8;
  fp8.a_scale_inv = t(DType::f32, {1});
  expect_gemm_error(t(DType::f8e4m3, {8, 16}), t(DType::f8e4m3, {16, 4}), fp8, {"a_scale_inv and b_scale_inv", "missing"});
  fp8.b_scale_inv = t(DType::f32, {1});
  expect_gemm_error(a, b, fp8, {"fp8 operands only", "bf16[8, 16]"});
  GemmOptions fast;
  fast.fp8_fast_accumulation = true;
  expect_gemm_error(a, b, fast, {"fp8_fast_accumulation", "fp8 operands only", "bf16[8, 16]"});
  GemmOptions int_epilogue;
  int_epilogue.alpha = 2;
  expect_gemm_error(t(DType::i8, {8, 16}), t(DType::i8, {16, 4}), int_epilogue, {"i32 output", "alpha"});
  GemmOptions out_dtype;
  out_dtype.out_dtype = DType::i32;
  expect_gemm_error(a, b, out_dtype, {"cannot write", "bf16 x bf16", "i32"});
  GemmOptions split;
  split.split_k = -1;
  expect_gemm_error(a, b, split, {"split_k", "-1"});
  split.split_k = 65536;  // a grid dim
  expect_gemm_error(a, b, split, {"split_k must be in [0, 65535], not 65536"});

  // An output over memory the product reads, or over itself.
  Tensor square = t(DType::bf16, {16, 16});
  expect_gemm_error(square, square, o, {"out (bf16[16, 16] on emu) overlaps the memory of a"}, &square);
  Tensor x = t(DType::bf16, {8, 32}), w = t(DType::bf16, {16, 16});
  x.fill_bytes(0), w.fill_bytes(0);
  Tensor left = x.slice(1, 0, 16), right = x.slice(1, 16, 16), middle = x.slice(1, 8, 16);
  EXPECT_NO_THROW(tilejit::ops::gemm(left, w, right));  // column blocks of one matrix: apart
  expect_gemm_error(left, w, o, {"overlaps the memory of a"}, &middle);
  GemmOptions transposed_c;
  transposed_c.beta = 1, transposed_c.c = square.permute({1, 0});
  Tensor ab = t(DType::bf16, {16, 16});
  expect_gemm_error(ab, ab, transposed_c, {"overlaps the memory of c"}, &square);
  GemmOptions same_c;  // c as out itself: each element read where it is written
  same_c.beta = 1, same_c.c = square;
  EXPECT_NO_THROW(tilejit::ops::gemm(ab, ab, square, same_c));
  DLManagedTensor* broadcast = t(DType::bf16, {8, 4}).to_dlpack();
  broadcast->dl_tensor.strides[0] = 0;  // every row at one address
  Tensor one_row = Tensor::from_dlpack(broadcast);
  expect_gemm_error(a, b, o,
                    {"out (bf16[8, 4] on emu, strides [0, 1]) has strides under which elements may share memory"},
                    &one_row);
  GemmOptions residual;
  residual.residual = t(DType::f32, {2, 8, 4});
  expect_gemm_error(a, b, residual, {"residual", "[8, 4]", "f32[2, 8, 4]"});
  // K past 32-bit indexing, on operands of stride 0 along K that span one element each.
  DLManagedTensor* long_a = t(DType::bf16, {1, 1}).to_dlpack();
  long_a->dl_tensor.shape[1] = int64_t(1) << 31, long_a->dl_tensor.strides[1] = 0;
  DLManagedTensor* long_b = t(DType::bf16, {1, 1}).to_dlpack();
  long_b->dl_tensor.shape[0] = int64_t(1) << 31, long_b->dl_tensor.strides[0] = 0;
  expect_gemm_error(Tensor::from_dlpack(long_a), Tensor::from_dlpack(long_b), o,
                    {"K = 2147483648 is over 2147482623, beyond the kernel's 32-bit indexing"});
}

}  // namespace
