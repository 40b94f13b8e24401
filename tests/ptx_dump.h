// The PTX of the kernels some code builds: it runs with TILEJIT_DUMP_DIR set to a fresh
// directory, and the .ptx files the JIT writes there are read back.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "tests/scoped_env.h"
#include "tests/temp_directory.h"

namespace tilejit::testing_util {

// The PTX texts of the kernels `build` compiled, in the order of their file names.
inline std::vector<std::string> ptx_built_by(const std::function<void()>& build) {
  TempDirectory dir;
  ScopedEnv dump("TILEJIT_DUMP_DIR", dir.path().c_str());
  build();
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    if (entry.path().extension() == ".ptx") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::vector<std::string> texts;
  for (const auto& file : files) {
    std::ifstream in(file);
    texts.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return texts;
}

}  // namespace tilejit::testing_util
