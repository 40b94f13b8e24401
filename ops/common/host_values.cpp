#include "ops/common/host_values.h"

#include <cmath>
#include <cstring>

#include "dsl/error.h"

namespace tilejit::ops {
namespace {

struct FloatBits {
  int exponent_bits, mantissa_bits;
  bool ieee_specials;  // the top exponent is inf / NaN (not for e4m3, whose only NaN is all ones)
};

FloatBits float_bits(DType d) {
  switch (d) {
    case DType::f32: return {8, 23, true};
    case DType::f16: return {5, 10, true};
    case DType::bf16: return {8, 7, true};
    case DType::f8e4m3: return {4, 3, false};
    case DType::f8e5m2: return {5, 2, true};
    default: fail("no float layout for {}", dtype_name(d));
  }
}

uint64_t load_bits(const uint8_t* p, int bytes) {
  uint64_t bits = 0;
  std::memcpy(&bits, p, static_cast<size_t>(bytes));  // little-endian hosts only
  return bits;
}

double decode(uint64_t bits, const FloatBits& f) {
  int m = f.mantissa_bits, e = f.exponent_bits, bias = (1 << (e - 1)) - 1;
  bool negative = (bits >> (m + e)) & 1;
  uint64_t exponent = (bits >> m) & ((uint64_t{1} << e) - 1), mantissa = bits & ((uint64_t{1} << m) - 1);
  uint64_t top = (uint64_t{1} << e) - 1;
  double v;
  if (f.ieee_specials && exponent == top) v = mantissa == 0 ? INFINITY : NAN;
  else if (!f.ieee_specials && exponent == top && mantissa == (uint64_t{1} << m) - 1) v = NAN;
  else if (exponent == 0) v = std::ldexp(static_cast<double>(mantissa), 1 - bias - m);
  else v = std::ldexp(static_cast<double>(mantissa | (uint64_t{1} << m)), static_cast<int>(exponent) - bias - m);
  return negative ? -v : v;
}

}  // namespace

double host_value(DType dtype, const uint8_t* element) {
  switch (dtype) {
    case DType::i8: return static_cast<int8_t>(element[0]);
    case DType::i32: return static_cast<int32_t>(load_bits(element, 4));
    case DType::e8m0: return element[0] == 0xff ? NAN : std::ldexp(1.0, element[0] - 127);
    default: return decode(load_bits(element, dtype_storage_bytes(dtype)), float_bits(dtype));
  }
}

std::vector<double> host_values(DType dtype, const std::vector<uint8_t>& bytes) {
  size_t size = static_cast<size_t>(dtype_storage_bytes(dtype));
  std::vector<double> out(bytes.size() / size);
  for (size_t i = 0; i < out.size(); ++i) out[i] = host_value(dtype, bytes.data() + i * size);
  return out;
}

std::vector<uint8_t> random_elements(DType dtype, int64_t count, std::mt19937_64& rng) {
  int size = dtype_storage_bytes(dtype);
  std::vector<uint8_t> out(static_cast<size_t>(count * size));
  for (int64_t i = 0; i < count; ++i) {
    uint64_t bits;
    if (dtype == DType::i8 || dtype == DType::i32) {
      bits = static_cast<uint64_t>(static_cast<int64_t>(rng() % 17) - 8);
    } else {
      FloatBits f = float_bits(dtype);
      int bias = (1 << (f.exponent_bits - 1)) - 1;
      uint64_t exponent = static_cast<uint64_t>(bias - 3 + static_cast<int>(rng() % 6));
      uint64_t mantissa = (rng() % 4) << (f.mantissa_bits - 2);
      uint64_t sign = rng() & 1;
      bits = sign << (f.exponent_bits + f.mantissa_bits) | exponent << f.mantissa_bits | mantissa;
    }
    std::memcpy(out.data() + i * size, &bits, static_cast<size_t>(size));
  }
  return out;
}

std::vector<uint8_t> random_integer_elements(DType dtype, int64_t count, int limit, std::mt19937_64& rng) {
  int size = dtype_storage_bytes(dtype);
  bool integer = dtype == DType::i8 || dtype == DType::i32;
  FloatBits f = integer ? FloatBits{} : float_bits(dtype);
  std::vector<uint8_t> out(static_cast<size_t>(count * size));
  for (int64_t i = 0; i < count; ++i) {
    int64_t n = static_cast<int64_t>(rng() % static_cast<uint64_t>(2 * limit + 1)) - limit;
    uint64_t bits = static_cast<uint64_t>(n);
    if (!integer) {
      uint64_t magnitude = static_cast<uint64_t>(n < 0 ? -n : n);
      bits = 0;
      if (magnitude != 0) {
        int e = std::ilogb(static_cast<double>(magnitude));
        if (e > f.mantissa_bits) fail("{} does not hold the integer {} exactly", dtype_name(dtype), n);
        int bias = (1 << (f.exponent_bits - 1)) - 1;
        uint64_t mantissa = (magnitude - (uint64_t{1} << e)) << (f.mantissa_bits - e);
        bits = static_cast<uint64_t>(bias + e) << f.mantissa_bits | mantissa;
      }
      if (n < 0) bits |= uint64_t{1} << (f.exponent_bits + f.mantissa_bits);
    }
    std::memcpy(out.data() + i * size, &bits, static_cast<size_t>(size));
  }
  return out;
}

Tensor upload_elements(Device& device, DType dtype, std::vector<int64_t> shape, const void* elements) {
  Tensor t = Tensor::empty(device, dtype, std::move(shape));
  t.copy_from_host(elements, static_cast<size_t>(t.bytes()));
  return t;
}

RandomTensor random_tensor(Device& device, DType dtype, std::vector<int64_t> shape, std::mt19937_64& rng) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  std::vector<uint8_t> bytes = random_elements(dtype, count, rng);
  Tensor t = upload_elements(device, dtype, std::move(shape), bytes.data());
  return {t, host_values(dtype, bytes)};
}

std::vector<double> download_values(const Tensor& t) {
  std::vector<uint8_t> bytes(static_cast<size_t>(t.bytes()));
  t.copy_to_host(bytes.data(), bytes.size());
  return host_values(t.dtype(), bytes);
}

}  // namespace tilejit::ops
