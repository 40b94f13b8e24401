// For tests that need files: a fresh directory under the system's temporary directory,
// removed with everything in it when the object goes away.
#pragma once

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "dsl/error.h"

namespace tilejit::testing_util {

class TempDirectory {
 public:
  explicit TempDirectory(const std::string& prefix = "tilejit_test") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + ".XXXXXX")).string();
    if (!::mkdtemp(pattern.data())) fail("cannot create a temporary directory {}: {}", pattern, std::strerror(errno));
    path_ = pattern;
  }
  TempDirectory(const TempDirectory&) = delete;
  TempDirectory& operator=(const TempDirectory&) = delete;
  ~TempDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace tilejit::testing_util
