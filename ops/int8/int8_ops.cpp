// The int8 ops of ops/int8.h: argument checks and launches.
#include "ops/common/op_arguments.h"
#include "ops/common/op_kernels.h"
#include "ops/gemm.h"
#include "ops/gemm/gemm_problem.h"
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

namespace {

// The row quantization indexes x through its strides and q densely, both in 32 bits.
void check_rows_indexable(const OpArguments& args, std::string_view name, const Tensor& x) {
  int64_t r = x.dim(0), c = x.dim(1);
  if (r * c > kMaxIndexed || (r - 1) * x.strides()[0] + (c - 1) * x.strides()[1] > kMaxIndexed)
    args.fail("{} ({}) has or spans over {} elements, beyond the kernel's 32-bit indexing", name, x.describe(),
              kMaxIndexed);
}

RowQuantized empty_row_quantized(const Tensor& x) {
  return {Tensor::empty(x.device(), DType::i8, {x.dim(0), x.dim(1)}), Tensor::empty(x.device(), DType::f32, {x.dim(0)})};
}

// Quantizes the rows of x (checked) into `out`. Rows whose elements lie apart but next to the
// next row's (a transposed view, such as q_matmul_int8's columns of w) are the columns of
// x^T, whose rows are contiguous: the per-column kernel reads those.
void launch_quantize_rows(const Tensor& x, const RowQuantized& out, Stream& s) {
  if (x.dim(0) == 0) return;
  const bool columns = x.strides()[1] != 1 && x.strides()[0] == 1;
  const Tensor read = columns ? x.permute({1, 0}) : x;
  int64_t r = read.dim(0), c = read.dim(1);
  const int64_t block_r = columns ? 128 : 16, block_c = columns ? 16 : 128;
  const JitKernel& k =
      op_kernel(fmt::format("quantize_{}_int8/{}", columns ? "columns" : "rows", dtype_name(x.dtype())),
                [&] { return quantize_lines_kernel(x.dtype(), columns); });
  k.with({{"BLOCK_R", block_r}, {"BLOCK_C", block_c}})
      .launch(s, {blocks(columns ? c : r, columns ? block_c : block_r)}, read, out.q, out.inv_scale,
              static_cast<int32_t>(r), static_cast<int32_t>(c), static_cast<int32_t>(read.strides()[0]),
              static_cast<int32_t>(read.strides()[1]));
}

}  // namespace

RowQuantized quantize_rows_int8(const Tensor& x, Stream* stream) {
  OpArguments args("quantize_rows_int8");
  check_float(args, "x", x);
  args.rank("x", x, 2);
  check_rows_indexable(args, "x", x);
  Stream& s = args.stream_for("x", x, stream);
  RowQuantized out = empty_row_quantized(x);
  launch_quantize_rows(x, out, s);
  return out;
}

Tensor matmul_true_int8(const Tensor& a, const Tensor& b, Stream* stream) {
  OpArguments args("matmul_true_int8");
  args.dtype("a", a, {DType::i8});
  args.dtype("b", b, {DType::i8});
  return matmul(a, b, {}, stream);
}

namespace {

// q_matmul_int8's checks of its operands.
void check_product_operands(const OpArguments& args, const Tensor& a, const Tensor& w) {
  check_float(args, "a", a);
  args.rank("a", a, 2);
  args.rank("w", w, 2);
  args.same_dtype("a", a, "w", w);
  args.same_device("a", a, "w", w);
  if (a.dim(1) != w.dim(0))
    args.fail("a's columns ({}) must equal w's rows ({}): a is {}, w is {}", a.dim(1), w.dim(0), a.describe(),
              w.describe());
  // FJFormer's maxima over an empty axis are an error too (jnp.max of no elements).
  if (a.dim(1) == 0) args.fail("a ({}) and w ({}) have no columns and rows (K = 0): no scales", a.describe(), w.describe());
  check_rows_indexable(args, "a", a);
  check_rows_indexable(args, "w (its columns as rows)", w.permute({1, 0}));
}

}  // namespace

Tensor q_matmul_int8(const Tensor& a, const Tensor& w, Stream* stream) {
  check_product_operands(OpArguments("q_matmul_int8"), a, w);
  Tensor out = Tensor::empty(a.device(), a.dtype(), {a.dim(0), w.dim(1)});
  q_matmul_int8(a, w, out, stream);
  return out;
}

// Two quantizations (w's columns as rows, (N, K)) and a gemm whose epilogue dequantizes. The
// gemm's own checks run before the first launch, so a refusal leaves nothing half done.
void q_matmul_int8(const Tensor& a, const Tensor& w, const Tensor& out, Stream* stream) {
  OpArguments args("q_matmul_int8");
  check_product_operands(args, a, w);
  args.same_device("out", out, "a", a);
  args.dtype("out", out, {a.dtype()});
  args.shape("out", out, {a.dim(0), w.dim(1)});
  args.no_self_overlap("out", out);
  Stream& s = args.stream_for("a", a, stream);
  const Tensor wt = w.permute({1, 0});
  RowQuantized qa = empty_row_quantized(a), qw = empty_row_quantized(wt);
  GemmOptions options;
  options.transpose_b = true;
  options.row_scale = qa.inv_scale;
  options.col_scale = qw.inv_scale;
  options.out_dtype = a.dtype();
  gemm_detail::check_gemm(qa.q, qw.q, options, &out);
  launch_quantize_rows(a, qa, s);
  launch_quantize_rows(wt, qw, s);
  gemm(qa.q, qw.q, out, options, &s);
}

}  // namespace tilejit::ops
