// libdevice on the host: the emulated kernel's calls to `__nv_*` math functions run the C
// library's float functions. Results may differ from libdevice's in the last bits (both are
// within a few ulp of the exact value); tests compare with tolerances by dtype.
#include <cmath>
#include <cstdint>
#include <limits>

#include "runtime/emu/runtime_symbols.h"

namespace tilejit::emu {
namespace {

float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
float exp10f_(float x) { return std::pow(10.0f, x); }
float fminf_(float a, float b) { return std::fmin(a, b); }
float fmaxf_(float a, float b) { return std::fmax(a, b); }
float powf_(float a, float b) { return std::pow(a, b); }
float fmodf_(float a, float b) { return std::fmod(a, b); }
float atan2f_(float a, float b) { return std::atan2(a, b); }
double rsqrt(double x) { return 1.0 / std::sqrt(x); }
// ex2.approx.ftz.f32: a subnormal input counts as 0 (exp2 of it is 1 either way) and a
// subnormal result is 0.
float exp2_flushing_subnormals(float x) {
  float r = std::exp2(x);
  return r < std::numeric_limits<float>::min() ? 0.0f : r;
}

// cvt.rzi.ftz.s32.f32: toward zero, saturating, NaN -> 0 (a subnormal input gives 0 either way).
int32_t float_to_i32_toward_zero(float x) {
  if (std::isnan(x)) return 0;
  if (x <= -0x1p31f) return std::numeric_limits<int32_t>::min();
  if (x >= 0x1p31f) return std::numeric_limits<int32_t>::max();
  return static_cast<int32_t>(x);
}

using F1 = float (*)(float);
using D1 = double (*)(double);

}  // namespace

void add_math_symbols(codegen::HostSymbols& out) {
  auto f1 = [&](const char* name, F1 fn) { out.emplace_back(name, reinterpret_cast<void*>(fn)); };
  auto d1 = [&](const char* name, D1 fn) { out.emplace_back(name, reinterpret_cast<void*>(fn)); };
  f1("__nv_expf", [](float x) { return std::exp(x); });
  f1("__nv_exp2f", [](float x) { return std::exp2(x); });
  out.emplace_back(codegen::host_intrinsic_name("llvm.nvvm.ex2.approx.ftz.f32"),
                   reinterpret_cast<void*>(exp2_flushing_subnormals));
  out.emplace_back(codegen::host_intrinsic_name("llvm.nvvm.f2i.rz.ftz"),
                   reinterpret_cast<void*>(float_to_i32_toward_zero));
  f1("__nv_exp10f", exp10f_);
  f1("__nv_expm1f", [](float x) { return std::expm1(x); });
  f1("__nv_logf", [](float x) { return std::log(x); });
  f1("__nv_log2f", [](float x) { return std::log2(x); });
  f1("__nv_log10f", [](float x) { return std::log10(x); });
  f1("__nv_log1pf", [](float x) { return std::log1p(x); });
  f1("__nv_sqrtf", [](float x) { return std::sqrt(x); });
  f1("__nv_rsqrtf", rsqrtf);
  f1("__nv_cbrtf", [](float x) { return std::cbrt(x); });
  f1("__nv_sinf", [](float x) { return std::sin(x); });
  f1("__nv_cosf", [](float x) { return std::cos(x); });
  f1("__nv_tanf", [](float x) { return std::tan(x); });
  f1("__nv_asinf", [](float x) { return std::asin(x); });
  f1("__nv_acosf", [](float x) { return std::acos(x); });
  f1("__nv_atanf", [](float x) { return std::atan(x); });
  f1("__nv_sinhf", [](float x) { return std::sinh(x); });
  f1("__nv_coshf", [](float x) { return std::cosh(x); });
  f1("__nv_tanhf", [](float x) { return std::tanh(x); });
  f1("__nv_erff", [](float x) { return std::erf(x); });
  f1("__nv_erfcf", [](float x) { return std::erfc(x); });
  f1("__nv_fabsf", [](float x) { return std::fabs(x); });
  f1("__nv_floorf", [](float x) { return std::floor(x); });
  f1("__nv_ceilf", [](float x) { return std::ceil(x); });
  f1("__nv_truncf", [](float x) { return std::trunc(x); });
  f1("__nv_roundf", [](float x) { return std::round(x); });
  f1("__nv_rintf", [](float x) { return std::rint(x); });
  out.emplace_back("__nv_fminf", reinterpret_cast<void*>(fminf_));
  out.emplace_back("__nv_fmaxf", reinterpret_cast<void*>(fmaxf_));
  out.emplace_back("__nv_powf", reinterpret_cast<void*>(powf_));
  out.emplace_back("__nv_fmodf", reinterpret_cast<void*>(fmodf_));
  out.emplace_back("__nv_atan2f", reinterpret_cast<void*>(atan2f_));
  d1("__nv_exp", [](double x) { return std::exp(x); });
  d1("__nv_log", [](double x) { return std::log(x); });
  d1("__nv_sqrt", [](double x) { return std::sqrt(x); });
  d1("__nv_rsqrt", rsqrt);
  d1("__nv_tanh", [](double x) { return std::tanh(x); });
  d1("__nv_erf", [](double x) { return std::erf(x); });
}

}  // namespace tilejit::emu
