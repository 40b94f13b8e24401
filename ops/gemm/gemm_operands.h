// How the main kernel reads A and B. On sm_90, whose wgmma lowering takes tiles where TMA left
// them, an operand that the tensor cores read straight from the pipeline's ring
// (codegen/shared_operands.h) is read through a tensor descriptor when its memory allows one:
// TMA then copies whole tiles into the ring, zero-filling past the edges, and no thread spends
// registers or instructions on addresses. Every other operand is read through its pointer and
// strides, 16 bytes per thread and copy.
//
// A descriptor is rank 2, so a batched operand gets one only when its batches lie one after the
// other (stacked as the descriptor's rows) or are one shared matrix.
//
// The output, where the main kernel writes it (not split-K's slices), leaves through a
// descriptor on sm_90 and newer when its memory allows one and it is one matrix (stacked
// batches would let a batch's last tile rows spill into the next): each tile goes to shared
// memory, and TMA stores it, clipped at the matrix's edges.
#pragma once

#include <optional>
#include <string>

#include "ops/gemm/gemm_config.h"
#include "ops/gemm/gemm_problem.h"
#include "runtime/tensor_descriptor.h"

namespace tilejit::ops::gemm_detail {

struct OperandDescriptor {
  TensorDescriptor descriptor;  // the operand in its memory order, its blocks one BLOCK_K step
  int64_t batch_rows = 0;       // descriptor rows from one batch to the next; 0 when all share one
};

struct GemmOperands {
  std::optional<OperandDescriptor> a, b;  // absent: read through the pointer and strides
  std::optional<TensorDescriptor> out;    // in blocks of one output tile; absent: written through its pointer

  std::string key() const;  // names which operands are descriptors (their kernel parameters differ)
};

// The operands of `p` as the main kernel tiled by `config` reads them on `device`.
GemmOperands gemm_operands(const GemmProblem& p, const GemmConfig& config, const DeviceInfo& device);

}  // namespace tilejit::ops::gemm_detail
