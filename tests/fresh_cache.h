// For test binaries whose tests share the process's kernel cache and tuning database: points
// TILEJIT_CACHE_DIR at a fresh directory for the whole run, so no earlier run's kernels or
// tuning results are seen. Include it in one source file of the binary.
#pragma once

#include <gtest/gtest.h>

#include <optional>

#include "tests/scoped_env.h"
#include "tests/temp_directory.h"

namespace tilejit::testing_util {

class FreshCacheEnvironment : public testing::Environment {
 public:
  void SetUp() override { cache_dir_.emplace("TILEJIT_CACHE_DIR", dir_.path().c_str()); }

 private:
  TempDirectory dir_;
  std::optional<ScopedEnv> cache_dir_;
};

[[maybe_unused]] inline testing::Environment* const fresh_cache_environment =
    testing::AddGlobalTestEnvironment(new FreshCacheEnvironment);

}  // namespace tilejit::testing_util
