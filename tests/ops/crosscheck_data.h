// Cross-check cases for the op tests: inputs and expected outputs of the library's ops computed by an
// independent implementation (JAX on the CPU; scripts/crosscheck/make_crosscheck.py says how, and reruns it),
// stored in tests/data/crosscheck/<family>.json, one file per op family: attention, scaled_dot (with
// mx_quantize), int8, fp8, norms, collectives.
//
//   crosscheck::CaseFile file = crosscheck::load_family("int8");
//   for (const crosscheck::Case* c : file.of_op("q_matmul_int8")) {
//     SCOPED_TRACE(c->describe());
//     const crosscheck::Array& a = c->input("a");              // dtype, shape, values (doubles)
//     ... run the op ...
//     const crosscheck::Array& want = c->output("out");        // want.tolerance: the suggested one
//   }
//
// A test links tilejit_crosscheck_data, which reads the files from the source tree.
//
// File format (JSON):
//   {"family": "int8", "generator": ..., "versions": {"jax": ..., ...}, "description": ...,
//    "cases": [case, ...]}
//   case:   {"name": unique in its file,
//            "op": the op's name in SEMANTICS.md (attention, scaled_dot, mx_quantize, quant_int8,
//                  matmul_true_int8, q_matmul_int8, matmul, fp8_delayed_scaling, fp8_gemm, layer_norm,
//                  rms_norm, reduce_scatter, all_gather, all_reduce),
//            "note": optional: what the case exercises, and where JAX's numerics depart from SEMANTICS.md,
//            "options": {SEMANTICS.md's Python-side names: JSON values}; an option left out has its default,
//            "inputs": {argument name: array}, e.g. "q", "k", "v", "bias", "mask", "q_seqlens"; an optional
//                      argument left out is None,
//            "outputs": {output name: array with "tolerance"}}
//   array:  {"dtype": a dsl/dtype.h name: i1 (bool) i8 i32 f16 bf16 f32 f8e4m3 f8e5m2 e8m0,
//            "shape": [dims...], [] for a scalar,
//            "values": one per element, row-major,
//            "tolerance": {"rtol": r, "atol": a}, outputs only}
//   values: integers for i8 and i32, 0 / 1 for i1; the exact value for f16, bf16, fp8 and e8m0 (the shortest
//           decimal that reads back as that double); for f32 the shortest decimal that identifies the f32
//           value, which the reader rounds to f32; "inf", "-inf" and "nan" for values that JSON cannot hold.
//   An output matches when |got - want| <= atol + rtol * |want| for every element; rtol = atol = 0 means
//   exact; a NaN matches only a NaN.
// Collective cases hold every rank's tensor stacked along a leading dim of size options.world_size.
// Gradient cases hold the incoming gradient as an input ("dout", "dy") and the gradients as outputs.
// Steps of fp8_delayed_scaling stack along a leading dim.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "dsl/dtype.h"
#include "dsl/error.h"

namespace tilejit::crosscheck {

// The op families, one file each.
inline constexpr std::string_view kFamilies[] = {"attention", "scaled_dot", "int8", "fp8", "norms", "collectives"};

struct Tolerance {
  double rtol = 0, atol = 0;
  bool exact() const { return rtol == 0 && atol == 0; }
};

struct Array {
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  std::vector<double> values;  // row-major; exact in `dtype`
  Tolerance tolerance;         // outputs only
  int64_t numel() const;
};

class Case {
 public:
  const std::string& name() const { return name_; }
  const std::string& op() const { return op_; }
  const std::string& note() const { return note_; }  // empty when the case has none
  // "int8.json case 'q_matmul_int8_f32' (q_matmul_int8)", for failure messages.
  std::string describe() const;

  bool has_option(const std::string& name) const;
  const nlohmann::json& options() const { return options_; }
  // The option as T (int, double, bool, std::string, std::vector<int>, nested vectors...); a missing
  // option, or one that is not a T, is a tilejit::Error naming the case.
  template <typename T>
  T option(const std::string& name) const {
    const nlohmann::json& value = option_json(name);
    try {
      return value.get<T>();
    } catch (const nlohmann::json::exception& e) {
      bad_option(name, e.what());
    }
  }
  // The same, or `fallback` when the case leaves the option out.
  template <typename T>
  T option(const std::string& name, T fallback) const {
    return has_option(name) ? option<T>(name) : fallback;
  }

  bool has_input(const std::string& name) const { return inputs_.count(name) != 0; }
  const Array& input(const std::string& name) const;  // tilejit::Error if the case has no such input
  const std::map<std::string, Array>& inputs() const { return inputs_; }
  bool has_output(const std::string& name) const { return outputs_.count(name) != 0; }
  const Array& output(const std::string& name) const;
  const std::map<std::string, Array>& outputs() const { return outputs_; }

 private:
  friend class CaseFile;
  const nlohmann::json& option_json(const std::string& name) const;
  [[noreturn]] void bad_option(const std::string& name, const std::string& why) const;

  std::string file_, name_, op_, note_;
  nlohmann::json options_ = nlohmann::json::object();
  std::map<std::string, Array> inputs_, outputs_;
};

class CaseFile {
 public:
  // Reads and checks a whole file: every case has a name, an op, options, inputs and outputs; every array a
  // known dtype, a shape, as many values as the shape has elements, integral values for integer dtypes and
  // 0 / 1 for i1; every output a tolerance. Anything else is a tilejit::Error naming the file, the case and
  // the array.
  static CaseFile load(const std::string& path);

  const std::string& path() const { return path_; }
  const std::string& family() const { return family_; }
  const std::string& jax_version() const { return jax_version_; }
  const std::vector<Case>& cases() const { return cases_; }
  const Case& find(const std::string& name) const;              // tilejit::Error if there is none
  std::vector<const Case*> of_op(const std::string& op) const;  // in file order; may be empty

 private:
  std::string path_, family_, jax_version_;
  std::vector<Case> cases_;
};

// The folder the files are read from (the source tree's tests/data/crosscheck).
std::string data_directory();
// Loads data_directory()/<family>.json.
CaseFile load_family(std::string_view family);

}  // namespace tilejit::crosscheck
