// For tests across processes (what several programs sharing one cache directory do): a
// forked child runs a function and exits with its return value.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

namespace tilejit::testing_util {

// Runs `body` in a child process; its return value is the child's exit status.
template <typename Body>
pid_t fork_child(Body body) {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  return pid;
}

// The child's exit status; -1 when it did not exit normally (a crash, a signal).
inline int exit_status(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

}  // namespace tilejit::testing_util
