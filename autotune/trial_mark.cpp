#include "autotune/trial_mark.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <mutex>
#include <random>

#include <fmt/format.h>

namespace tilejit::autotune {
namespace {

// This process's lock file in one cache directory.
struct Presence {
  pid_t pid = 0;  // the process that made it: a forked child shares the lock, not the file's meaning
  std::string id;
};

std::string tuners_directory(const KernelCache& cache) { return cache.directory() + "/tuners"; }

// Ids name files: 32 hex digits, nothing else, so a damaged mark cannot name another path.
bool is_tuner_id(const std::string& id) {
  return id.size() == 32 && id.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::string new_tuner_id() {
  std::random_device random;
  std::uniform_int_distribution<uint64_t> bits;
  return fmt::format("{:016x}{:016x}", bits(random), bits(random));
}

// This process's id in `cache`'s directory, its lock file made and locked at the first call
// (the descriptor stays open, and the lock held, until the process ends); nullopt where that
// cannot be done.
std::optional<std::string> presence_in(const KernelCache& cache) {
  static std::mutex mutex;
  static std::map<std::string, Presence> presences;  // by directory
  if (!cache.on_disk()) return std::nullopt;
  std::lock_guard lock(mutex);
  Presence& presence = presences[cache.directory()];
  if (presence.pid == ::getpid()) return presence.id;
  const std::string dir = tuners_directory(cache);
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) return std::nullopt;
  const std::string id = new_tuner_id();
  const int fd = ::open((dir + "/" + id).c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0644);
  if (fd < 0) return std::nullopt;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return std::nullopt;
  }
  presence = {::getpid(), id};
  return id;
}

}  // namespace

std::optional<TrialRecord> running_mark(const KernelCache& cache, int ended_before) {
  std::optional<std::string> id = presence_in(cache);
  if (!id) return std::nullopt;
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  TrialRecord mark;
  mark.status = TrialStatus::running;
  mark.owner = *id;
  mark.ended_before = ended_before;
  mark.detail = fmt::format("being measured by process {} on {}", ::getpid(), host);
  return mark;
}

bool mark_outlived_its_process(const KernelCache& cache, const TrialRecord& mark) {
  if (mark.status != TrialStatus::running || !cache.on_disk() || !is_tuner_id(mark.owner)) return false;
  if (presence_in(cache) == mark.owner) return false;
  const std::string path = tuners_directory(cache) + "/" + mark.owner;
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT;  // its lock file is gone: so is the process
  const bool ended = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  if (ended) ::unlink(path.c_str());  // nobody holds it, nobody will
  ::close(fd);
  return ended;
}

TrialRecord failure_of_ended_measurements(const TrialRecord& mark) {
  TrialRecord failure;
  failure.status = TrialStatus::launch_failed;
  failure.detail = fmt::format(
      "measuring it ended {} tuning processes without a result (the last was {}): it crashes them, or hangs and they "
      "were killed (to measure it again, empty the cache: tilejit cache clear)",
      mark.ended_before + 1, mark.detail);
  return failure;
}

}  // namespace tilejit::autotune
