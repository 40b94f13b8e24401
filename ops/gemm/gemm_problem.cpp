#include "ops/gemm/gemm_problem.h"

#include <fmt/format.h>

#include <limits>

#include "ops/common/f32_dot.h"
#include "ops/common/op_arguments.h"

namespace tilejit::ops::gemm_detail {
namespace {


int64_t batch_of(const Tensor& t) { return t.rank() == 3 ? t.dim(0) : 1; }

// The (batch, rows, cols) strides of a rank-2 or rank-3 tensor read as (rows, cols), or as
// (cols, rows) when transposed; a batch dim of size 1 or none is shared (stride 0).
MatrixStrides strides_of(const Tensor& t, bool transposed) {
  const auto& s = t.strides();
  int r = t.rank();
  MatrixStrides out;
  out.batch = r == 3 && t.dim(0) > 1 ? s[0] : 0;
  out.row = transposed ? s[r - 1] : s[r - 2];
  out.col = transposed ? s[r - 2] : s[r - 1];
  return out;
}

// The kernel indexes within one batch in 32-bit integers.
void check_indexable(const OpArguments& args, std::string_view name, const Tensor& t) {
  int64_t reach = 0;
  for (int i = t.rank() == 3 ? 1 : 0; i < t.rank(); ++i) reach += (t.dim(i) - 1) * t.strides()[i];
  if (reach >= std::numeric_limits<int32_t>::max())
    args.fail("{} ({}) spans more than 2^31 elements within one batch, beyond the kernel's 32-bit indexing", name,
              t.describe());
}

// C and residual: the output's shape, or (M, N) shared by every batch.
MatrixStrides check_like_output(const OpArguments& args, std::string_view name, const Tensor& t,
                                const GemmProblem& p) {
  args.same_device(name, t, "a", *p.a);
  bool shared = t.rank() == 2 && t.dim(0) == p.m && t.dim(1) == p.n;
  if (!shared && t.shape() != p.out_shape)
    args.fail("{} must have the output's shape {} (or [{}, {}] shared by every batch), but is {}", name,
              shape_string(p.out_shape), p.m, p.n, t.describe());
  check_indexable(args, name, t);
  return strides_of(t, false);
}

void check_vector(const OpArguments& args, std::string_view name, const Tensor& t, int64_t size,
                  std::initializer_list<DType> dtypes, const Tensor& a) {
  args.same_device(name, t, "a", a);
  args.dtype(name, t, dtypes);
  args.shape(name, t, {size});
  if (size > 1 && t.strides()[0] != 1) args.fail("{} ({}) must be contiguous", name, t.describe());
}

}  // namespace

bool GemmFeatures::integer_epilogue() const {
  return accumulator() == DType::i32 && out == DType::i32 && !row_scale && !col_scale && !alpha && !c && !bias &&
         activation == Activation::none && !residual;
}

int GemmFeatures::accumulator_tiles() const { return fast_accumulation ? 1 : f32_dot_accumulators(a); }

std::string GemmFeatures::key() const {
  return fmt::format("gemm/{}x{}->{}/p{}/fp8s{}/fa{}/rs{}/cs{}/al{}/c{}/bias{}/{}/res{}", dtype_name(a), dtype_name(b),
                     dtype_name(out), static_cast<int>(precision), fp8_scales, fast_accumulation, row_scale, col_scale,
                     alpha, c,
                     bias ? (*bias == BiasAxis::row ? "row" : "col") : "none", activation_name(activation), residual);
}

}  // namespace tilejit::ops::gemm_detail

namespace tilejit::ops {

DType gemm_out_dtype(DType a, const GemmOptions& options) {
  if (options.out_dtype) return *options.out_dtype;
  if (a == DType::i8) return DType::i32;
  if (is_fp8(a)) return DType::bf16;
  return a;
}

}  // namespace tilejit::ops

namespace tilejit::ops::gemm_detail {

std::vector<int64_t> gemm_out_shape(const Tensor& a, const Tensor& b, const GemmOptions& options) {
  OpArguments args("gemm");
  args.rank_between("a", a, 2, 3);
  args.rank_between("b", b, 2, 3);
  int64_t m = a.dim(options.transpose_a ? -1 : -2), n = b.dim(options.transpose_b ? -2 : -1);
  int64_t ba = batch_of(a), bb = batch_of(b);
  if (ba != bb && ba != 1 && bb != 1)
    args.fail("the batch sizes of a ({}) and b ({}) must be equal or 1: a is {}, b is {}", ba, bb, a.describe(),
              b.describe());
  if (a.rank() == 3 || b.rank() == 3) return {ba == 1 ? bb : ba, m, n};  // as numpy: 1 against 0 is 0
  return {m, n};
}

GemmProblem check_gemm(const Tensor& a, const Tensor& b, const GemmOptions& options, const Tensor* out) {
  OpArguments args("gemm");
  std::vector<int64_t> out_shape = gemm_out_shape(a, b, options);
  args.same_device("a", a, "b", b);
  args.dtype("a", a, {DType::f32, DType::f16, DType::bf16, DType::f8e4m3, DType::f8e5m2, DType::i8});
  if (is_fp8(a.dtype())) {
    args.dtype("b", b, {DType::f8e4m3, DType::f8e5m2});
  } else if (b.dtype() != a.dtype()) {
    args.fail("b must have a's dtype {} (only fp8 operands may mix e4m3 and e5m2), but is {}", dtype_name(a.dtype()),
              b.describe());
  }
  int64_t ka = a.dim(options.transpose_a ? -2 : -1), kb = b.dim(options.transpose_b ? -1 : -2);
  if (ka != kb)
    args.fail("the contracting sizes differ: a {}{} has K = {}, b {}{} has K = {}", a.describe(),
              options.transpose_a ? " (transposed)" : "", ka, b.describe(), options.transpose_b ? " (transposed)" : "",
              kb);

  GemmProblem p;
  p.options = &options;
  p.a = &a;
  p.b = &b;
  p.out_shape = out_shape;
  p.batched = out_shape.size() == 3;
  p.batch = p.batched ? out_shape[0] : 1;
  p.m = out_shape[out_shape.size() - 2];
  p.n = out_shape.back();
  p.k = ka;
  // Tile counts and K steps round M, N and K up to a block in 32-bit integers.
  constexpr int64_t kMaxExtent = std::numeric_limits<int32_t>::max() - 1024;
  for (auto [name, extent] : {std::pair{"M", p.m}, {"N", p.n}, {"K", p.k}})
    if (extent > kMaxExtent)
      args.fail("{} = {} is over {}, beyond the kernel's 32-bit indexing: a is {}, b is {}", name, extent, kMaxExtent,
                a.describe(), b.describe());

  GemmFeatures& f = p.features;
  f.a = a.dtype();
  f.b = b.dtype();
  f.out = gemm_out_dtype(a.dtype(), options);
  if (f.out == DType::i32 ? a.dtype() != DType::i8
                          : f.out != DType::f32 && f.out != DType::f16 && f.out != DType::bf16 && !is_fp8(f.out))
    args.fail("cannot write {} x {} products as {} (f32, f16, bf16, f8e4m3, f8e5m2; i32 for i8 operands)",
              dtype_name(f.a), dtype_name(f.b), dtype_name(f.out));
  f.precision = a.dtype() == DType::f32 ? options.precision : dsl::Precision::tf32;

  if (options.a_scale_inv.has_value() != options.b_scale_inv.has_value())
    args.fail("a_scale_inv and b_scale_inv come together (one is missing)");
  if (options.a_scale_inv) {
    if (!is_fp8(a.dtype()))
      args.fail("a_scale_inv and b_scale_inv apply to fp8 operands only, but a is {}", a.describe());
    check_vector(args, "a_scale_inv", *options.a_scale_inv, 1, {DType::f32}, a);
    check_vector(args, "b_scale_inv", *options.b_scale_inv, 1, {DType::f32}, a);
    f.fp8_scales = true;
  }
  if (options.fp8_fast_accumulation && !is_fp8(a.dtype()))
    args.fail("fp8_fast_accumulation applies to fp8 operands only, but a is {}", a.describe());
  f.fast_accumulation = options.fp8_fast_accumulation;
  if (options.row_scale) check_vector(args, "row_scale", *options.row_scale, p.m, {DType::f32}, a);
  if (options.col_scale) check_vector(args, "col_scale", *options.col_scale, p.n, {DType::f32}, a);
  f.row_scale = options.row_scale.has_value();
  f.col_scale = options.col_scale.has_value();
  f.alpha = options.alpha != 1;
  f.c = options.beta != 0;
  if (f.c) {
    if (!options.c) args.fail("beta is {} but no c is given", options.beta);
    args.dtype("c", *options.c, {DType::f32, DType::f16, DType::bf16, DType::i32});
    p.c = options.c;
    p.c_strides = check_like_output(args, "c", *options.c, p);
  }
  if (options.bias) {
    bool row = options.bias_axis == BiasAxis::row;
    check_vector(args, row ? "bias (per row)" : "bias (per column)", *options.bias, row ? p.m : p.n,
                 {DType::f32, DType::f16, DType::bf16}, a);
    f.bias = options.bias_axis;
  }
  f.activation = options.activation;
  if (options.residual) {
    args.dtype("residual", *options.residual, {DType::f32, DType::f16, DType::bf16});
    p.residual = options.residual;
    p.residual_strides = check_like_output(args, "residual", *options.residual, p);
    f.residual = true;
  }
  if (f.accumulator() == DType::i32 && f.out == DType::i32 && !f.integer_epilogue())
    args.fail("an i32 output takes no scales, alpha, beta, bias, activation or residual (write f32 instead)");
  // Slices are a grid dim, which holds at most 65535.
  if (options.split_k < 0 || options.split_k > 65535)
    args.fail("split_k must be in [0, 65535], not {}", options.split_k);

  check_indexable(args, "a", a);
  check_indexable(args, "b", b);
  p.a_strides = strides_of(a, options.transpose_a);
  p.b_strides = strides_of(b, options.transpose_b);
  if (out) set_output(p, *out);
  return p;
}

void set_output(GemmProblem& p, const Tensor& out) {
  OpArguments args("gemm");
  args.same_device("a", *p.a, "out", out);
  if (out.dtype() != p.features.out)
    args.fail("out is {}, but the output dtype is {}", out.describe(), dtype_name(p.features.out));
  args.shape("out", out, p.out_shape);
  check_indexable(args, "out", out);
  args.no_self_overlap("out", out);
  const GemmOptions& o = *p.options;
  args.disjoint("out", out, "a", *p.a);
  args.disjoint("out", out, "b", *p.b);
  for (auto [name, input] : {std::pair{"bias", &o.bias}, std::pair{"row_scale", &o.row_scale},
                             std::pair{"col_scale", &o.col_scale}, std::pair{"a_scale_inv", &o.a_scale_inv},
                             std::pair{"b_scale_inv", &o.b_scale_inv}})
    if (*input) args.disjoint("out", out, name, **input);
  // c and the residual are read element by element where that element is written: they may
  // be out itself (the same elements: data, strides and element size), not another view of
  // its memory.
  for (auto [name, input] : {std::pair{"c", &p.c}, std::pair{"residual", &p.residual}}) {
    if (!*input) continue;
    const Tensor& t = **input;
    const bool same_elements = t.data() == out.data() && t.strides() == out.strides() &&
                               dtype_storage_bytes(t.dtype()) == dtype_storage_bytes(out.dtype());
    if (!same_elements) args.disjoint("out", out, name, t);
  }
  p.out = out;
  p.out_strides = strides_of(out, false);
}

}  // namespace tilejit::ops::gemm_detail
