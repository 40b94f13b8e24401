// The cross-check case files (tests/data/crosscheck, written by scripts/crosscheck/make_crosscheck.py):
// every file loads; every case names a known op with known options, inputs and outputs; every value is
// exact in its dtype; and the expected outputs agree with host computations straight from SEMANTICS.md in
// long double (bit for bit where SEMANTICS.md fixes every rounding: quant_int8, the int8 products,
// mx_quantize, delayed scaling), so a broken generator is caught here and not in the op tests. Also the
// reader's errors for a missing file and for malformed cases.
#include "tests/ops/crosscheck_data.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/emu/ops_test_util.h"
#include "tests/error_message.h"
#include "tests/temp_directory.h"

namespace tjcrosscheck {
namespace {

using namespace tjops;
using tilejit::crosscheck::Array;
using tilejit::crosscheck::Case;
using tilejit::crosscheck::CaseFile;
using tilejit::crosscheck::kFamilies;
using tilejit::crosscheck::load_family;
using tilejit::testing_util::error_of;
using tilejit::testing_util::TempDirectory;
using Shape = std::vector<int64_t>;
using Index = std::vector<int64_t>;

// --- helpers -------------------------------------------------------------------------------------

const CaseFile& family(std::string_view name) {
  static std::map<std::string, CaseFile, std::less<>> loaded;
  auto it = loaded.find(name);
  if (it == loaded.end()) it = loaded.emplace(std::string(name), load_family(name)).first;
  return it->second;
}

std::vector<LD> values_of(const Array& a) { return std::vector<LD>(a.values.begin(), a.values.end()); }

// Compares `got` (host-computed) with the case's expected output within its suggested tolerance.
void expect_output(const Case& c, const std::string& name, const std::vector<LD>& got) {
  const Array& want = c.output(name);
  ASSERT_EQ(got.size(), want.values.size()) << c.describe() << " output " << name;
  expect_values(c.describe() + " output " + name, got, values_of(want), Tol{want.tolerance.rtol, want.tolerance.atol});
}

// Exact, -0 and +0 told apart: for outputs that SEMANTICS.md fixes bit for bit.
void expect_bits(const Case& c, const std::string& name, const std::vector<LD>& got) {
  const Array& want = c.output(name);
  EXPECT_TRUE(want.tolerance.exact()) << c.describe() << " output " << name;
  ASSERT_EQ(got.size(), want.values.size()) << c.describe() << " output " << name;
  expect_values(c.describe() + " output " + name, got, values_of(want), Tol{0, 0, true});
}

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Calls f(index, flat) for every index of `shape`, row-major.
void for_each_index(const Shape& shape, const std::function<void(const Index&, size_t)>& f) {
  Index idx(shape.size(), 0);
  for (int64_t flat = 0; flat < numel(shape); ++flat) {
    f(idx, static_cast<size_t>(flat));
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

size_t flat_index(const Shape& shape, const Index& idx) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + idx[d];
  return static_cast<size_t>(flat);
}

LD at(const Array& a, const Index& idx) { return a.values[flat_index(a.shape, idx)]; }

// a[idx] with numpy broadcasting: a has idx's rank, and its size-1 dims take index 0.
LD at_broadcast(const Array& a, Index idx) {
  for (size_t d = 0; d < idx.size(); ++d)
    if (a.shape[d] == 1) idx[d] = 0;
  return at(a, idx);
}

int normalized(int dim, size_t rank) { return dim < 0 ? dim + static_cast<int>(rank) : dim; }

// --- well-formedness ---------------------------------------------------------------------------

struct OpSpec {
  std::string family, op;
  std::set<std::string> options, required_inputs, optional_inputs, required_outputs, optional_outputs;
};

const std::vector<OpSpec>& op_specs() {
  static const std::vector<OpSpec> specs = {
      {"attention",
       "attention",
       {"scale", "is_causal", "causal_bottom_right", "local_window"},
       {"q", "k", "v"},
       {"bias", "mask", "q_seqlens", "kv_seqlens", "dout"},
       {"out"},
       {"lse", "dq", "dk", "dv"}},
      {"scaled_dot",
       "scaled_dot",
       {"dimension_numbers", "preferred_element_type"},
       {"lhs", "rhs"},
       {"lhs_scale", "rhs_scale"},
       {"out"},
       {}},
      {"scaled_dot", "mx_quantize", {}, {"x"}, {}, {"data", "scale"}, {}},
      {"int8", "quant_int8", {}, {"x"}, {}, {"out"}, {}},
      {"int8", "matmul_true_int8", {}, {"a", "b"}, {}, {"out"}, {}},
      {"int8", "q_matmul_int8", {}, {"a", "w"}, {}, {"out"}, {}},
      {"int8", "matmul", {}, {"a", "b"}, {}, {"out"}, {}},
      {"fp8",
       "fp8_delayed_scaling",
       {"fp8_format", "tensor", "margin", "amax_history_len", "amax_compute_algo"},
       {"x", "scale", "amax_history"},
       {},
       {"q", "scale_inv", "amax", "scale", "amax_history"},
       {}},
      {"fp8", "fp8_gemm", {"out_dtype"}, {"a", "b", "a_scale_inv", "b_scale_inv"}, {}, {"out"}, {}},
      {"norms",
       "layer_norm",
       {"eps", "zero_centered_gamma"},
       {"x", "gamma", "beta"},
       {"dy"},
       {"y", "mean", "rsigma"},
       {"dx", "dgamma", "dbeta"}},
      {"norms", "rms_norm", {"eps"}, {"x", "gamma"}, {"dy"}, {"y", "rsigma"}, {"dx", "dgamma"}},
      {"collectives", "reduce_scatter", {"world_size", "scatter_dimension", "tiled", "groups"}, {"x"}, {}, {"out"}, {}},
      {"collectives", "all_gather", {"world_size", "axis", "tiled", "groups"}, {"x"}, {}, {"out"}, {}},
      {"collectives", "all_reduce", {"world_size", "op", "groups"}, {"x"}, {}, {"out"}, {}},
  };
  return specs;
}

const OpSpec* spec_of(std::string_view family_name, const std::string& op) {
  for (const OpSpec& s : op_specs())
    if (s.family == family_name && s.op == op) return &s;
  return nullptr;
}

bool has_inf(DType d) { return d == DType::f32 || d == DType::f16 || d == DType::bf16 || d == DType::f8e5m2; }

// v is a value of dtype d (NaN: every float format has one; inf only where the format has it).
bool representable(DType d, double v) {
  if (std::isnan(v)) return is_float(d);
  if (std::isinf(v)) return has_inf(d);
  return round_to(d, v) == v;
}

void check_names(const std::string& what, const std::set<std::string>& present, const std::set<std::string>& required,
                 const std::set<std::string>& optional) {
  for (const std::string& name : required) EXPECT_TRUE(present.count(name)) << what << " '" << name << "' is missing";
  for (const std::string& name : present)
    EXPECT_TRUE(required.count(name) || optional.count(name)) << what << " '" << name << "' is not known";
}

template <typename Map>
std::set<std::string> keys(const Map& m) {
  std::set<std::string> out;
  for (const auto& [k, v] : m) out.insert(k);
  return out;
}

TEST(CrosscheckData, EveryFileLoadsAndEveryCaseIsWellFormed) {
  size_t total_cases = 0, total_values = 0;
  for (std::string_view name : kFamilies) {
    const CaseFile& file = family(name);
    EXPECT_EQ(file.family(), name);
    EXPECT_FALSE(file.jax_version().empty());
    EXPECT_FALSE(file.cases().empty()) << file.path();
    for (const Case& c : file.cases()) {
      SCOPED_TRACE(c.describe());
      ++total_cases;
      const OpSpec* spec = spec_of(name, c.op());
      ASSERT_NE(spec, nullptr) << "unknown op '" << c.op() << "' for this family";
      std::set<std::string> options;
      for (const auto& [k, v] : c.options().items()) options.insert(k);
      check_names("option", options, {}, spec->options);
      check_names("input", keys(c.inputs()), spec->required_inputs, spec->optional_inputs);
      check_names("output", keys(c.outputs()), spec->required_outputs, spec->optional_outputs);
      for (const auto* arrays : {&c.inputs(), &c.outputs()}) {
        for (const auto& [array_name, a] : *arrays) {
          EXPECT_EQ(static_cast<size_t>(a.numel()), a.values.size()) << array_name;
          size_t bad = 0;
          for (double v : a.values) bad += !representable(a.dtype, v);
          EXPECT_EQ(bad, 0u) << array_name << ": values not exact in " << name_of(a.dtype);
          total_values += a.values.size();
        }
      }
      for (const auto& [output_name, a] : c.outputs()) {
        if (!is_float(a.dtype) || is_fp8(a.dtype) || a.dtype == DType::e8m0) {
          EXPECT_TRUE(a.tolerance.exact()) << output_name << ": integer and quantized outputs are exact";
        }
      }
    }
  }
  EXPECT_GT(total_cases, 80u);
  std::cout << total_cases << " cases, " << total_values << " values\n";
}

// --- int8 ----------------------------------------------------------------------------------------

LD quant_int8(LD x) { return std::isnan(x) ? 0 : std::clamp<LD>(std::nearbyint(x), -127, 127) + 0.0L; }  // no -0 in i8

// a (M, K) @ b (K, N) in long double: exact for i8 and fp8 values.
std::vector<LD> matmul_long_double(const std::vector<LD>& a, const std::vector<LD>& b, int64_t M, int64_t K,
                                   int64_t N) {
  std::vector<LD> out(static_cast<size_t>(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      LD s = 0;
      for (int64_t k = 0; k < K; ++k) s += a[static_cast<size_t>(i * K + k)] * b[static_cast<size_t>(k * N + j)];
      out[static_cast<size_t>(i * N + j)] = s;
    }
  return out;
}

TEST(CrosscheckData, QuantInt8RoundsHalfToEvenAndClips) {
  for (const Case* c : family("int8").of_op("quant_int8")) {
    std::vector<LD> want;
    for (double x : c->input("x").values) want.push_back(quant_int8(x));
    expect_bits(*c, "out", want);
  }
}

TEST(CrosscheckData, TrueInt8MatmulIsExact) {
  for (const Case* c : family("int8").of_op("matmul_true_int8")) {
    const Array &a = c->input("a"), &b = c->input("b");
    expect_bits(*c, "out", matmul_long_double(values_of(a), values_of(b), a.shape[0], a.shape[1], b.shape[1]));
  }
}

// FJFormer's q_matmul_int8 with every step rounded to f32 as SEMANTICS.md writes it; an all-zero row or
// column gives 0. The maxima keep NaN, as jnp.max does.
std::vector<LD> q_matmul_int8_f32(const Array& a, const Array& w) {
  const int64_t M = a.shape[0], K = a.shape[1], N = w.shape[1];
  std::vector<float> a_s(static_cast<size_t>(M), 0), w_s(static_cast<size_t>(N), 0);
  auto take_max = [](float& amax, double x) {
    float magnitude = std::fabs(float(x));
    amax = std::isnan(amax) || std::isnan(magnitude) ? NAN : std::max(amax, magnitude);
  };
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) take_max(a_s[size_t(i)], a.values[size_t(i * K + k)]);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < N; ++j) take_max(w_s[size_t(j)], w.values[size_t(k * N + j)]);
  for (float& s : a_s) s = 127.0f / s;
  for (float& s : w_s) s = 127.0f / s;
  std::vector<LD> qa, qw;
  for (int64_t i = 0; i < M * K; ++i) qa.push_back(quant_int8(float(a.values[size_t(i)]) * a_s[size_t(i / K)]));
  for (int64_t i = 0; i < K * N; ++i) qw.push_back(quant_int8(float(w.values[size_t(i)]) * w_s[size_t(i % N)]));
  std::vector<LD> acc = matmul_long_double(qa, qw, M, K, N), out;
  // An all-zero row or column: its scale is inf, its values 0 * inf = NaN quantize to 0, so 0 / inf = 0.
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) out.push_back(float(acc[size_t(i * N + j)]) / (a_s[size_t(i)] * w_s[size_t(j)]));
  return out;
}

TEST(CrosscheckData, QuantizedInt8MatmulFollowsTheFormula) {
  int f32_cases = 0;
  for (const Case* c : family("int8").of_op("q_matmul_int8")) {
    const Array &a = c->input("a"), &w = c->input("w");
    std::vector<LD> want = q_matmul_int8_f32(a, w);
    if (a.dtype == DType::f32) {
      ++f32_cases;
      expect_values(c->describe() + " out, bit for bit", want, values_of(c->output("out")), exact());
    } else {
      for (LD& v : want) v = round_to(a.dtype, v);  // the note: the f32 formula is within the tolerance
      expect_output(*c, "out", want);
    }
  }
  EXPECT_GE(f32_cases, 2);
}

TEST(CrosscheckData, MatmulBroadcastsBatchDims) {
  for (const Case* c : family("int8").of_op("matmul")) {
    const Array &a = c->input("a"), &b = c->input("b"), &out = c->output("out");
    const size_t rank = out.shape.size();
    const int64_t K = a.shape.back();
    std::vector<LD> got;
    for_each_index(out.shape, [&](const Index& idx, size_t) {
      // Each operand's batch dims align with the output's from the right; size 1 broadcasts.
      auto operand_index = [&](const Array& x, int64_t row, int64_t col) {
        Index xi(x.shape.size());
        for (size_t d = 0; d + 2 < x.shape.size(); ++d) xi[d] = x.shape[d] == 1 ? 0 : idx[rank - x.shape.size() + d];
        xi[xi.size() - 2] = row, xi[xi.size() - 1] = col;
        return xi;
      };
      LD s = 0;
      for (int64_t k = 0; k < K; ++k)
        s += at(a, operand_index(a, idx[rank - 2], k)) * at(b, operand_index(b, k, idx[rank - 1]));
      got.push_back(s);
    });
    expect_output(*c, "out", got);
  }
}

// --- scaled_dot and mx_quantize ------------------------------------------------------------------

TEST(CrosscheckData, ScaledDotMatchesTheBlockScaledDotGeneral) {
  for (const Case* c : family("scaled_dot").of_op("scaled_dot")) {
    SCOPED_TRACE(c->describe());
    const Array &lhs = c->input("lhs"), &rhs = c->input("rhs"), &out = c->output("out");
    const int64_t n = static_cast<int64_t>(lhs.shape.size());
    std::vector<std::vector<std::vector<int64_t>>> dn = {{{n - 1}, {n - 2}}, {{}, {}}};
    for (int64_t d = 0; d + 2 < n; ++d) dn[1][0].push_back(d), dn[1][1].push_back(d);
    dn = c->option("dimension_numbers", dn);
    EXPECT_EQ(name_of(out.dtype), c->option<std::string>("preferred_element_type", "bf16"));
    const auto &lc = dn[0][0], &rc = dn[0][1], &lb = dn[1][0], &rb = dn[1][1];
    auto free_dims = [](int64_t rank, const std::vector<int64_t>& contracting, const std::vector<int64_t>& batch) {
      std::vector<int64_t> dims;
      for (int64_t d = 0; d < rank; ++d)
        if (std::count(contracting.begin(), contracting.end(), d) + std::count(batch.begin(), batch.end(), d) == 0)
          dims.push_back(d);
      return dims;
    };
    const std::vector<int64_t> lf = free_dims(n, lc, lb), rf = free_dims(n, rc, rb);
    ASSERT_EQ(lc.size(), 1u);
    const int64_t K = lhs.shape[size_t(lc[0])];
    // operand[idx] * its scale element: the block of `idx` along each contracting dim (consecutive elements).
    auto scaled = [&](const Array& x, const std::string& scale_name, const Index& idx) {
      LD v = at(x, idx);
      if (!c->has_input(scale_name)) return v;
      const Array& s = c->input(scale_name);
      Index si = idx;
      for (size_t d = 0; d < si.size(); ++d) si[d] = idx[d] / (x.shape[d] / s.shape[d]);
      return v * at(s, si);
    };
    std::vector<LD> got;
    for_each_index(out.shape, [&](const Index& o, size_t) {
      Index li(size_t(n), 0), ri(size_t(n), 0);
      size_t p = 0;
      for (size_t i = 0; i < lb.size(); ++i, ++p) li[size_t(lb[i])] = ri[size_t(rb[i])] = o[p];
      for (int64_t d : lf) li[size_t(d)] = o[p++];
      for (int64_t d : rf) ri[size_t(d)] = o[p++];
      LD s = 0;
      for (int64_t k = 0; k < K; ++k) {
        li[size_t(lc[0])] = ri[size_t(rc[0])] = k;
        s += scaled(lhs, "lhs_scale", li) * scaled(rhs, "rhs_scale", ri);
      }
      got.push_back(s);
    });
    expect_output(*c, "out", got);
  }
}

// SEMANTICS.md's "MX quantization helper", on f32 bits.
TEST(CrosscheckData, MxQuantizeFollowsTheE8m0RuleBitForBit) {
  for (const Case* c : family("scaled_dot").of_op("mx_quantize")) {
    const Array& x = c->input("x");
    std::vector<LD> data, scale;
    for (size_t block = 0; block < x.values.size() / 32; ++block) {
      float amax = 0;
      for (size_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(float(x.values[block * 32 + i])));
      float s = amax / 448.0f;
      uint32_t bits;
      std::memcpy(&bits, &s, 4);
      uint32_t exponent = bits >> 23, mantissa = bits & 0x7fffff;
      if (mantissa > 0 && exponent != 0xfe && !(exponent == 0 && mantissa <= 0x400000)) ++exponent;
      uint32_t decoded_bits = exponent << 23;
      float decoded;
      std::memcpy(&decoded, &decoded_bits, 4);
      if (decoded == 0) decoded = std::ldexp(1.0f, -127);
      scale.push_back(decode_e8m0(static_cast<uint8_t>(exponent)));
      for (size_t i = 0; i < 32; ++i) {
        float q = std::clamp(float(x.values[block * 32 + i]) / decoded, -448.0f, 448.0f);
        data.push_back(round_to(DType::f8e4m3, q));
      }
    }
    expect_bits(*c, "scale", scale);
    expect_bits(*c, "data", data);
  }
}

// --- fp8 -----------------------------------------------------------------------------------------

TEST(CrosscheckData, DelayedScalingReplaysTheRecipe) {
  for (const Case* c : family("fp8").of_op("fp8_delayed_scaling")) {
    SCOPED_TRACE(c->describe());
    const Array &x = c->input("x"), &q = c->output("q");
    const std::string format = c->option<std::string>("fp8_format", "HYBRID");
    const bool gradient = c->option<std::string>("tensor") == "gradient";
    const DType fp8 = format == "E4M3" || (format == "HYBRID" && !gradient) ? DType::f8e4m3 : DType::f8e5m2;
    EXPECT_EQ(q.dtype, fp8);
    const float fmax = static_cast<float>(format_of(fp8).max_finite());
    const int margin = c->option<int>("margin", 0);
    const bool use_max = c->option<std::string>("amax_compute_algo", "max") == "max";
    float scale = static_cast<float>(c->input("scale").values.at(0));
    std::vector<float> history(c->input("amax_history").values.begin(), c->input("amax_history").values.end());
    EXPECT_EQ(static_cast<int>(history.size()), c->option<int>("amax_history_len"));
    const size_t per_step = x.values.size() / static_cast<size_t>(x.shape[0]);
    std::vector<LD> want_q, want_scale_inv, want_amax, want_scale, want_history;
    for (int64_t step = 0; step < x.shape[0]; ++step) {
      float step_amax = 0;
      for (size_t i = 0; i < per_step; ++i) {
        float v = static_cast<float>(x.values[size_t(step) * per_step + i]);
        want_q.push_back(round_to(fp8, std::clamp(v * scale, -fmax, fmax)));
        step_amax = std::max(step_amax, std::fabs(v));
      }
      want_scale_inv.push_back(1.0f / scale);
      history[0] = step_amax;
      float amax = use_max ? *std::max_element(history.begin(), history.end()) : history[0];
      if (amax > 0 && std::isfinite(amax)) scale = (fmax / amax) / std::ldexp(1.0f, margin);
      std::rotate(history.begin(), history.begin() + 1, history.end());
      history[0] = 0;
      want_amax.push_back(amax);
      want_scale.push_back(scale);
      want_history.insert(want_history.end(), history.begin(), history.end());
    }
    expect_bits(*c, "q", want_q);
    expect_bits(*c, "scale_inv", want_scale_inv);
    expect_bits(*c, "amax", want_amax);
    expect_bits(*c, "scale", want_scale);
    expect_bits(*c, "amax_history", want_history);
  }
}

TEST(CrosscheckData, Fp8GemmScalesTheProduct) {
  for (const Case* c : family("fp8").of_op("fp8_gemm")) {
    const Array &a = c->input("a"), &b = c->input("b");
    EXPECT_EQ(name_of(c->output("out").dtype), c->option<std::string>("out_dtype"));
    std::vector<LD> got;
    const int64_t M = a.shape[0], K = a.shape[1], N = b.shape[1];
    const LD scale = LD(c->input("a_scale_inv").values.at(0)) * LD(c->input("b_scale_inv").values.at(0));
    for (LD v : matmul_long_double(values_of(a), values_of(b), M, K, N)) got.push_back(v * scale);
    expect_output(*c, "out", got);
  }
}

// --- norms ---------------------------------------------------------------------------------------

TEST(CrosscheckData, NormsMatchSemanticsForwardAndBackward) {
  for (const std::string& kind : {std::string("layer_norm"), std::string("rms_norm")}) {
    for (const Case* c : family("norms").of_op(kind)) {
      SCOPED_TRACE(c->describe());
      const bool layer = kind == "layer_norm";
      const Array &x = c->input("x"), &gamma = c->input("gamma"), &dy = c->input("dy");
      const LD eps = c->option<double>("eps", 1e-6);
      const bool zero_centered = c->option<bool>("zero_centered_gamma", false);
      const size_t H = static_cast<size_t>(x.shape.back()), rows = x.values.size() / H;
      std::vector<LD> y, mean_out, rsigma_out, dx, dgamma(H, 0), dbeta(H, 0);
      for (size_t r = 0; r < rows; ++r) {
        auto xv = [&](size_t i) { return LD(x.values[r * H + i]); };
        LD mean = 0, var = 0;
        if (layer) {
          for (size_t i = 0; i < H; ++i) mean += xv(i);
          mean /= LD(H);
        }
        for (size_t i = 0; i < H; ++i) var += (xv(i) - mean) * (xv(i) - mean);
        const LD rsigma = 1 / std::sqrt(var / LD(H) + eps);
        std::vector<LD> xhat(H), dxhat(H);
        LD mean_dxhat = 0, mean_dxhat_xhat = 0;
        for (size_t i = 0; i < H; ++i) {
          const LD g = LD(gamma.values[i]) + (zero_centered ? 1 : 0);
          const LD d = dy.values[r * H + i];
          xhat[i] = (xv(i) - mean) * rsigma;
          y.push_back(xhat[i] * g + (layer ? LD(c->input("beta").values[i]) : 0));
          dxhat[i] = d * g;
          mean_dxhat += dxhat[i] / LD(H);
          mean_dxhat_xhat += dxhat[i] * xhat[i] / LD(H);
          dgamma[i] += d * xhat[i];
          dbeta[i] += d;
        }
        for (size_t i = 0; i < H; ++i)
          dx.push_back(rsigma * (dxhat[i] - (layer ? mean_dxhat : 0) - xhat[i] * mean_dxhat_xhat));
        mean_out.push_back(mean);
        rsigma_out.push_back(rsigma);
      }
      expect_output(*c, "y", y);
      expect_output(*c, "rsigma", rsigma_out);
      expect_output(*c, "dx", dx);
      expect_output(*c, "dgamma", dgamma);
      if (layer) {
        expect_output(*c, "mean", mean_out);
        expect_output(*c, "dbeta", dbeta);
      }
    }
  }
}

// --- attention -----------------------------------------------------------------------------------

// SEMANTICS.md's attention in long double, forward and backward, for one case.
struct AttentionReference {
  std::vector<LD> out, lse, dq, dk, dv;
};

AttentionReference attention_reference(const Case& c) {
  const Array &q = c.input("q"), &k = c.input("k"), &v = c.input("v");
  const bool rank3 = q.shape.size() == 3;
  const size_t o = rank3 ? 0 : 1;  // where T sits
  const int64_t B = rank3 ? 1 : q.shape[0], T = q.shape[o], N = q.shape[o + 1], H = q.shape[o + 2];
  const int64_t S = k.shape[o], K = k.shape[o + 1], G = N / K;
  const LD scale = c.option<double>("scale", 1.0 / std::sqrt(double(H)));
  const bool causal = c.option<bool>("is_causal", false), bottom_right = c.option<bool>("causal_bottom_right", false);
  int64_t left = -1, right = -1;
  if (c.has_option("local_window")) {
    if (c.options()["local_window"].is_number()) {
      left = right = c.option<int64_t>("local_window");
    } else {
      auto w = c.option<std::vector<int64_t>>("local_window");
      left = w.at(0), right = w.at(1);
    }
  }
  const LD masked = -0.7L * LD(std::numeric_limits<float>::max());
  auto flat = [&](int64_t b, int64_t t, int64_t n, int64_t h, int64_t len, int64_t heads) {
    return size_t(((b * len + t) * heads + n) * H + h);
  };
  auto keep = [&](int64_t b, int64_t n, int64_t t, int64_t s) {
    bool kept = true;
    if (c.has_input("mask")) kept = at_broadcast(c.input("mask"), {b, n, t, s}) != 0;
    if (causal) kept = kept && s <= t;
    if (bottom_right) kept = kept && s <= t + (S - T);
    if (left >= 0) kept = kept && t - left <= s && s <= t + right;
    if (c.has_input("q_seqlens")) kept = kept && t < c.input("q_seqlens").values[size_t(b)];
    if (c.has_input("kv_seqlens")) kept = kept && s < c.input("kv_seqlens").values[size_t(b)];
    return kept;
  };
  AttentionReference r;
  r.out.assign(q.values.size(), 0);
  r.dq.assign(q.values.size(), 0);
  r.dk.assign(k.values.size(), 0);
  r.dv.assign(v.values.size(), 0);
  r.lse.assign(size_t(B * N * T), 0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t n = 0; n < N; ++n) {
      const int64_t kh = n / G;  // contiguous groups
      for (int64_t t = 0; t < T; ++t) {
        std::vector<LD> logit(static_cast<size_t>(S)), p(static_cast<size_t>(S));
        LD m = -std::numeric_limits<LD>::infinity(), sum = 0;
        for (int64_t s = 0; s < S; ++s) {
          LD dot = 0;
          for (int64_t h = 0; h < H; ++h)
            dot += LD(q.values[flat(b, t, n, h, T, N)]) * k.values[flat(b, s, kh, h, S, K)];
          LD l = dot * scale + (c.has_input("bias") ? at_broadcast(c.input("bias"), {b, n, t, s}) : 0);
          logit[size_t(s)] = keep(b, n, t, s) ? l : masked;
          m = std::max(m, logit[size_t(s)]);
        }
        for (int64_t s = 0; s < S; ++s) sum += p[size_t(s)] = std::exp(logit[size_t(s)] - m);
        r.lse[size_t((b * N + n) * T + t)] = m + std::log(sum);
        const bool padded = c.has_input("q_seqlens") && t >= c.input("q_seqlens").values[size_t(b)];
        std::vector<LD> encoded(size_t(H), 0), dout(size_t(H), 0);
        for (int64_t h = 0; h < H; ++h) {
          for (int64_t s = 0; s < S; ++s) encoded[size_t(h)] += p[size_t(s)] / sum * v.values[flat(b, s, kh, h, S, K)];
          r.out[flat(b, t, n, h, T, N)] = padded ? 0 : encoded[size_t(h)];
          if (c.has_input("dout") && !padded) dout[size_t(h)] = c.input("dout").values[flat(b, t, n, h, T, N)];
        }
        // Backward: the padded rows' output is multiplied by 0, so their gradient is 0; masked logits are
        // constants, so only kept positions pass a gradient to q and k.
        LD D = 0;
        for (int64_t h = 0; h < H; ++h) D += dout[size_t(h)] * encoded[size_t(h)];
        for (int64_t s = 0; s < S; ++s) {
          const LD prob = p[size_t(s)] / sum;
          LD dp = 0;
          for (int64_t h = 0; h < H; ++h) {
            dp += dout[size_t(h)] * v.values[flat(b, s, kh, h, S, K)];
            r.dv[flat(b, s, kh, h, S, K)] += prob * dout[size_t(h)];
          }
          const LD ds = keep(b, n, t, s) ? prob * (dp - D) * scale : 0;
          for (int64_t h = 0; h < H; ++h) {
            r.dq[flat(b, t, n, h, T, N)] += ds * k.values[flat(b, s, kh, h, S, K)];
            r.dk[flat(b, s, kh, h, S, K)] += ds * q.values[flat(b, t, n, h, T, N)];
          }
        }
      }
    }
  return r;
}

TEST(CrosscheckData, AttentionMatchesSemanticsForwardAndBackward) {
  int backward_cases = 0;
  for (const Case* c : family("attention").of_op("attention")) {
    SCOPED_TRACE(c->describe());
    const DType dtype = c->input("q").dtype;
    EXPECT_TRUE(c->input("k").dtype == dtype && c->input("v").dtype == dtype && c->output("out").dtype == dtype);
    if (c->has_input("mask")) {
      EXPECT_EQ(c->input("mask").dtype, DType::i1);
    }
    for (const char* lengths : {"q_seqlens", "kv_seqlens"}) {
      if (c->has_input(lengths)) {
        EXPECT_EQ(c->input(lengths).dtype, DType::i32);
      }
    }
    if (c->has_output("lse")) {
      EXPECT_EQ(c->output("lse").dtype, DType::f32);
    }
    AttentionReference r = attention_reference(*c);
    expect_output(*c, "out", r.out);
    if (c->has_output("lse")) expect_output(*c, "lse", r.lse);
    if (c->has_output("dq")) {
      ++backward_cases;
      expect_output(*c, "dq", r.dq);
      expect_output(*c, "dk", r.dk);
      expect_output(*c, "dv", r.dv);
    }
  }
  EXPECT_GE(backward_cases, 8);
}

// --- collectives ---------------------------------------------------------------------------------

std::vector<std::vector<int64_t>> groups_of(const Case& c) {
  const int64_t world = c.option<int64_t>("world_size");
  std::vector<std::vector<int64_t>> all(1);
  for (int64_t r = 0; r < world; ++r) all[0].push_back(r);
  return c.option("groups", all);
}

// Calls f(rank, group, position of the rank in it) for every rank.
void for_each_rank(const Case& c, const std::function<void(int64_t, const std::vector<int64_t>&, int64_t)>& f) {
  for (const auto& group : groups_of(c))
    for (size_t p = 0; p < group.size(); ++p) f(group[p], group, int64_t(p));
}

TEST(CrosscheckData, CollectivesMatchSemantics) {
  const CaseFile& file = family("collectives");
  // SEMANTICS.md's example, value by value: rank 0 gets [8 10], 1 [20 22], 2 [12 14], 3 [16 18].
  expect_values("reduce_scatter_semantics_example",
                values_of(file.find("reduce_scatter_semantics_example").output("out")), {8, 10, 20, 22, 12, 14, 16, 18},
                exact());
  for (const Case& c : file.cases()) {
    SCOPED_TRACE(c.describe());
    const Array &x = c.input("x"), &out = c.output("out");
    ASSERT_EQ(x.shape[0], c.option<int64_t>("world_size"));
    const Shape x_rank(x.shape.begin() + 1, x.shape.end()), out_rank(out.shape.begin() + 1, out.shape.end());
    std::vector<LD> got(out.values.size());
    const bool tiled = c.option<bool>("tiled", false);
    auto x_at = [&](int64_t rank, Index idx) {
      idx.insert(idx.begin(), rank);
      return at(x, idx);
    };
    for_each_rank(c, [&](int64_t rank, const std::vector<int64_t>& group, int64_t position) {
      const int64_t k = int64_t(group.size());
      for_each_index(out_rank, [&](const Index& o, size_t flat) {
        LD value = 0;
        if (c.op() == "reduce_scatter") {
          const size_t dim = size_t(normalized(c.option<int>("scatter_dimension", 0), x_rank.size()));
          Index src = o;
          if (tiled)
            src[dim] += position * (x_rank[dim] / k);
          else
            src.insert(src.begin() + std::ptrdiff_t(dim), position);
          for (int64_t member : group) value += x_at(member, src);
        } else if (c.op() == "all_gather") {
          const size_t axis = size_t(normalized(c.option<int>("axis", 0), out_rank.size()));
          Index src = o;
          int64_t member;
          if (tiled) {
            member = group[size_t(o[axis] / x_rank[axis])];
            src[axis] = o[axis] % x_rank[axis];
          } else {
            member = group[size_t(o[axis])];
            src.erase(src.begin() + std::ptrdiff_t(axis));
          }
          value = x_at(member, src);
        } else {
          const std::string op = c.option<std::string>("op", "sum");
          value = x_at(group[0], o);
          for (size_t i = 1; i < group.size(); ++i) {
            const LD y = x_at(group[i], o);
            value = op == "max" ? std::max(value, y) : op == "min" ? std::min(value, y) : value + y;
          }
          if (op == "average") value /= LD(k);
        }
        got[size_t(rank) * size_t(numel(out_rank)) + flat] = value;
      });
    });
    expect_output(c, "out", got);
  }
}

// --- the reader's errors -------------------------------------------------------------------------

const char* kGoodCase = R"({"name": "ok", "op": "quant_int8", "options": {"flag": true, "n": 3},
  "inputs": {"x": {"dtype": "f32", "shape": [2], "values": [0.1, "-inf"]}},
  "outputs": {"out": {"dtype": "i8", "shape": [2], "tolerance": {"rtol": 0, "atol": 0}, "values": [0, -127]}}})";

std::string file_with_cases(const std::string& cases) {
  return R"({"family": "int8", "versions": {"jax": "0.10.2"}, "cases": [)" + cases + "]}";
}

std::string write(const TempDirectory& dir, const std::string& text) {
  std::string path = dir / "case.json";
  std::ofstream(path) << text;
  return path;
}

// The error message that loading `text` (one file) gives.
std::string load_error(const std::string& text) {
  TempDirectory dir("tilejit_crosscheck");
  std::string path = write(dir, text);
  return error_of([&] { CaseFile::load(path); });
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(CrosscheckData, ReadsAWellFormedCase) {
  TempDirectory dir("tilejit_crosscheck");
  CaseFile file = CaseFile::load(write(dir, file_with_cases(kGoodCase)));
  const Case& c = file.find("ok");
  EXPECT_EQ(c.op(), "quant_int8");
  EXPECT_EQ(c.describe(), "case.json case 'ok' (quant_int8)");
  EXPECT_TRUE(c.option<bool>("flag"));
  EXPECT_EQ(c.option<int>("n"), 3);
  EXPECT_EQ(c.option<int>("absent", 7), 7);
  const Array& x = c.input("x");
  EXPECT_EQ(x.dtype, DType::f32);
  EXPECT_EQ(x.shape, Shape{2});
  EXPECT_EQ(x.values[0], double(0.1f));  // f32 values are rounded to f32
  EXPECT_EQ(x.values[1], -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(c.output("out").tolerance.exact());
  EXPECT_EQ(file.of_op("quant_int8").size(), 1u);
  EXPECT_TRUE(file.of_op("attention").empty());
}

TEST(CrosscheckData, AccessErrorsNameTheCaseAndWhatIsMissing) {
  TempDirectory dir("tilejit_crosscheck");
  CaseFile file = CaseFile::load(write(dir, file_with_cases(kGoodCase)));
  const Case& c = file.cases().at(0);
  EXPECT_THAT(error_of([&] { c.input("w"); }), ::testing::HasSubstr("case 'ok' (quant_int8): has no input 'w'"));
  EXPECT_THAT(error_of([&] { c.output("y"); }), ::testing::HasSubstr("has no output 'y'"));
  EXPECT_THAT(error_of([&] { c.option<int>("missing"); }), ::testing::HasSubstr("has no option 'missing'"));
  EXPECT_THAT(error_of([&] { c.option<std::string>("n"); }), ::testing::HasSubstr("option 'n' = 3 has the wrong type"));
  EXPECT_THAT(error_of([&] { file.find("other"); }), ::testing::HasSubstr("no case named 'other'"));
}

TEST(CrosscheckData, AMissingFileIsAnErrorNamingIt) {
  TempDirectory dir("tilejit_crosscheck");
  std::string message = error_of([&] { CaseFile::load(dir / "absent.json"); });
  EXPECT_THAT(message, ::testing::HasSubstr(dir / "absent.json"));
  EXPECT_THAT(message, ::testing::HasSubstr("cannot be read"));
  EXPECT_THAT(message, ::testing::HasSubstr("make_crosscheck.py"));
}

TEST(CrosscheckData, MalformedFilesAreErrorsNamingTheCaseAndTheArray) {
  using ::testing::HasSubstr;
  const std::string good = file_with_cases(kGoodCase);
  EXPECT_THAT(load_error("{\"family\": "), HasSubstr("is not valid JSON"));
  EXPECT_THAT(load_error(R"({"family": "int8", "versions": {"jax": "x"}})"), HasSubstr("case.json: has no \"cases\""));
  EXPECT_THAT(load_error(replaced(good, R"("shape": [2], "values": [0.1)", R"("shape": [3], "values": [0.1)")),
              HasSubstr("case.json case 'ok' input 'x': shape [3] has 3 elements but there are 2 values"));
  EXPECT_THAT(load_error(replaced(good, R"("dtype": "f32")", R"("dtype": "f64")")),
              HasSubstr("case 'ok' input 'x': unknown dtype 'f64'"));
  EXPECT_THAT(load_error(replaced(good, R"("values": [0, -127])", R"("values": [0.5, -127])")),
              HasSubstr("case 'ok' output 'out': value [0] = 0.5 is not an integer, as i8 needs"));
  EXPECT_THAT(load_error(replaced(good, R"("values": [0.1, "-inf"])", R"("values": [0.1, "big"])")),
              HasSubstr("input 'x': value [1] is \"big\", expected a number"));
  EXPECT_THAT(load_error(replaced(good, R"("tolerance": {"rtol": 0, "atol": 0}, )", "")),
              HasSubstr("case 'ok' output 'out': has no \"tolerance\""));
  EXPECT_THAT(load_error(replaced(good, R"("atol": 0})", R"("atol": -1})")),
              HasSubstr("output 'out' tolerance: rtol 0 and atol -1 must be finite and >= 0"));
  EXPECT_THAT(load_error(replaced(good, R"("op": "quant_int8", )", "")), HasSubstr("case 'ok': has no \"op\""));
  EXPECT_THAT(load_error(replaced(good, R"("name": "ok")", R"("name": 3)")),
              HasSubstr("case #0: \"name\" is number, expected string"));
  EXPECT_THAT(load_error(file_with_cases(std::string(kGoodCase) + "," + kGoodCase)),
              HasSubstr("case 'ok': the name is used twice"));
}

}  // namespace
}  // namespace tjcrosscheck
