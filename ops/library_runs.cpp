#include "ops/library_runs.h"

#include <fmt/format.h>

#include "dsl/error.h"

namespace tilejit::ops {

const std::vector<LibraryRun>& library_runs() {
  static const std::vector<LibraryRun> runs = {
  };
  return runs;
}

const LibraryRun* find_library_run(const std::string& op) {
  for (const LibraryRun& run : library_runs())
    if (run.op == op) return &run;
  return nullptr;
}

std::vector<std::pair<std::string, int64_t>> run_dimensions(const std::string& op,
                                                            std::vector<std::pair<std::string, int64_t>> defaults,
                                                            const ExampleOptions& options) {
  for (const auto& [name, value] : options.overrides) {
    bool found = false;
    for (auto& [dim, dim_value] : defaults)
      if (dim == name) dim_value = value, found = true;
    if (!found) {
      std::string names;
      for (const auto& d : defaults) names += (names.empty() ? "" : ", ") + d.first;
      fail("run {}: no problem dimension named {} (it has {})", op, name, names);
    }
    if (value <= 0) fail("run {}: dimension {} must be positive, not {}", op, name, value);
  }
  return defaults;
}

int64_t dimension(const std::vector<std::pair<std::string, int64_t>>& dims, const std::string& name) {
  for (const auto& [dim, value] : dims)
    if (dim == name) return value;
  internal_error("dimension " + name + " of a library run", __FILE__, __LINE__);
}

}  // namespace tilejit::ops
