#include "ops/scaled_dot/dimensions.h"

namespace tilejit::ops::scaled_dot_detail {
namespace {

constexpr std::initializer_list<DType> kOperandDTypes = {DType::f8e4m3, DType::f8e5m2, DType::bf16, DType::f16,
                                                         DType::f32};
constexpr std::initializer_list<DType> kScaleDTypes = {DType::e8m0, DType::bf16};

DotDimensionNumbers default_dimension_numbers(const OpArguments& args, const Tensor& lhs) {
  int n = lhs.rank();
  if (n < 2)
    args.fail("lhs {} has rank {}: operands of rank 0 or 1 need explicit dimension_numbers", lhs.describe(), n);
  DotDimensionNumbers d{{n - 1}, {n - 2}, {}, {}};
  for (int i = 0; i + 2 < n; ++i) d.lhs_batch.push_back(i), d.rhs_batch.push_back(i);
  return d;
}

// `side`'s batch and contracting dims normalized, each dim used at most once; the rest are free.
OperandGroups group_dims(const OpArguments& args, const char* side, const Tensor& t, const std::vector<int>& contracting,
                         const std::vector<int>& batch) {
  OperandGroups g;
  std::vector<const char*> role(static_cast<size_t>(t.rank()), nullptr);
  auto take = [&](const std::vector<int>& dims, const char* list, std::vector<int>& out) {
    for (int dim : dims) {
      int d = args.normalized_dim(fmt::format("{}_{} dim", side, list), dim, t.rank());
      if (role[static_cast<size_t>(d)])
        args.fail("{} dim {} appears twice in dimension_numbers ({}_{} and {}_{})", side, d, side,
                  role[static_cast<size_t>(d)], side, list);
      role[static_cast<size_t>(d)] = list;
      out.push_back(d);
    }
  };
  take(contracting, "contracting", g.contracting);
  take(batch, "batch", g.batch);
  for (int d = 0; d < t.rank(); ++d)
    if (!role[static_cast<size_t>(d)]) g.free.push_back(d);
  return g;
}

void check_pairs(const OpArguments& args, const char* role, const Tensor& lhs, const std::vector<int>& lhs_dims,
                 const Tensor& rhs, const std::vector<int>& rhs_dims) {
  for (size_t i = 0; i < lhs_dims.size(); ++i)
    if (lhs.dim(lhs_dims[i]) != rhs.dim(rhs_dims[i]))
      args.fail("lhs {} dim {} has size {} and rhs {} dim {} has size {}, but paired {} dims must have one size "
                "(lhs {}, rhs {})",
                role, lhs_dims[i], lhs.dim(lhs_dims[i]), role, rhs_dims[i], rhs.dim(rhs_dims[i]), role, lhs.describe(),
                rhs.describe());
}

// Along a contracting dim the operand's size is a multiple >= 2 of the scale's (both 0 for an
// empty dim); elsewhere equal.
void check_scale(const OpArguments& args, const char* side, const Tensor& operand, const Tensor& scale,
                 const OperandGroups& groups) {
  std::vector<bool> contracting(static_cast<size_t>(operand.rank()), false);
  for (int d : groups.contracting) contracting[static_cast<size_t>(d)] = true;
  for (int d = 0; d < operand.rank(); ++d) {
    int64_t size = operand.dim(d), scale_size = scale.dim(d);
    if (!contracting[static_cast<size_t>(d)]) {
      if (scale_size != size)
        args.fail("{}_scale dim {} has size {}, but must equal {} dim {} (size {}): scales match their operand outside "
                  "the contracting dims ({}_scale {}, {} {})",
                  side, d, scale_size, side, d, size, side, scale.describe(), side, operand.describe());
      continue;
    }
    if (size == 0) {  // an empty sum: nothing to scale
      if (scale_size != 0)
        args.fail("{}_scale dim {} has size {}, but {}'s contracting dim {} is empty, so the scale's must be too "
                  "({}_scale {}, {} {})",
                  side, d, scale_size, side, d, side, scale.describe(), side, operand.describe());
      continue;
    }
    if (scale_size <= 0 || size % scale_size != 0)
      args.fail("{}_scale dim {} has size {}, which does not divide {}'s contracting dim {} of size {} ({}_scale {}, "
                "{} {})",
                side, d, scale_size, side, d, size, side, scale.describe(), side, operand.describe());
    if (size / scale_size < 2)
      args.fail("{}_scale dim {} has size {} for {}'s contracting dim {} of size {}: {} element(s) per block, but a "
                "block must hold at least 2 (the scale's size at most {})",
                side, d, scale_size, side, d, size, size / scale_size, size / 2);
  }
}

}  // namespace

ScaledDotDims check_scaled_dot(const OpArguments& args, const Tensor& lhs, const Tensor& rhs, const Tensor* lhs_scale,
                               const Tensor* rhs_scale, const ScaledDotOptions& options) {
  args.dtype("lhs", lhs, kOperandDTypes);
  args.dtype("rhs", rhs, kOperandDTypes);
  if (lhs_scale) args.dtype("lhs_scale", *lhs_scale, kScaleDTypes);
  if (rhs_scale) args.dtype("rhs_scale", *rhs_scale, kScaleDTypes);
  DType out = options.preferred_element_type;
  if (out != DType::bf16 && out != DType::f32)
    args.fail("preferred_element_type must be bf16 or f32, but is {}", dtype_name(out));
  args.same_device("lhs", lhs, "rhs", rhs);
  if (lhs_scale) args.same_device("lhs", lhs, "lhs_scale", *lhs_scale);
  if (rhs_scale) args.same_device("lhs", lhs, "rhs_scale", *rhs_scale);
  auto same_rank = [&](const char* name, const Tensor& t) {
    if (t.rank() != lhs.rank())
      args.fail("{} has rank {} and lhs has rank {}, but all four tensors must have one rank ({} {}, lhs {})", name,
                t.rank(), lhs.rank(), name, t.describe(), lhs.describe());
  };
  same_rank("rhs", rhs);
  if (lhs_scale) same_rank("lhs_scale", *lhs_scale);
  if (rhs_scale) same_rank("rhs_scale", *rhs_scale);

  DotDimensionNumbers numbers =
      options.dimension_numbers ? *options.dimension_numbers : default_dimension_numbers(args, lhs);
  if (numbers.lhs_contracting.size() != numbers.rhs_contracting.size())
    args.fail("dimension_numbers pairs {} lhs_contracting dims with {} rhs_contracting dims",
              numbers.lhs_contracting.size(), numbers.rhs_contracting.size());
  if (numbers.lhs_batch.size() != numbers.rhs_batch.size())
    args.fail("dimension_numbers pairs {} lhs_batch dims with {} rhs_batch dims", numbers.lhs_batch.size(),
              numbers.rhs_batch.size());

  ScaledDotDims dims;
  dims.lhs = group_dims(args, "lhs", lhs, numbers.lhs_contracting, numbers.lhs_batch);
  dims.rhs = group_dims(args, "rhs", rhs, numbers.rhs_contracting, numbers.rhs_batch);
  check_pairs(args, "batch", lhs, dims.lhs.batch, rhs, dims.rhs.batch);
  check_pairs(args, "contracting", lhs, dims.lhs.contracting, rhs, dims.rhs.contracting);
  if (lhs_scale) check_scale(args, "lhs", lhs, *lhs_scale, dims.lhs);
  if (rhs_scale) check_scale(args, "rhs", rhs, *rhs_scale, dims.rhs);

  for (int d : dims.lhs.batch) dims.out_shape.push_back(lhs.dim(d));
  for (int d : dims.lhs.free) dims.out_shape.push_back(lhs.dim(d));
  for (int d : dims.rhs.free) dims.out_shape.push_back(rhs.dim(d));
  return dims;
}

}  // namespace tilejit::ops::scaled_dot_detail
