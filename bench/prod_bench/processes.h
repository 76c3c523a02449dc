// Where schedext-prod-bench's processes run: the --cpu-split halves of the
// CPUs, and the child processes (schedext, the Go floor) it starts and stops
// by PID. Called from the driver's thread (prod_bench.cc) and the churn
// writers (PinThisThread).
#ifndef SCHEDEXT_BENCH_PROD_BENCH_PROCESSES_H_
#define SCHEDEXT_BENCH_PROD_BENCH_PROCESSES_H_

#include <sys/types.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace schedext::bench::prod {

// The CPUs this process may use, halved: the control plane's side (the last
// ones) and the serving side. Both empty with one CPU.
struct CpuSplit {
  std::vector<int> control;
  std::vector<int> serving;
};
CpuSplit SplitCpus();

// Restricts the calling thread, and the threads and children it starts from
// now on (they inherit its mask), to `cpus`; nothing when empty.
bool PinThisThread(const std::vector<int>& cpus);

// Every thread of process `pid` (0: this one) to `cpus`; nothing when empty.
// Threads started later inherit the mask of the thread that starts them.
void PinProcess(pid_t pid, const std::vector<int>& cpus);

// "0,1,2".
std::string CpuList(const std::vector<int>& cpus);

// fork + execve into its own process group, output to `log`, SIGKILL when this
// process dies. The log is truncated: WaitListeningPort reads the port from it,
// and a previous run's line in the same --out folder would name a dead port.
pid_t SpawnChild(const std::vector<std::string>& args, const std::string& log);

// Whether child `pid` has not exited yet.
bool Running(pid_t pid);

// SIGTERM, SIGKILL after `grace`; reaps. Returns the wait status (-1 if killed).
int StopChild(pid_t& pid, std::chrono::seconds grace);

// Waits (bounded) for `pattern` + a port number in the log of `pid`, which
// was told to listen on port 0: no port is chosen before the server binds it.
int WaitListeningPort(pid_t pid, const std::string& log_path, std::string_view pattern,
                      std::chrono::seconds bound);

// The file's contents ("" when unreadable).
std::string ReadWhole(const std::string& path);

}  // namespace schedext::bench::prod

#endif  // SCHEDEXT_BENCH_PROD_BENCH_PROCESSES_H_
