#include "ops/gemm/gemm_operands.h"

#include "codegen/shared_operands.h"

namespace tilejit::ops::gemm_detail {
namespace {

// One operand as it lies in memory, and how the kernel's tiles cut it.
struct StoredOperand {
  const Tensor* tensor;
  DType dtype;
  int64_t rows, cols;                             // one batch, in memory order
  int64_t row_stride, col_stride, batch_stride;   // elements
  std::array<int64_t, 2> block;                   // one BLOCK_K step's tile, in memory order
  bool k_along_rows;                              // K runs down the rows (A stored (K, M), B stored (K, N))
  bool staged_as_is;                              // the dot reads its tile from the ring as TMA leaves it
                                                  // (other tiles go through registers: TMA would be a detour)
};

StoredOperand stored_a(const GemmProblem& p, const GemmConfig& c) {
  const MatrixStrides& s = p.a_strides;
  const DType d = p.features.a;
  if (c.a_transposed)
    return {p.a, d, p.k, p.m, s.col, s.row, s.batch, {c.block_k, c.block_m}, true, codegen::dot_reads_from_shared(d, false)};
  return {p.a, d, p.m, p.k, s.row, s.col, s.batch, {c.block_m, c.block_k}, false, codegen::dot_reads_from_shared(d, true)};
}

StoredOperand stored_b(const GemmProblem& p, const GemmConfig& c) {
  const MatrixStrides& s = p.b_strides;
  const DType d = p.features.b;
  if (c.b_transposed)
    return {p.b, d, p.n, p.k, s.col, s.row, s.batch, {c.block_n, c.block_k}, false, codegen::dot_reads_from_shared(d, true)};
  return {p.b, d, p.k, p.n, s.row, s.col, s.batch, {c.block_k, c.block_n}, true, codegen::dot_reads_from_shared(d, false)};
}

std::optional<OperandDescriptor> describe(const StoredOperand& o, int64_t batch, int64_t block_k) {
  if (!o.staged_as_is || o.col_stride != 1) return std::nullopt;
  OperandDescriptor d{{o.tensor->data(), o.dtype, {o.rows, o.cols}, o.row_stride, o.block, {}, &o.tensor->device()}, 0};
  if (batch > 1 && o.batch_stride != 0) {
    if (o.batch_stride != o.rows * o.row_stride) return std::nullopt;
    // Past K, TMA must read zeros, not the next batch's first rows.
    if (o.k_along_rows && o.rows % block_k != 0) return std::nullopt;
    d.descriptor.shape[0] = batch * o.rows;
    d.batch_rows = o.rows;
  }
  if (!d.descriptor.problem().empty()) return std::nullopt;
  return d;
}

// TMA stores need sm_90's TMA only, not the wgmma lowering the operands' descriptors serve.
std::optional<TensorDescriptor> describe_output(const GemmProblem& p, const GemmConfig& c, const DeviceInfo& device) {
  if (device.cc_major < 9 || c.split_k > 1 || p.batch > 1 || !p.out || p.out_strides.col != 1) return std::nullopt;
  TensorDescriptor d{p.out->data(), p.features.out, {p.m, p.n}, p.out_strides.row, {c.block_m, c.block_n}, {},
                     &p.out->device()};
  if (!d.problem().empty()) return std::nullopt;
  return d;
}

}  // namespace

std::string GemmOperands::key() const {
  return std::string(a ? "atma" : "aptr") + (b ? "btma" : "bptr") + (out ? "otma" : "");
}

GemmOperands gemm_operands(const GemmProblem& p, const GemmConfig& config, const DeviceInfo& device) {
  GemmOperands operands;
  operands.out = describe_output(p, config, device);
  // The tiles must be staged in a pipeline, by sm_90a's lowering: its wgmma reads them where TMA left them.
  if (device.cc_major != 9 || config.num_stages < 2) return operands;
  operands.a = describe(stored_a(p, config), p.batch, config.block_k);
  operands.b = describe(stored_b(p, config), p.batch, config.block_k);
  return operands;
}

}  // namespace tilejit::ops::gemm_detail
