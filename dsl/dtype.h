// Element types of tiles and pointers (SEMANTICS.md, "Number formats").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tilejit {

enum class DType : uint8_t { i1, i8, i32, i64, f16, bf16, f32, f8e4m3, f8e5m2, e8m0 };

std::string_view dtype_name(DType t);
// Parses a name as dtype_name prints it; throws tilejit::Error for an unknown name.
DType parse_dtype(std::string_view name);

int dtype_bits(DType t);            // i1 counts as 1 bit in registers
int dtype_storage_bytes(DType t);   // bytes in memory (i1 is stored as one byte)
bool is_integer(DType t);           // i1, i8, i32, i64
bool is_float(DType t);             // every floating-point format, fp8 and e8m0 included
bool is_fp8(DType t);               // f8e4m3, f8e5m2
// Formats the lowering computes with directly; fp8 and e8m0 tiles must be cast first.
bool is_arithmetic(DType t);

namespace dtypes {
inline constexpr DType i1 = DType::i1;
inline constexpr DType i8 = DType::i8;
inline constexpr DType i32 = DType::i32;
inline constexpr DType i64 = DType::i64;
inline constexpr DType f16 = DType::f16;
inline constexpr DType bf16 = DType::bf16;
inline constexpr DType f32 = DType::f32;
inline constexpr DType f8e4m3 = DType::f8e4m3;
inline constexpr DType f8e5m2 = DType::f8e5m2;
inline constexpr DType e8m0 = DType::e8m0;
}  // namespace dtypes

}  // namespace tilejit
