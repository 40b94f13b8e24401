#include "tools/progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace tilejit::tools {

constexpr int kBarWidth = 24;

ProgressBar::ProgressBar(std::FILE* out)
    : out_(out), terminal_(::isatty(::fileno(out)) != 0) {}

void ProgressBar::update(int done, int total, const std::string& note) {
  std::string line = render(done, total, since_start_.seconds(), note);
  if (terminal_) fmt::print(out_, "\r\033[K{}", line);  // \033[K: clear the rest of the old line
  else fmt::print(out_, "{}\n", line);
  std::fflush(out_);
}

void ProgressBar::finish() {
  if (terminal_) fmt::print(out_, "\n");
}

std::string ProgressBar::render(int done, int total, double elapsed_s, const std::string& note) {
  int filled = total > 0 ? std::clamp(done * kBarWidth / total, 0, kBarWidth) : kBarWidth;
  std::string eta = done > 0 && done < total ? "ETA " + format_duration(elapsed_s / done * (total - done)) : "";
  if (done >= total) eta = "took " + format_duration(elapsed_s);
  return fmt::format("[{}{}] {:>4}/{:<4} {:<12} {}", std::string(size_t(filled), '#'),
                     std::string(size_t(kBarWidth - filled), '-'), done, total, eta, note);
}

std::string format_duration(double seconds) {
  auto s = static_cast<long>(std::lround(std::max(0.0, seconds)));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

}  // namespace tilejit::tools
