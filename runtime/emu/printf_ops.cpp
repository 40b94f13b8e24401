// The device printf: vprintf(format, arguments) where the arguments are packed in a buffer,
// each aligned to its own size (as the PTX vprintf convention and the host's struct layout
// both do). Each call prints one whole line, atomically with respect to other threads.
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "runtime/emu/runtime_symbols.h"

namespace tilejit::emu {
namespace {

template <typename T>
T take_argument(const char*& cursor) {
  auto address = reinterpret_cast<uintptr_t>(cursor);
  address = (address + alignof(T) - 1) / alignof(T) * alignof(T);
  T value;
  std::memcpy(&value, reinterpret_cast<const char*>(address), sizeof(T));
  cursor = reinterpret_cast<const char*>(address + sizeof(T));
  return value;
}

// Formats one conversion `spec` (e.g. "%5.2f", "%lld") taking its argument from the buffer.
std::string format_one(const std::string& spec, const char*& cursor) {
  char conversion = spec.back();
  bool wide = spec.find('l') != std::string::npos;
  char text[512];
  switch (conversion) {
    case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': case 'a': case 'A':
      std::snprintf(text, sizeof text, spec.c_str(), take_argument<double>(cursor));
      break;
    case 'p':
      std::snprintf(text, sizeof text, spec.c_str(), take_argument<void*>(cursor));
      break;
    case 's':
      std::snprintf(text, sizeof text, spec.c_str(), take_argument<const char*>(cursor));
      break;
    default:  // d i u x X o c
      if (wide) std::snprintf(text, sizeof text, spec.c_str(), take_argument<long long>(cursor));
      else std::snprintf(text, sizeof text, spec.c_str(), take_argument<int>(cursor));
  }
  return text;
}

int vprintf_emulated(const char* format, const char* arguments) {
  std::string out;
  const char* cursor = arguments;
  for (const char* p = format; *p; ++p) {
    if (*p != '%') {
      out += *p;
      continue;
    }
    if (p[1] == '%') {
      out += '%';
      ++p;
      continue;
    }
    const char* end = p + 1;
    while (*end && !std::strchr("diouxXcsfFeEgGaAp", *end)) ++end;
    if (!*end) break;
    out += format_one(std::string(p, end + 1), cursor);
    p = end;
  }
  static std::mutex output;
  std::lock_guard lock(output);
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  return static_cast<int>(out.size());
}

}  // namespace

void add_printf_symbols(codegen::HostSymbols& out) {
  out.emplace_back("vprintf", reinterpret_cast<void*>(vprintf_emulated));
}

}  // namespace tilejit::emu
