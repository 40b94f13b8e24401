#include "ops/collectives/host_reduction.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "dsl/error.h"

namespace tilejit::ops {
namespace {

// How an element of each format is read into the accumulator type and written back.
struct F32 {
  using Storage = float;
  using Acc = float;
  static Acc load(Storage v) { return v; }
  static Storage store(Acc v) { return v; }
};
struct F16 {
  using Storage = _Float16;
  using Acc = float;
  static Acc load(Storage v) { return static_cast<float>(v); }
  static Storage store(Acc v) { return static_cast<_Float16>(v); }  // round to nearest even
};
struct BF16 {
  using Storage = uint16_t;
  using Acc = float;
  static Acc load(Storage v) { return std::bit_cast<float>(uint32_t{v} << 16); }
  static Storage store(Acc v) {
    uint32_t bits = std::bit_cast<uint32_t>(v);
    if (std::isnan(v)) return static_cast<uint16_t>((bits >> 16) | 0x40);  // stays a (quiet) NaN
    bits += 0x7fff + ((bits >> 16) & 1);                                   // round to nearest even
    return static_cast<uint16_t>(bits >> 16);
  }
};
struct I32 {
  using Storage = int32_t;
  using Acc = uint32_t;  // two's complement wrap-around without overflow
  static Acc load(Storage v) { return static_cast<uint32_t>(v); }
  static Storage store(Acc v) { return static_cast<int32_t>(v); }
};

template <typename Format>
typename Format::Acc combine(ReduceOp op, typename Format::Acc a, typename Format::Acc b) {
  using Acc = typename Format::Acc;
  if constexpr (std::is_same_v<Acc, float>) {
    switch (op) {
      case ReduceOp::max: return std::fmax(a, b);
      case ReduceOp::min: return std::fmin(a, b);
      default: return a + b;
    }
  } else {
    auto sa = static_cast<int32_t>(a), sb = static_cast<int32_t>(b);
    switch (op) {
      case ReduceOp::max: return static_cast<Acc>(std::max(sa, sb));
      case ReduceOp::min: return static_cast<Acc>(std::min(sa, sb));
      default: return a + b;
    }
  }
}

template <typename Format>
typename Format::Acc finish(ReduceOp op, typename Format::Acc acc, size_t inputs) {
  if (op != ReduceOp::average) return acc;
  if constexpr (std::is_same_v<typename Format::Acc, float>)
    return acc / static_cast<float>(inputs);
  else
    return static_cast<uint32_t>(static_cast<int32_t>(acc) / static_cast<int32_t>(inputs));
}

template <typename Format>
void reduce(ReduceOp op, const std::vector<const void*>& inputs, size_t offset, size_t count, void* out) {
  using Storage = typename Format::Storage;
  std::vector<const Storage*> in;
  for (const void* p : inputs) in.push_back(static_cast<const Storage*>(p) + offset);
  auto* o = static_cast<Storage*>(out);
  for (size_t i = 0; i < count; ++i) {
    typename Format::Acc acc = Format::load(in[0][i]);
    for (size_t j = 1; j < in.size(); ++j) acc = combine<Format>(op, acc, Format::load(in[j][i]));
    o[i] = Format::store(finish<Format>(op, acc, in.size()));
  }
}

}  // namespace

void check_reduction_dtype(DType dtype, const char* op) {
  if (dtype != DType::f32 && dtype != DType::f16 && dtype != DType::bf16 && dtype != DType::i32)
    fail("{}: {} tensors cannot be reduced (f32, f16, bf16 and i32 can)", op, dtype_name(dtype));
}

void reduce_elements(DType dtype, ReduceOp op, const std::vector<const void*>& inputs, size_t offset, size_t count,
                     void* out) {
  TJ_CHECK(!inputs.empty());
  switch (dtype) {
    case DType::f32: return reduce<F32>(op, inputs, offset, count, out);
    case DType::f16: return reduce<F16>(op, inputs, offset, count, out);
    case DType::bf16: return reduce<BF16>(op, inputs, offset, count, out);
    case DType::i32: return reduce<I32>(op, inputs, offset, count, out);
    default: check_reduction_dtype(dtype, "reduce");
  }
}

}  // namespace tilejit::ops
