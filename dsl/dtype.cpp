#include "dsl/dtype.h"

#include <array>

#include "dsl/error.h"

namespace tilejit {
namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;
  int bits;
  bool integer;
};

constexpr std::array<DTypeInfo, 10> kInfo = {{
    {DType::i1, "i1", 1, true},
    {DType::i8, "i8", 8, true},
    {DType::i32, "i32", 32, true},
    {DType::i64, "i64", 64, true},
    {DType::f16, "f16", 16, false},
    {DType::bf16, "bf16", 16, false},
    {DType::f32, "f32", 32, false},
    {DType::f8e4m3, "f8e4m3", 8, false},
    {DType::f8e5m2, "f8e5m2", 8, false},
    {DType::e8m0, "e8m0", 8, false},
}};

const DTypeInfo& info(DType t) { return kInfo[static_cast<size_t>(t)]; }

}  // namespace

std::string_view dtype_name(DType t) { return info(t).name; }

DType parse_dtype(std::string_view name) {
  for (const auto& i : kInfo)
    if (i.name == name) return i.type;
  fail("unknown dtype '{}' (expected one of i1 i8 i32 i64 f16 bf16 f32 f8e4m3 f8e5m2 e8m0)", name);
}

int dtype_bits(DType t) { return info(t).bits; }
int dtype_storage_bytes(DType t) { return t == DType::i1 ? 1 : info(t).bits / 8; }
bool is_integer(DType t) { return info(t).integer; }
bool is_float(DType t) { return !info(t).integer; }
bool is_fp8(DType t) { return t == DType::f8e4m3 || t == DType::f8e5m2; }
bool is_arithmetic(DType t) {
  return is_integer(t) || t == DType::f16 || t == DType::bf16 || t == DType::f32;
}

}  // namespace tilejit
