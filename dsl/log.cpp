#include "dsl/log.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tilejit::log {
namespace {

Level level_from_environment() {
  const char* v = std::getenv("TILEJIT_LOG");
  if (!v || !*v) return Level::warn;
  if (!std::strcmp(v, "error")) return Level::error;
  if (!std::strcmp(v, "info")) return Level::info;
  if (!std::strcmp(v, "debug")) return Level::debug;
  return Level::warn;
}

const char* level_name(Level l) {
  switch (l) {
    case Level::error: return "error";
    case Level::warn: return "warning";
    case Level::info: return "info";
    case Level::debug: return "debug";
  }
  return "";
}

}  // namespace

Level level() {
  static const Level current = level_from_environment();
  return current;
}

void write(Level l, const std::string& message) {
  // One fprintf per message keeps lines from different threads whole.
  std::fprintf(stderr, "tilejit: %s: %s\n", level_name(l), message.c_str());
}

}  // namespace tilejit::log
