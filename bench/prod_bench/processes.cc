#include "prod_bench/processes.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <thread>

#include "testing/child_process.h"

namespace schedext::bench::prod {
namespace {

using Clock = std::chrono::steady_clock;

cpu_set_t CpuSetOf(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  return set;
}

}  // namespace

CpuSplit SplitCpus() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return {};
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  }
  if (cpus.size() < 2) return {};
  const size_t serving = (cpus.size() + 1) / 2;
  return {{cpus.begin() + static_cast<std::ptrdiff_t>(serving), cpus.end()},
          {cpus.begin(), cpus.begin() + static_cast<std::ptrdiff_t>(serving)}};
}

bool PinThisThread(const std::vector<int>& cpus) {
  if (cpus.empty()) return true;
  const cpu_set_t set = CpuSetOf(cpus);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

void PinProcess(pid_t pid, const std::vector<int>& cpus) {
  if (cpus.empty() || pid < 0) return;
  const cpu_set_t set = CpuSetOf(cpus);
  const std::string dir = pid == 0 ? "/proc/self/task" : "/proc/" + std::to_string(pid) + "/task";
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator(dir, ec)) {
    const pid_t tid = static_cast<pid_t>(std::atoi(task.path().filename().c_str()));
    if (tid > 0) sched_setaffinity(tid, sizeof(set), &set);
  }
}

std::string CpuList(const std::vector<int>& cpus) {
  std::string out;
  for (int c : cpus) {
    if (!out.empty()) out += ',';
    out += std::to_string(c);
  }
  return out;
}

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

pid_t SpawnChild(const std::vector<std::string>& args, const std::string& log) {
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  const StatusOr<pid_t> pid = schedext::testing::SpawnProcess(args, -1, fd);
  ::close(fd);
  return pid.ok() ? *pid : -1;
}

bool Running(pid_t pid) {
  int status = 0;
  return pid > 0 && ::waitpid(pid, &status, WNOHANG) == 0;
}

// SIGTERM, SIGKILL after `grace`; reaps. Returns the wait status (-1 if killed).
int StopChild(pid_t& pid, std::chrono::seconds grace) {
  if (pid <= 0) return 0;
  ::kill(pid, SIGTERM);
  const auto deadline = Clock::now() + grace;
  int status = 0;
  while (Clock::now() < deadline) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      pid = -1;
      return status;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  pid = -1;
  return -1;
}

int WaitListeningPort(pid_t pid, const std::string& log_path, std::string_view pattern,
                      std::chrono::seconds bound) {
  const auto deadline = Clock::now() + bound;
  while (Clock::now() < deadline && Running(pid)) {
    const std::string text = ReadWhole(log_path);
    const size_t at = text.find(pattern);
    if (at != std::string::npos) {
      const int port = std::atoi(text.c_str() + at + pattern.size());
      if (port > 0) return port;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return -1;
}

}  // namespace schedext::bench::prod
