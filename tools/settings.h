// Command-line helpers shared by the subcommands.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tilejit::tools {

// "NAME=VALUE" pairs from --set; throws tilejit::Error for a malformed one.
std::vector<std::pair<std::string, int64_t>> parse_settings(const std::vector<std::string>& settings);

}  // namespace tilejit::tools
