// The int8 ops of ops/int8.h: argument checks and launches.
#include "ops/common/op_arguments.h"
#include "ops/common/op_kernels.h"
#include "ops/gemm.h"
#include "ops/int8.h"
#include "ops/int8/quantize_kernels.h"

namespace tilejit::ops {
namespace {

using namespace int8_detail;

// The most elements the quantize kernels index in 32 bits: a block (1024 at most) past the last
// one still fits, so offsets past the end never wrap round into the tensor.
constexpr int64_t kMaxIndexed = (int64_t{1} << 31) - 1024;

uint32_t blocks(int64_t n, int64_t block) { return static_cast<uint32_t>((n + block - 1) / block); }

void check_float(const OpArguments& args, std::string_view name, const Tensor& t) {
  args.dtype(name, t, {DType::f32, DType::f16, DType::bf16});
}

}  // namespace

Tensor quant_int8(const Tensor& x, Stream* stream) {
  OpArguments args("quant_int8");
  check_float(args, "x", x);
  if (x.numel() > kMaxIndexed)
    args.fail("x ({}) has over {} elements, beyond the kernel's 32-bit indexing", x.describe(), kMaxIndexed);
  args.contiguous("x", x);
  Tensor q = Tensor::empty(x.device(), DType::i8, x.shape());
  if (x.numel() == 0) return q;
  const int64_t block = 1024;
  const JitKernel& k = op_kernel(fmt::format("quant_int8/{}", dtype_name(x.dtype())),
                                 [&] { return quant_int8_kernel(x.dtype()); });
  k.with({{"BLOCK", block}}).launch(args.stream_for("x", x, stream), {blocks(x.numel(), block)}, x, q,
                                    static_cast<int32_t>(x.numel()));
  return q;
}

RowQuantized quantize_rows_int8(const Tensor& x, Stream* stream) {
  OpArguments args("quantize_rows_int8");
  check_float(args, "x", x);
  args.rank("x", x, 2);
  int64_t r = x.dim(0), c = x.dim(1);
  // The kernel indexes x through its strides and q densely, both in 32 bits.
  if (r * c > kMaxIndexed || (r - 1) * x.strides()[0] + (c - 1) * x.strides()[1] > kMaxIndexed)
    args.fail("x ({}) has or spans over {} elements, beyond the kernel's 32-bit indexing", x.describe(), kMaxIndexed);
  Stream& s = args.stream_for("x", x, stream);
  RowQuantized out{Tensor::empty(x.device(), DType::i8, {r, c}), Tensor::empty(x.device(), DType::f32, {r})};
  if (r == 0) return out;
  const int64_t block_r = 16, block_c = 128;
  const JitKernel& k = op_kernel(fmt::format("quantize_rows_int8/{}", dtype_name(x.dtype())),
                                 [&] { return quantize_rows_kernel(x.dtype()); });
  k.with({{"BLOCK_R", block_r}, {"BLOCK_C", block_c}})
      .launch(s, {blocks(r, block_r)}, x, out.q, out.inv_scale, static_cast<int32_t>(r),
              static_cast<int32_t>(c), static_cast<int32_t>(x.strides()[0]), static_cast<int32_t>(x.strides()[1]));
  return out;
}

Tensor matmul_true_int8(const Tensor& a, const Tensor& b, Stream* stream) {
  OpArguments args("matmul_true_int8");
  args.dtype("a", a, {DType::i8});
  args.dtype("b", b, {DType::i8});
  return matmul(a, b, {}, stream);
}

namespace {

// q_matmul_int8's checks (of `out` too, when given), its two quantizations, and the gemm
// options that dequantize.
struct QuantizedProduct {
  RowQuantized a, w;
  GemmOptions options;
};

QuantizedProduct quantize_for_product(const Tensor& a, const Tensor& w, const Tensor* out, Stream* stream) {
  OpArguments args("q_matmul_int8");
  check_float(args, "a", a);
  args.rank("a", a, 2);
  args.rank("w", w, 2);
  args.same_dtype("a", a, "w", w);
  args.same_device("a", a, "w", w);
  if (a.dim(1) != w.dim(0))
    args.fail("a's columns ({}) must equal w's rows ({}): a is {}, w is {}", a.dim(1), w.dim(0), a.describe(),
              w.describe());
  if (out) {
    args.same_device("out", *out, "a", a);
    args.dtype("out", *out, {a.dtype()});
    args.shape("out", *out, {a.dim(0), w.dim(1)});
    args.no_self_overlap("out", *out);
  }
  args.stream_for("a", a, stream);
  QuantizedProduct p{quantize_rows_int8(a, stream), quantize_rows_int8(w.permute({1, 0}), stream), {}};
  p.options.transpose_b = true;  // w's columns were quantized as rows: (N, K)
  p.options.row_scale = p.a.inv_scale;
  p.options.col_scale = p.w.inv_scale;
  p.options.out_dtype = a.dtype();
  return p;
}

}  // namespace

Tensor q_matmul_int8(const Tensor& a, const Tensor& w, Stream* stream) {
  QuantizedProduct p = quantize_for_product(a, w, nullptr, stream);
  return gemm(p.a.q, p.w.q, p.options, stream);
}

void q_matmul_int8(const Tensor& a, const Tensor& w, const Tensor& out, Stream* stream) {
  QuantizedProduct p = quantize_for_product(a, w, &out, stream);
  gemm(p.a.q, p.w.q, out, p.options, stream);
}

}  // namespace tilejit::ops
