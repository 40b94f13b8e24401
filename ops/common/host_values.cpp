#include "ops/common/host_values.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <mutex>

#include "autotune/parallel.h"
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

// Calls `fill(begin, end)` over [0, count) in chunks on every core: a tuning problem's operands
// are hundreds of millions of elements, which one thread takes seconds to make. `fill` must not
// throw.
void for_chunks(int64_t count, const std::function<void(int64_t, int64_t)>& fill) {
  constexpr int64_t kChunk = int64_t{1} << 16;
  const int64_t chunks = (count + kChunk - 1) / kChunk;
  autotune::run_in_parallel(static_cast<size_t>(std::max<int64_t>(chunks, 0)), 0, [&](size_t c) {
    const int64_t begin = static_cast<int64_t>(c) * kChunk;
    fill(begin, std::min(count, begin + kChunk));
  });
}

// The i-th draw of the stream `seed`: SplitMix64's output function of the i-th step, a
// counter-based generator, so that each chunk is made on its own and the elements do not depend
// on how many threads made them.
uint64_t draw(uint64_t seed, int64_t i) {
  uint64_t z = seed + (static_cast<uint64_t>(i) + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The float layout of a dtype random elements are made of (none for an integer dtype); throws
// for i1, whose one byte holds 0 and 1 only, and for e8m0, which has no sign.
FloatBits random_layout(DType dtype) {
  if (dtype == DType::i1) fail("random elements: i1 holds 0 and 1 only, not signed integers");
  return is_integer(dtype) ? FloatBits{} : float_bits(dtype);
}

}  // namespace

double host_value(DType dtype, const uint8_t* element) {
  switch (dtype) {
    case DType::i1: return element[0] != 0;
    case DType::i8: return static_cast<int8_t>(element[0]);
    case DType::i32: return static_cast<int32_t>(load_bits(element, 4));
    case DType::i64: return static_cast<double>(static_cast<int64_t>(load_bits(element, 8)));
    case DType::e8m0: return element[0] == 0xff ? NAN : std::ldexp(1.0, element[0] - 127);
    default: return decode(load_bits(element, dtype_storage_bytes(dtype)), float_bits(dtype));
  }
}

ElementDecoder::ElementDecoder(DType dtype) : dtype_(dtype), size_(dtype_storage_bytes(dtype)) {
  if (size_ > 2) return;
  // One table per dtype for the process, made by its first decoder: most decoders are for a few
  // elements, where making a 65536-entry table each time would cost more than the decoding.
  constexpr size_t kDTypes = static_cast<size_t>(DType::e8m0) + 1;  // e8m0 is the enum's last
  static std::array<std::once_flag, kDTypes> made;
  static std::array<std::vector<double>, kDTypes> tables;
  const auto slot = static_cast<size_t>(dtype);
  std::call_once(made[slot], [&] {
    std::vector<double>& table = tables[slot];
    table.resize(size_t{1} << (8 * size_));
    for (size_t bits = 0; bits < table.size(); ++bits) {
      const uint8_t element[2] = {static_cast<uint8_t>(bits), static_cast<uint8_t>(bits >> 8)};
      table[bits] = host_value(dtype, element);
    }
  });
  table_ = tables[slot].data();
}

std::vector<double> host_values(DType dtype, const std::vector<uint8_t>& bytes) {
  size_t size = static_cast<size_t>(dtype_storage_bytes(dtype));
  const ElementDecoder decode(dtype);
  std::vector<double> out(bytes.size() / size);
  for_chunks(static_cast<int64_t>(out.size()), [&](int64_t begin, int64_t end) {
    for (auto i = static_cast<size_t>(begin); i < static_cast<size_t>(end); ++i) out[i] = decode(bytes.data() + i * size);
  });
  return out;
}

std::vector<uint8_t> random_elements(DType dtype, int64_t count, std::mt19937_64& rng) {
  const auto size = static_cast<size_t>(dtype_storage_bytes(dtype));
  const bool integer = is_integer(dtype);
  const FloatBits f = random_layout(dtype);
  const uint64_t seed = rng();
  std::vector<uint8_t> out(static_cast<size_t>(count) * size);
  for_chunks(count, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const uint64_t r = draw(seed, i);
      uint64_t bits;
      if (integer) {
        bits = static_cast<uint64_t>(static_cast<int64_t>(r % 17) - 8);
      } else {  // sign from bit 0, mantissa from bits 1-2, exponent from the bits above
        const int bias = (1 << (f.exponent_bits - 1)) - 1;
        const auto exponent = static_cast<uint64_t>(bias - 3 + static_cast<int>((r >> 3) % 6));
        const uint64_t mantissa = ((r >> 1) & 3) << (f.mantissa_bits - 2);
        bits = (r & 1) << (f.exponent_bits + f.mantissa_bits) | exponent << f.mantissa_bits | mantissa;
      }
      std::memcpy(out.data() + static_cast<size_t>(i) * size, &bits, size);
    }
  });
  return out;
}

std::vector<uint8_t> random_integer_elements(DType dtype, int64_t count, int limit, std::mt19937_64& rng) {
  const auto size = static_cast<size_t>(dtype_storage_bytes(dtype));
  const bool integer = is_integer(dtype);
  const FloatBits f = random_layout(dtype);
  if (limit < 0) fail("random integers: the limit must not be negative, got {}", limit);
  if (!integer && limit > 0 && std::ilogb(static_cast<double>(limit)) > f.mantissa_bits)
    fail("{} does not hold the integer {} exactly", dtype_name(dtype), limit);
  if (integer && dtype_bits(dtype) < 32 && limit >= 1 << (dtype_bits(dtype) - 1))
    fail("{} does not hold the integer {}", dtype_name(dtype), limit);
  const uint64_t seed = rng();
  std::vector<uint8_t> out(static_cast<size_t>(count) * size);
  for_chunks(count, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t n = static_cast<int64_t>(draw(seed, i) % (2 * static_cast<uint64_t>(limit) + 1)) - limit;
      uint64_t bits = static_cast<uint64_t>(n);
      if (!integer) {
        const auto magnitude = static_cast<uint64_t>(n < 0 ? -n : n);
        bits = 0;
        if (magnitude != 0) {
          const int e = std::ilogb(static_cast<double>(magnitude));
          const int bias = (1 << (f.exponent_bits - 1)) - 1;
          const uint64_t mantissa = (magnitude - (uint64_t{1} << e)) << (f.mantissa_bits - e);
          bits = static_cast<uint64_t>(bias + e) << f.mantissa_bits | mantissa;
        }
        if (n < 0) bits |= uint64_t{1} << (f.exponent_bits + f.mantissa_bits);
      }
      std::memcpy(out.data() + static_cast<size_t>(i) * size, &bits, size);
    }
  });
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
