#include "autotune/trial_mark.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

namespace tilejit::autotune {
namespace {

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

}  // namespace

TrialRecord running_mark() {
  TrialRecord mark;
  mark.status = TrialStatus::running;
  mark.owner_pid = ::getpid();
  mark.owner_host = host_name();
  mark.detail = fmt::format("being measured by process {} on {}", mark.owner_pid, mark.owner_host);
  return mark;
}

bool mark_outlived_its_process(const TrialRecord& mark) {
  if (mark.status != TrialStatus::running || mark.owner_pid <= 0) return false;
  if (mark.owner_host.empty() || mark.owner_host != host_name()) return false;
  return ::kill(static_cast<pid_t>(mark.owner_pid), 0) != 0 && errno == ESRCH;
}

TrialRecord failure_of_ended_run(const TrialRecord& mark) {
  return {TrialStatus::launch_failed, 0,
          fmt::format("process {} on {} was measuring it and ended without a result: the config crashed it, or hung "
                      "and was killed (to measure it again, empty the cache: tilejit cache clear)",
                      mark.owner_pid, mark.owner_host),
          {}};
}

}  // namespace tilejit::autotune
