#include "dsl/error.h"

#include <filesystem>

namespace tilejit {

SourceLoc SourceLoc::from(const std::source_location& loc) {
  return SourceLoc{std::filesystem::path(loc.file_name()).filename().string(), loc.line()};
}

std::string SourceLoc::str() const {
  if (file.empty()) return "<unknown>";
  return fmt::format("{}:{}", file, line);
}

void internal_error(const std::string& invariant, const char* file, int line) {
  throw Error(fmt::format("tilejit internal error: invariant '{}' failed at {}:{}", invariant,
                          std::filesystem::path(file).filename().string(), line));
}

}  // namespace tilejit
