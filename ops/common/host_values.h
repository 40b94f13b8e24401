// Values of device dtypes on the host, for the library runs (ops/library_runs.h): random
// inputs made directly as the dtype's bytes, and those bytes read back as doubles for the
// references.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "dsl/dtype.h"
#include "runtime/tensor.h"

namespace tilejit::ops {

// The value of one element of any dtype (i1 stored as one byte; i64 rounded to a double).
double host_value(DType dtype, const uint8_t* element);
// host_value for many elements of one dtype, safe to call from many threads: of 1- and 2-byte
// dtypes, by a table of every encoding (made once per dtype for the process, under 2 ms), for the
// hundreds of millions of elements of a tuning problem's reference.
class ElementDecoder {
 public:
  explicit ElementDecoder(DType dtype);
  double operator()(const uint8_t* element) const {
    if (table_ == nullptr) return host_value(dtype_, element);
    return table_[size_ == 1 ? element[0] : static_cast<size_t>(element[0] | element[1] << 8)];
  }

 private:
  DType dtype_;
  int size_;
  const double* table_ = nullptr;  // by encoding (little-endian), when size_ <= 2
};

// Every element of `bytes` (elements of `dtype`) as a double.
std::vector<double> host_values(DType dtype, const std::vector<uint8_t>& bytes);

// `count` random elements of `dtype`: floats ±(1 + m/4) · 2^e with e in [-3, 2] and m in
// [0, 3] (exact in every float format, fp8 included; no NaN or inf), integers (i8, i32, i64)
// in [-8, 8]. Made on every core from one draw of `rng`: the same state of `rng` gives the same
// elements. Throws tilejit::Error for i1 and e8m0.
std::vector<uint8_t> random_elements(DType dtype, int64_t count, std::mt19937_64& rng);

// `count` random integers in [-limit, limit] as elements of `dtype`, made as random_elements
// are. A float format with m mantissa bits takes limits below 2^(m + 1); limit 4 suits them all,
// fp8 included. Throws tilejit::Error for a limit `dtype` does not hold.
std::vector<uint8_t> random_integer_elements(DType dtype, int64_t count, int limit, std::mt19937_64& rng);

// A new contiguous tensor of `shape` on `device` holding `elements` (row-major, of `dtype`).
Tensor upload_elements(Device& device, DType dtype, std::vector<int64_t> shape, const void* elements);
// A new contiguous tensor of `shape` holding random_elements, and their values.
struct RandomTensor {
  Tensor tensor;
  std::vector<double> values;
};
RandomTensor random_tensor(Device& device, DType dtype, std::vector<int64_t> shape, std::mt19937_64& rng);

// Every element of a contiguous tensor as a double (waits for the copy).
std::vector<double> download_values(const Tensor& t);

}  // namespace tilejit::ops
