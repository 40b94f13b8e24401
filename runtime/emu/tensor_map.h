// Internal to the emulator: the tensor maps its TMA copies read (runtime/emu/tma_ops.cpp), in
// the emulator's own format, encoded from a TensorDescriptor with the box the code generator
// copies blocks in (codegen/tma_box.h).
#pragma once

#include <cstring>

#include "codegen/tma_box.h"
#include "runtime/emu/cta.h"
#include "runtime/tensor_descriptor.h"

namespace tilejit::emu {

static_assert(sizeof(EmuTensorMap) <= sizeof(TensorMap));

inline TensorMap encode_tensor_map(const TensorDescriptor& d, int row_slices) {
  codegen::TmaBox box = codegen::tma_box(d.dtype, {d.block[0], d.block[1]}, row_slices);
  static_assert(TensorDescriptor::kMaxOuterDims == EmuTensorMap::kMaxOuterDims);
  int64_t element_bytes = dtype_storage_bytes(d.dtype);
  EmuTensorMap m;
  m.magic = EmuTensorMap::kMagic;
  m.data = static_cast<const std::byte*>(d.data);
  m.rows = d.shape[0];
  m.columns = d.shape[1];
  m.row_stride_bytes = d.row_stride * element_bytes;
  m.element_bytes = static_cast<int32_t>(element_bytes);
  m.box_columns = static_cast<int32_t>(box.columns);
  m.box_rows = static_cast<int32_t>(box.rows);
  m.swizzle_bytes = box.swizzle_bytes;
  m.outer_dims = static_cast<int32_t>(d.outer.size());
  for (size_t i = 0; i < d.outer.size(); ++i) {
    m.outer_sizes[i] = d.outer[i].size;
    m.outer_stride_bytes[i] = d.outer[i].stride * element_bytes;
  }
  TensorMap out{};
  std::memcpy(out.bytes.data(), &m, sizeof m);
  return out;
}

}  // namespace tilejit::emu
