#include "tools/settings.h"

#include "autotune/named_values.h"

namespace tilejit::tools {

std::vector<std::pair<std::string, int64_t>> parse_settings(const std::vector<std::string>& settings) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (auto& s : settings) out.push_back(autotune::parse_named_value(s, "--set"));
  return out;
}

}  // namespace tilejit::tools
