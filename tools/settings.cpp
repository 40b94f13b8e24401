#include "tools/settings.h"

#include "dsl/error.h"

namespace tilejit::tools {

std::vector<std::pair<std::string, int64_t>> parse_settings(const std::vector<std::string>& settings) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (auto& s : settings) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) fail("--set expects NAME=VALUE, got '{}'", s);
    std::string value = s.substr(eq + 1);
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(value, &used, 0);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != value.size()) fail("--set {}: '{}' is not an integer", s.substr(0, eq), value);
    out.emplace_back(s.substr(0, eq), v);
  }
  return out;
}

}  // namespace tilejit::tools
