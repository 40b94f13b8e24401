// matmul: numpy's matmul over gemm. Batch dims broadcast as numpy broadcasts them (aligned
// from the right, size 1 against any size); the last batch dim goes to gemm as its batch
// (a size of 1 shared by every batch), the dims before it are walked on the host, one gemm
// launch per index.
#include <functional>

#include "ops/common/op_arguments.h"
#include "ops/gemm.h"

namespace tilejit::ops {
namespace {

// The batch dims of a matrix operand, padded with 1s on the left to `count` dims.
std::vector<int64_t> padded_batch(const Tensor& t, size_t count) {
  std::vector<int64_t> dims(count, 1);
  size_t own = static_cast<size_t>(t.rank() - 2);
  for (size_t i = 0; i < own; ++i) dims[count - own + i] = t.shape()[i];
  return dims;
}

// `t` at the leading batch indices `index` (of the padded batch dims; its own dims of size 1
// stay at 0), keeping its last batch dim when it has one.
Tensor leading_slice(const Tensor& t, const std::vector<int64_t>& index, size_t batch_dims) {
  size_t own = static_cast<size_t>(t.rank() - 2);
  size_t first_own = batch_dims - own;
  Tensor out = t;
  // Select from the back of the leading dims so earlier dims keep their positions.
  for (size_t i = index.size(); i-- > 0;) {
    if (i < first_own) continue;
    int dim = static_cast<int>(i - first_own);
    out = out.select(dim, t.shape()[static_cast<size_t>(dim)] == 1 ? 0 : index[i]);
  }
  return out;
}

// `t`'s matrices for checking a product whose batch is empty: the first one when it has any,
// else an empty batch of its matrix shape (nothing is read from either).
Tensor first_matrix_or_none(const Tensor& t) {
  if (t.numel() == 0) return Tensor::empty(t.device(), t.dtype(), {0, t.dim(-2), t.dim(-1)});
  Tensor matrix = t;
  while (matrix.rank() > 2) matrix = matrix.select(0, 0);
  return matrix;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, const GemmOptions& options, Stream* stream) {
  OpArguments args("matmul");
  if (a.rank() < 1 || b.rank() < 1) args.fail("operands must have rank >= 1, not {} and {}", a.describe(), b.describe());
  // numpy: a 1-D a is a row (1, K) and a 1-D b a column (K, 1); that dim is dropped after. A
  // vector is its own transpose: a transposed one is viewed the other way round, so that the
  // transpose gives the row (the column) back. Vectors of any stride.
  if (a.rank() == 1 || b.rank() == 1) {
    auto as_matrix = [](const Tensor& v, bool one_row) { return v.unsqueeze(one_row ? 0 : 1); };
    Tensor a2 = a.rank() == 1 ? as_matrix(a, !options.transpose_a) : a;
    Tensor b2 = b.rank() == 1 ? as_matrix(b, options.transpose_b) : b;
    Tensor out = matmul(a2, b2, options, stream);
    std::vector<int64_t> shape = out.shape();
    if (b.rank() == 1) shape.erase(shape.end() - 1);
    if (a.rank() == 1) shape.erase(shape.end() - (b.rank() == 1 ? 1 : 2));
    return out.view(shape);
  }
  if (options.c || options.residual)
    args.fail("c and residual are not broadcast by matmul (call gemm with batched operands)");

  size_t batch_dims = static_cast<size_t>(std::max(a.rank(), b.rank()) - 2);
  std::vector<int64_t> a_batch = padded_batch(a, batch_dims), b_batch = padded_batch(b, batch_dims), out_batch;
  for (size_t i = 0; i < batch_dims; ++i) {
    if (a_batch[i] != b_batch[i] && a_batch[i] != 1 && b_batch[i] != 1)
      args.fail("batch dims do not broadcast: {} and {} differ at batch dim {} ({} vs {})", a.describe(), b.describe(),
                i, a_batch[i], b_batch[i]);
    out_batch.push_back(a_batch[i] == 1 ? b_batch[i] : a_batch[i]);  // 1 against 0 is 0
  }
  if (batch_dims <= 1) return gemm(a, b, options, stream);

  std::vector<int64_t> shape = out_batch;
  shape.push_back(a.dim(options.transpose_a ? -1 : -2));
  shape.push_back(b.dim(options.transpose_b ? -2 : -1));
  Tensor out = Tensor::empty(a.device(), gemm_out_dtype(a.dtype(), options), shape);

  if (out.numel() == 0) {
    // No product runs, but numpy still refuses matrices that do not multiply: one gemm of an
    // empty batch checks them (and the options) against each other.
    gemm(first_matrix_or_none(a), first_matrix_or_none(b), options, stream);
    return out;
  }
  std::vector<int64_t> index(batch_dims - 1, 0);
  std::function<void(size_t)> walk = [&](size_t dim) {
    if (dim == index.size()) {
      Tensor slot = out;
      for (size_t i = index.size(); i-- > 0;) slot = slot.select(static_cast<int>(i), index[i]);
      gemm(leading_slice(a, index, batch_dims), leading_slice(b, index, batch_dims), slot, options, stream);
      return;
    }
    for (index[dim] = 0; index[dim] < out_batch[dim]; ++index[dim]) walk(dim + 1);
  };
  walk(0);
  return out;
}

}  // namespace tilejit::ops
