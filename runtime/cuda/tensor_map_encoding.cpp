#include "runtime/cuda/tensor_map_encoding.h"

#include <cstring>

#include "codegen/tma_box.h"
#include "runtime/cuda/driver_api.h"

namespace tilejit::cuda {

TensorMap encode_tiled_tensor_map(const TensorDescriptor& d, int row_slices) {
  static_assert(sizeof(CUtensorMap) == sizeof(TensorMap));
  codegen::TmaBox box = codegen::tma_box(d.dtype, {d.block[0], d.block[1]}, row_slices);
  int64_t element_bytes = dtype_storage_bytes(d.dtype);
  // The copy moves bits: an unsigned type of the element's width (no fill value is used).
  CUtensorMapDataType type = element_bytes == 1   ? CU_TENSOR_MAP_DATA_TYPE_UINT8
                             : element_bytes == 2 ? CU_TENSOR_MAP_DATA_TYPE_UINT16
                             : element_bytes == 4 ? CU_TENSOR_MAP_DATA_TYPE_UINT32
                                                  : CU_TENSOR_MAP_DATA_TYPE_UINT64;
  CUtensorMapSwizzle swizzle = box.swizzle_bytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
                               : box.swizzle_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                               : box.swizzle_bytes == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                                         : CU_TENSOR_MAP_SWIZZLE_NONE;
  // Innermost dim first: columns, rows, then the outer dims from the innermost out, a box
  // holding one index of each.
  constexpr size_t kMaxRank = 2 + TensorDescriptor::kMaxOuterDims;
  cuuint64_t dims[kMaxRank] = {static_cast<cuuint64_t>(d.shape[1]), static_cast<cuuint64_t>(d.shape[0])};
  cuuint64_t strides[kMaxRank - 1] = {static_cast<cuuint64_t>(d.row_stride * element_bytes)};
  cuuint32_t box_dims[kMaxRank] = {static_cast<cuuint32_t>(box.columns), static_cast<cuuint32_t>(box.rows)};
  cuuint32_t element_strides[kMaxRank] = {1, 1, 1, 1, 1};
  const auto rank = static_cast<size_t>(d.rank());
  for (size_t i = 2; i < rank; ++i) {
    const DescriptorDim& outer = d.outer[rank - 1 - i];
    dims[i] = static_cast<cuuint64_t>(outer.size);
    strides[i - 1] = static_cast<cuuint64_t>(outer.stride * element_bytes);
    box_dims[i] = 1;
  }
  CUtensorMap map;
  CUresult result = driver().cuTensorMapEncodeTiled(&map, type, static_cast<cuuint32_t>(rank), d.data, dims, strides,
                                                    box_dims, element_strides,
                                                    CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                                                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != CUDA_SUCCESS) fail_call(result, "cuTensorMapEncodeTiled", d.describe());
  TensorMap out{};
  std::memcpy(out.bytes.data(), &map, sizeof map);
  return out;
}

}  // namespace tilejit::cuda
