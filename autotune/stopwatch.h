// Wall time since construction, for saying where a tuning run's time went.
#pragma once

#include <chrono>

namespace tilejit::autotune {

class Stopwatch {
 public:
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count(); }

 private:
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

}  // namespace tilejit::autotune
