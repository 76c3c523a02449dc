#include "testing/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace schedext::testing {
namespace {

// Strings as the NUL-terminated array execve takes, built before fork (the
// child may only make async-signal-safe calls).
struct CArray {
  explicit CArray(const std::vector<std::string>& items) : strings(items) {
    for (std::string& s : strings) pointers.push_back(s.data());
    pointers.push_back(nullptr);
  }
  std::vector<std::string> strings;
  std::vector<char*> pointers;
};

}  // namespace

StatusOr<pid_t> SpawnProcess(const std::vector<std::string>& args, int stdin_fd, int out_fd,
                             const std::vector<std::string>* env) {
  CArray argv(args);
  const CArray child_env(env != nullptr ? *env : std::vector<std::string>());
  char* const* envp = env != nullptr ? child_env.pointers.data() : environ;
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) return InternalError(std::string("open /dev/null: ") + std::strerror(errno));
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(null_fd);
    return InternalError(std::string("fork: ") + std::strerror(err));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(127);  // the parent died before prctl
    ::dup2(stdin_fd >= 0 ? stdin_fd : null_fd, 0);
    ::dup2(out_fd, 1);
    ::dup2(out_fd, 2);
    ::close_range(3, ~0U, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(argv.pointers[0], argv.pointers.data(), envp);
    _exit(127);
  }
  ::close(null_fd);
  return pid;
}

}  // namespace schedext::testing
