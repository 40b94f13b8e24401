// A progress bar for long command-line work: done / total, the estimated time left, and a
// note (`tilejit tune` shows the best config so far). On a terminal it redraws one line in
// place; into a file or pipe it writes a line per update, so logs keep every step.
#pragma once

#include <cstdio>
#include <string>

#include "autotune/stopwatch.h"

namespace tilejit::tools {

class ProgressBar {
 public:
  explicit ProgressBar(std::FILE* out);
  // `total` may change as the work learns what it holds.
  void update(int done, int total, const std::string& note);
  void finish();  // ends the line on a terminal

  // "[#####-----]  12/40  ETA 0:34  note"; no ETA before the first step is done.
  static std::string render(int done, int total, double elapsed_s, const std::string& note);

 private:
  std::FILE* out_;
  bool terminal_;
  autotune::Stopwatch since_start_;
};

// Seconds as "m:ss", or "h:mm:ss" from an hour on.
std::string format_duration(double seconds);

}  // namespace tilejit::tools
