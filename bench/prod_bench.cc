// schedext-prod-bench: schedext measured the way production runs it (issue 15,
// part 1). A real etcd + kube-apiserver 1.26 on loopback (the control-plane
// fixture of test/testing), N generated ~11 KB nodes (bench/gen) and bound pods
// created through it, the real schedext binary started with --kubeconfig so
// its cache fills through the informers (LIST + WATCH), /readyz awaited, then
// filter and prioritize requests of N names over one keep-alive connection,
// alternating rounds against the Go floor (bench/go-baseline), for every
// profile of bench/prod-profiles.yaml, idle and under watch churn (a bounded
// background writer updating nodes and pods through the API server at a fixed
// rate). Full mode (the nodes in the body) is measured too. Each run reads the
// servers' /proc counters (CPU, page faults, context switches) and the
// machine's /proc/stat (busy, steal) so a slow round can be told apart from a
// busy machine. --trace-seconds adds per-window time series for part 3.
// --cpu-split puts the control plane (etcd, kube-apiserver) and the churn
// writers on one half of the CPUs and schedext, the Go floor and the clients
// on the other, as production places them (the API server on the control
// plane's machines, not on the extender's cores); without it every process
// shares every CPU, which on a 2-vCPU box is the test rig's contention.
//
//   schedext-prod-bench --schedext BIN --config bench/prod-profiles.yaml --out DIR
//       [--go-baseline BIN] [--nodes 5000] [--pods-per-node 2] [--rounds 3]
//       [--requests 300] [--go-requests 60] [--churn-rate 60] [--full 5000,15000]
//       [--full-requests 20]
//       [--profiles default,resources,gpushare,labels] [--gpu-profiles gpushare]
//       [--trace-seconds 0] [--trace-profiles default,gpushare] [--cpu-split] [--smoke]
//
// Writes DIR/runs.txt (one key=value line per run), DIR/summary.md (tables),
// DIR/trace-*.txt and the children's logs. Loopback only; every wait and loop
// is bounded; children are stopped by PID (and get SIGKILL if this process
// dies). --smoke is a short run for CTest: a few nodes, one round, and a
// non-zero exit on any error reply or a reply that does not account for every
// node — never on speed. Exit 77 (CTest's skip) when the control-plane
// binaries are missing and $CI is not "true".
#include <httplib.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include "gen/payload_gen.h"
#include "gen/prod_objects.h"
#include "support/http_client.h"
#include "testing/control_plane.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using schedext::testing::ControlPlane;
using schedext::testing::ControlPlaneOptions;
using schedext::bench::NodeObject;
using schedext::bench::PodObject;

// ---- Options --------------------------------------------------------------------

struct Options {
  std::string schedext;
  std::string go_baseline;
  std::string config;
  std::string out;
  size_t nodes = 5000;
  size_t pods_per_node = 2;
  int rounds = 3;
  int requests = 300;
  int go_requests = 60;
  double churn_rate = 60;  // writes per second through the API server
  std::vector<size_t> full = {5000, 15000};
  int full_requests = 20;  // FullRequestsFor
  std::vector<std::string> profiles = {"default", "resources", "gpushare", "labels"};
  std::vector<std::string> gpu_profiles = {"gpushare"};
  double trace_seconds = 0;
  std::vector<std::string> trace_profiles = {"default", "gpushare"};
  double trace_window_s = 0.5;
  int create_threads = 4;
  // Other schedext configurations measured against the main one on the same
  // control plane (NAME=FILE, or NAME=FILE@BINARY to run another schedext
  // binary, e.g. the previous commit's: before/after in the same load),
  // filter and prioritize of --trace-profiles.
  std::vector<std::pair<std::string, std::string>> variants;
  bool smoke = false;
  bool cpu_split = false;
  uint64_t seed = 1;
};

// Requests per full-mode run of `nodes` nodes: --full-requests for schedext
// up to 5,000 nodes and a quarter of it (at least 3) above; the Go floor
// takes ~1 s per request at 5,000 nodes and gets 3 (1 above).
struct FullRequests {
  int schedext;
  int go;
};
FullRequests FullRequestsFor(const Options& o, size_t nodes) {
  if (o.smoke) return {3, 2};
  if (nodes > 5000) return {std::max(3, o.full_requests / 4), 1};
  return {o.full_requests, 3};
}

constexpr std::string_view kUsage =
    "usage: schedext-prod-bench --schedext BIN --config FILE --out DIR [--go-baseline BIN]\n"
    "  [--nodes N] [--pods-per-node K] [--rounds R] [--requests Q] [--go-requests Q]\n"
    "  [--churn-rate WRITES_PER_S] [--full N,N|none] [--full-requests Q]\n"
    "  [--profiles a,b] [--gpu-profiles a,b]\n"
    "  [--trace-seconds S] [--trace-profiles a,b] [--create-threads T] [--seed S] [--smoke]\n"
    "  [--cpu-split]\n"
    "  [--variants NAME=CONFIG[@SCHEDEXT_BIN],...]\n";

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty() && item != "none") out.push_back(item);
  }
  return out;
}

bool ParseOptions(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--smoke") {
      o.smoke = true;
      continue;
    }
    if (arg == "--cpu-split") {
      o.cpu_split = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::cerr << "schedext-prod-bench: " << arg << " needs a value\n";
      return false;
    }
    const std::string v = argv[++i];
    if (arg == "--schedext") {
      o.schedext = v;
    } else if (arg == "--go-baseline") {
      o.go_baseline = v;
    } else if (arg == "--config") {
      o.config = v;
    } else if (arg == "--out") {
      o.out = v;
    } else if (arg == "--nodes") {
      o.nodes = std::strtoull(v.c_str(), nullptr, 10);
    } else if (arg == "--pods-per-node") {
      o.pods_per_node = std::strtoull(v.c_str(), nullptr, 10);
    } else if (arg == "--rounds") {
      o.rounds = std::max(1, std::atoi(v.c_str()));
    } else if (arg == "--requests") {
      o.requests = std::max(1, std::atoi(v.c_str()));
    } else if (arg == "--go-requests") {
      o.go_requests = std::max(1, std::atoi(v.c_str()));
    } else if (arg == "--churn-rate") {
      o.churn_rate = std::atof(v.c_str());
    } else if (arg == "--full") {
      o.full.clear();
      for (const std::string& n : SplitList(v))
        o.full.push_back(std::strtoull(n.c_str(), nullptr, 10));
    } else if (arg == "--full-requests") {
      o.full_requests = std::max(1, std::atoi(v.c_str()));
    } else if (arg == "--profiles") {
      o.profiles = SplitList(v);
    } else if (arg == "--gpu-profiles") {
      o.gpu_profiles = SplitList(v);
    } else if (arg == "--trace-seconds") {
      o.trace_seconds = std::atof(v.c_str());
    } else if (arg == "--trace-profiles") {
      o.trace_profiles = SplitList(v);
    } else if (arg == "--create-threads") {
      o.create_threads = std::max(1, std::atoi(v.c_str()));
    } else if (arg == "--variants") {
      for (const std::string& item : SplitList(v)) {
        const size_t eq = item.find('=');
        if (eq == std::string::npos) return false;
        o.variants.emplace_back(item.substr(0, eq), item.substr(eq + 1));
      }
    } else if (arg == "--seed") {
      o.seed = std::strtoull(v.c_str(), nullptr, 10);
    } else {
      std::cerr << "schedext-prod-bench: unknown flag " << arg << "\n";
      return false;
    }
  }
  if (o.smoke) {
    o.nodes = std::min<size_t>(o.nodes, 60);
    o.pods_per_node = std::min<size_t>(o.pods_per_node, 1);
    o.rounds = 1;
    o.requests = std::min(o.requests, 10);
    o.go_requests = std::min(o.go_requests, 5);
    o.churn_rate = std::min(o.churn_rate, 20.0);
    o.full = {o.nodes};
    o.trace_seconds = 0;
  }
  return !o.schedext.empty() && !o.config.empty() && !o.out.empty() && o.nodes > 0;
}

// ---- --cpu-split ---------------------------------------------------------------

// The CPUs this process may use, halved: the control plane's side (the last
// ones) and the serving side. Both empty with one CPU.
struct CpuSplit {
  std::vector<int> control;
  std::vector<int> serving;
};

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

cpu_set_t CpuSetOf(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  return set;
}

// Restricts the calling thread, and the threads and children it starts from
// now on (they inherit its mask), to `cpus`; nothing when empty.
bool PinThisThread(const std::vector<int>& cpus) {
  if (cpus.empty()) return true;
  const cpu_set_t set = CpuSetOf(cpus);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

// Every thread of process `pid` (0: this one) to `cpus`; nothing when empty.
// Threads started later inherit the mask of the thread that starts them.
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

// ---- /proc counters -------------------------------------------------------------

struct ProcSample {
  double cpu_s = 0;  // utime + stime, all threads
  uint64_t minflt = 0;
  uint64_t majflt = 0;
  uint64_t vcsw = 0;  // voluntary context switches, summed over threads
  uint64_t ivcsw = 0;
  uint64_t rss_kb = 0;
};

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ProcSample SampleProcess(pid_t pid) {
  ProcSample s;
  if (pid <= 0) return s;
  const std::string dir = "/proc/" + std::to_string(pid);
  const std::string stat = ReadWhole(dir + "/stat");
  // Fields after the parenthesised command name (which may hold spaces).
  const size_t close = stat.rfind(')');
  if (close != std::string::npos) {
    std::istringstream in(stat.substr(close + 2));
    std::vector<std::string> f;
    std::string w;
    while (in >> w) f.push_back(w);
    // f[0] is field 3 (state): minflt is field 10, majflt 12, utime 14, stime 15.
    if (f.size() > 13) {
      s.minflt = std::strtoull(f[7].c_str(), nullptr, 10);
      s.majflt = std::strtoull(f[9].c_str(), nullptr, 10);
      const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
      s.cpu_s = static_cast<double>(std::strtoull(f[11].c_str(), nullptr, 10) +
                                    std::strtoull(f[12].c_str(), nullptr, 10)) /
                ticks;
    }
  }
  std::error_code ec;
  double on_cpu_ns = 0;
  for (const auto& task : std::filesystem::directory_iterator(dir + "/task", ec)) {
    // schedstat's first field: nanoseconds on a CPU (stat's ticks are 10 ms).
    on_cpu_ns += std::strtod(ReadWhole(task.path().string() + "/schedstat").c_str(), nullptr);
    std::istringstream in(ReadWhole(task.path().string() + "/status"));
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0) {
        s.vcsw += std::strtoull(line.c_str() + 24, nullptr, 10);
      } else if (line.rfind("nonvoluntary_ctxt_switches:", 0) == 0) {
        s.ivcsw += std::strtoull(line.c_str() + 27, nullptr, 10);
      }
    }
  }
  if (on_cpu_ns > 0) s.cpu_s = on_cpu_ns / 1e9;
  std::istringstream st(ReadWhole(dir + "/status"));
  std::string line;
  while (std::getline(st, line)) {
    if (line.rfind("VmRSS:", 0) == 0) s.rss_kb = std::strtoull(line.c_str() + 6, nullptr, 10);
  }
  return s;
}

// Waits (at most `limit`) until process `pid` has been nearly idle (under 1 %
// of a CPU) for `quiet`; false when it never was. The servers take turns, and
// what one does after its run (the Go floor's garbage collector and scavenger
// sweeping the garbage of 60 decoded 5,000-name bodies) must not share a CPU
// with the other's run: with --cpu-split both sit on the same one, and before
// this wait those slices (up to 10 ms, `perf record -e sched:sched_switch`)
// were where schedext's p99 of 3-5 ms came from. Nothing when pid <= 0.
bool WaitQuiet(pid_t pid, std::chrono::milliseconds quiet = std::chrono::milliseconds(20),
               std::chrono::milliseconds limit = std::chrono::milliseconds(2000)) {
  if (pid <= 0) return true;
  constexpr auto kStep = std::chrono::milliseconds(5);
  const auto deadline = Clock::now() + limit;
  double window_start_cpu = SampleProcess(pid).cpu_s;
  auto window_start = Clock::now();
  while (Clock::now() < deadline) {
    std::this_thread::sleep_for(kStep);
    const double cpu = SampleProcess(pid).cpu_s;
    const auto now = Clock::now();
    const double elapsed = std::chrono::duration<double>(now - window_start).count();
    if (cpu - window_start_cpu > 0.01 * elapsed) {
      window_start_cpu = cpu;  // busy: the quiet window starts over
      window_start = now;
    } else if (now - window_start >= quiet) {
      return true;
    }
  }
  return false;
}

// The machine's CPU time from /proc/stat, in seconds summed over CPUs.
struct MachineSample {
  double busy_s = 0;
  double steal_s = 0;
  double total_s = 0;
};

MachineSample SampleMachine() {
  MachineSample m;
  std::istringstream in(ReadWhole("/proc/stat"));
  std::string cpu;
  in >> cpu;
  if (cpu != "cpu") return m;
  // user nice system idle iowait irq softirq steal
  double v[8] = {};
  for (double& x : v) in >> x;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  m.busy_s = (v[0] + v[1] + v[2] + v[5] + v[6]) / ticks;
  m.steal_s = v[7] / ticks;
  m.total_s = (v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7]) / ticks;
  return m;
}

// CPU seconds (ticks) of this process and its direct children: the servers,
// etcd and kube-apiserver. The machine's busy time minus this is what the
// neighbours used.
double FamilyCpu() {
  const pid_t self = ::getpid();
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  double total = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name[0] < '0' || name[0] > '9') continue;
    const std::string stat = ReadWhole(e.path().string() + "/stat");
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream in(stat.substr(close + 2));
    std::vector<std::string> f;
    std::string w;
    while (in >> w && f.size() < 14) f.push_back(w);
    if (f.size() < 13) continue;
    const pid_t pid = static_cast<pid_t>(std::atoi(name.c_str()));
    const pid_t ppid = static_cast<pid_t>(std::atoi(f[1].c_str()));
    if (pid != self && ppid != self) continue;
    total += static_cast<double>(std::strtoull(f[11].c_str(), nullptr, 10) +
                                 std::strtoull(f[12].c_str(), nullptr, 10)) /
             ticks;
  }
  return total;
}

std::string LoadAverage() {
  std::string s = ReadWhole("/proc/loadavg");
  std::istringstream in(s);
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

std::string UtcNow() {
  const std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&t));
  return buf;
}

std::string Rfc3339Now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// ---- Child processes ------------------------------------------------------------

// fork + execve into its own process group, output to `log`, SIGKILL when this
// process dies. The log is truncated: WaitListeningPort reads the port from it,
// and a previous run's line in the same --out folder would name a dead port.
pid_t SpawnChild(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> strings = args;
  std::vector<char*> argv;
  for (std::string& s : strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd < 0 || null_fd < 0) return -1;
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(127);
    ::dup2(null_fd, 0);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::close_range(3, ~0U, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(argv[0], argv.data(), environ);
    _exit(127);
  }
  ::close(fd);
  ::close(null_fd);
  return pid;
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

// Waits (bounded) for `pattern` + a port number in the log of `pid`, which
// was told to listen on port 0: no port is chosen before the server binds it.
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

// ---- A kube-scheduler-like HTTP/1.1 client --------------------------------------

// One keep-alive connection to 127.0.0.1:port; each request in one write on a
// TCP_NODELAY socket, as Go's transport sends them (support/http_client.h).
using Conn = schedext::bench::LoopbackConnection;

std::string PostRequest(int port, const std::string& path, const std::string& body) {
  std::string r = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                  "\r\nUser-Agent: kube-scheduler/v1.26.7 (schedext-prod-bench)\r\n"
                  "Content-Length: " +
                  std::to_string(body.size()) +
                  "\r\nContent-Type: application/json\r\nAccept-Encoding: gzip\r\n\r\n";
  r += body;
  return r;
}

// GET on a fresh connection; the status, or -1.
int Get(int port, const std::string& path) {
  Conn c(port);
  int status = 0;
  std::string body;
  const std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                          "\r\nConnection: close\r\n\r\n";
  return c.Exchange(req, status, body) ? status : -1;
}

// ---- One measured run ----------------------------------------------------------

struct Run {
  std::string condition;  // idle | churn | full
  int round = 0;
  std::string profile;
  std::string verb;
  std::string server;  // schedext | go
  size_t nodes = 0;
  size_t requests = 0;
  size_t errors = 0;
  double p50 = 0, p90 = 0, p99 = 0, max = 0;
  double cpu_ms_per_req = 0;
  double minflt_per_req = 0;
  double majflt = 0;
  double vcsw_per_req = 0;
  double ivcsw_per_req = 0;
  double machine_busy_pct = 0;  // of all CPUs, 100 % = every CPU busy
  double steal_pct = 0;
  double others_pct = 0;  // busy minus this driver and its children (servers, etcd, apiserver)
  double wall_s = 0;
  uint64_t rss_kb = 0;
  std::string first_error;
};

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t i = std::min(sorted.size() - 1,
                            static_cast<size_t>(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[i];
}

// `requests` sequential requests (after `warmup`), bounded by `seconds`.
Run Measure(int port, pid_t pid, const std::string& request, int warmup, int requests,
            double seconds) {
  Run run;
  Conn conn(port);
  int status = 0;
  std::string reply;
  for (int i = 0; i < warmup; ++i) conn.Exchange(request, status, reply);
  std::vector<double> lat;
  lat.reserve(static_cast<size_t>(requests));
  const ProcSample p0 = SampleProcess(pid);
  const MachineSample m0 = SampleMachine();
  const double family0 = FamilyCpu();
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
  for (int i = 0; i < requests && Clock::now() < deadline; ++i) {
    const auto t0 = Clock::now();
    const bool ok = conn.Exchange(request, status, reply);
    lat.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (!ok || status != 200 || schedext::bench::CarriesError(reply)) {
      ++run.errors;
      if (run.first_error.empty()) {
        run.first_error = ok ? "status " + std::to_string(status) + ": " + reply.substr(0, 200)
                             : "connection failed";
      }
    }
  }
  run.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  const double family1 = FamilyCpu();
  const MachineSample m1 = SampleMachine();
  const ProcSample p1 = SampleProcess(pid);
  std::sort(lat.begin(), lat.end());
  run.requests = lat.size();
  run.p50 = Percentile(lat, 50);
  run.p90 = Percentile(lat, 90);
  run.p99 = Percentile(lat, 99);
  run.max = lat.empty() ? 0 : lat.back();
  const double n = std::max<double>(1, static_cast<double>(lat.size()));
  run.cpu_ms_per_req = (p1.cpu_s - p0.cpu_s) * 1000 / n;
  run.minflt_per_req = static_cast<double>(p1.minflt - p0.minflt) / n;
  run.majflt = static_cast<double>(p1.majflt - p0.majflt);
  run.vcsw_per_req = static_cast<double>(p1.vcsw - p0.vcsw) / n;
  run.ivcsw_per_req = static_cast<double>(p1.ivcsw - p0.ivcsw) / n;
  const double total = m1.total_s - m0.total_s;
  if (total > 0) {
    run.machine_busy_pct = 100 * (m1.busy_s - m0.busy_s) / total;
    run.steal_pct = 100 * (m1.steal_s - m0.steal_s) / total;
    run.others_pct = std::max(0.0, 100 * ((m1.busy_s - m0.busy_s) - (family1 - family0)) / total);
  }
  run.rss_kb = p1.rss_kb;
  return run;
}

std::string RunLine(const Run& r) {
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "condition=%s round=%d profile=%s verb=%s server=%s nodes=%zu requests=%zu "
                "errors=%zu p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f max_ms=%.3f cpu_ms_per_req=%.3f "
                "minflt_per_req=%.2f majflt=%.0f vcsw_per_req=%.2f ivcsw_per_req=%.2f "
                "machine_busy_pct=%.1f steal_pct=%.1f others_pct=%.1f rss_mib=%.0f wall_s=%.2f",
                r.condition.c_str(), r.round, r.profile.c_str(), r.verb.c_str(), r.server.c_str(),
                r.nodes, r.requests, r.errors, r.p50, r.p90, r.p99, r.max, r.cpu_ms_per_req,
                r.minflt_per_req, r.majflt, r.vcsw_per_req, r.ivcsw_per_req, r.machine_busy_pct,
                r.steal_pct, r.others_pct, static_cast<double>(r.rss_kb) / 1024.0, r.wall_s);
  return buf;
}

// ---- The API server side --------------------------------------------------------

// An admin client on one keep-alive TLS connection (one per thread).
std::unique_ptr<httplib::SSLClient> AdminClient(const ControlPlane& cp) {
  auto c = std::make_unique<httplib::SSLClient>("127.0.0.1", cp.api_server_port());
  c->set_ca_cert_path(cp.ca_file().c_str());
  c->enable_server_certificate_verification(true);
  c->set_bearer_token_auth(cp.admin_token());
  c->set_keep_alive(true);
  c->set_connection_timeout(5, 0);
  c->set_read_timeout(60, 0);
  c->set_write_timeout(60, 0);
  return c;
}

// Creates `objects` (path, body) with `threads` connections; the first error.
std::string CreateAll(const ControlPlane& cp,
                      const std::vector<std::pair<std::string, std::string>>& objects,
                      int threads) {
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::string first_error;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      auto c = AdminClient(cp);
      for (size_t i = next++; i < objects.size(); i = next++) {
        httplib::Result res{nullptr, httplib::Error::Unknown};
        for (int attempt = 0; attempt < 3; ++attempt) {
          res = c->Post(objects[i].first, objects[i].second, "application/json");
          if (res && res->status != 429 && res->status < 500) break;
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
        if (!res || res->status != 201) {
          std::lock_guard<std::mutex> lock(mu);
          if (first_error.empty()) {
            first_error = "POST " + objects[i].first + ": " +
                          (res ? std::to_string(res->status) + " " + res->body.substr(0, 300)
                               : httplib::to_string(res.error()));
          }
          next = objects.size();
          return;
        }
      }
    });
  }
  for (auto& t : pool) t.join();
  return first_error;
}

// Watch churn: node heartbeats (strategic merge of the Ready condition), pod
// label changes, bound pods created and deleted, in turn, at `rate` writes/s
// over kWriters connections (one write's latency must not cap the rate),
// until stopped. Every write is an ADDED/MODIFIED/DELETED event schedext's
// informers receive.
class Churn {
 public:
  static constexpr int kWriters = 4;

  // `cpus`: where the writers run (--cpu-split: the control plane's side, as
  // the kubelets and controllers writing these objects are not on the
  // extender's cores); empty: anywhere.
  Churn(const ControlPlane& cp, const std::vector<std::string>& nodes, size_t pods, double rate,
        std::vector<int> cpus)
      : cp_(cp), nodes_(nodes), pods_(pods), rate_(rate), cpus_(std::move(cpus)) {}
  ~Churn() { Stop(); }

  void Start() {
    if (rate_ <= 0) return;
    stop_ = false;
    started_ = Clock::now();
    for (int t = 0; t < kWriters; ++t) threads_.emplace_back([this, t] { Loop(t); });
  }
  void Stop() {
    stop_ = true;
    for (auto& t : threads_) t.join();
    if (!threads_.empty())
      seconds_ += std::chrono::duration<double>(Clock::now() - started_).count();
    threads_.clear();
  }
  size_t writes() const { return writes_; }
  size_t errors() const { return errors_; }
  double seconds() const { return seconds_; }
  std::string first_error() const {
    std::lock_guard<std::mutex> lock(mu_);
    return first_error_;
  }

 private:
  struct Writer {
    uint64_t step = 0;
    size_t created = 0;
    std::deque<size_t> live;
  };

  void Loop(int t) {
    PinThisThread(cpus_);
    auto c = AdminClient(cp_);
    Writer& w = writers_[t];
    const auto start = Clock::now();
    const auto period = std::chrono::duration<double>(kWriters / rate_);
    for (uint64_t i = 0; !stop_; ++i) {
      const auto due = start + std::chrono::duration_cast<Clock::duration>(period * i);
      std::this_thread::sleep_until(due);
      if (stop_) break;
      const uint64_t k = w.step++ * kWriters + static_cast<uint64_t>(t);
      httplib::Result res{nullptr, httplib::Error::Unknown};
      int ok_status = 200;
      const std::string& node = nodes_[(k * 7919) % nodes_.size()];
      const std::string prefix = "churn-" + std::to_string(t) + "-";
      switch (w.step % 4) {
        case 0:
          res = c->Patch("/api/v1/nodes/" + node + "/status",
                         "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","
                         "\"lastHeartbeatTime\":\"" +
                             Rfc3339Now() + "\"}]}}",
                         "application/strategic-merge-patch+json");
          break;
        case 1:
          if (pods_ == 0) continue;
          res = c->Patch(
              "/api/v1/namespaces/default/pods/bench-" + std::to_string((k * 104729) % pods_),
              "{\"metadata\":{\"labels\":{\"churn\":\"" + std::to_string(k) + "\"}}}",
              "application/merge-patch+json");
          break;
        case 2:
          res = c->Post("/api/v1/namespaces/default/pods",
                        PodObject(prefix + std::to_string(w.created), node, w.created),
                        "application/json");
          ok_status = 201;
          if (res && res->status == 201) w.live.push_back(w.created++);
          break;
        default:
          if (w.live.empty()) continue;
          res = c->Delete("/api/v1/namespaces/default/pods/" + prefix +
                          std::to_string(w.live.front()) + "?gracePeriodSeconds=0");
          w.live.pop_front();
          break;
      }
      ++writes_;
      if (!res || res->status != ok_status) {
        ++errors_;
        std::lock_guard<std::mutex> lock(mu_);
        if (first_error_.empty()) {
          first_error_ = res ? std::to_string(res->status) + " " + res->body.substr(0, 200)
                             : httplib::to_string(res.error());
        }
      }
    }
  }

  const ControlPlane& cp_;
  const std::vector<std::string>& nodes_;
  const size_t pods_;
  const double rate_;
  const std::vector<int> cpus_;
  std::vector<std::thread> threads_;
  Writer writers_[kWriters];
  Clock::time_point started_;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> writes_{0};
  std::atomic<size_t> errors_{0};
  double seconds_ = 0;
  mutable std::mutex mu_;
  std::string first_error_;
};

// ---- Reporting ------------------------------------------------------------------

std::string Ms(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v < 10 ? "%.2f" : (v < 100 ? "%.1f" : "%.0f"), v);
  return buf;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string Join(const std::vector<double>& v, const std::string& sep = " / ") {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + Ms(v[i]);
  return s;
}

// One table row per (profile, verb) of `condition`.
std::string Table(const std::vector<Run>& runs, const std::string& condition, bool has_go) {
  std::vector<std::tuple<std::string, std::string, size_t>> keys;
  for (const Run& r : runs) {
    if (r.condition != condition) continue;
    const auto key = std::make_tuple(r.profile, r.verb, r.nodes);
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  }
  std::ostringstream o;
  o << "| profile | verb | nodes | schedext p50 per round (ms) | p50 median | p99 per round | "
       "spread max/min p50 | schedext CPU ms/req per round | minor faults/req | "
       "outside CPU % per round |"
    << (has_go ? " Go p50 per round | Go/schedext p50 |" : "") << "\n";
  o << "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|" << (has_go ? "---:|---:|" : "") << "\n";
  for (const auto& [profile, verb, nodes] : keys) {
    std::vector<double> p50, p99, cpu, flt, others, go50;
    for (const Run& r : runs) {
      if (r.condition != condition || r.profile != profile || r.verb != verb || r.nodes != nodes) {
        continue;
      }
      if (r.server == "schedext") {
        p50.push_back(r.p50);
        p99.push_back(r.p99);
        cpu.push_back(r.cpu_ms_per_req);
        flt.push_back(r.minflt_per_req);
        others.push_back(r.others_pct);
      } else {
        go50.push_back(r.p50);
      }
    }
    const double lo = p50.empty() ? 0 : *std::min_element(p50.begin(), p50.end());
    const double hi = p50.empty() ? 0 : *std::max_element(p50.begin(), p50.end());
    char spread[32];
    std::snprintf(spread, sizeof spread, "%.2f×", lo > 0 ? hi / lo : 0);
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.1f×", Median(p50) > 0 ? Median(go50) / Median(p50) : 0);
    std::vector<double> others_rounded;
    for (double v : others) others_rounded.push_back(std::round(v));
    std::string others_s;
    for (size_t i = 0; i < others_rounded.size(); ++i) {
      others_s += (i ? " / " : "") + std::to_string(static_cast<int>(others_rounded[i]));
    }
    o << "| " << profile << " | " << verb << " | " << nodes << " | " << Join(p50) << " | "
      << Ms(Median(p50)) << " | " << Join(p99) << " | " << spread << " | " << Join(cpu) << " | "
      << Ms(Median(flt)) << " | " << others_s << " |";
    if (has_go) o << " " << Join(go50) << " | " << ratio << " |";
    o << "\n";
  }
  return o.str();
}

// ---- Sanity of the replies -------------------------------------------------------

// Checks that a filter reply accounts for every node and a prioritize reply
// scores every node; a description for the summary, `ok` false otherwise.
std::string CheckReply(const std::string& verb, const std::string& reply, size_t nodes, bool& ok) {
  const nlohmann::json j = nlohmann::json::parse(reply, nullptr, false);
  if (j.is_discarded()) {
    ok = false;
    return "reply is not JSON: " + reply.substr(0, 200);
  }
  std::ostringstream o;
  if (verb == "prioritize") {
    const size_t n = j.is_array() ? j.size() : 0;
    ok = n == nodes;
    o << n << " scores";
    return o.str();
  }
  const size_t passing = j.contains("NodeNames") && j["NodeNames"].is_array()
                             ? j["NodeNames"].size()
                             : (j.contains("Nodes") && j["Nodes"].is_object()
                                    ? j["Nodes"].value("items", nlohmann::json::array()).size()
                                    : 0);
  std::map<std::string, size_t> reasons;
  size_t failed = 0;
  for (const char* key : {"FailedNodes", "FailedAndUnresolvableNodes"}) {
    if (j.contains(key) && j[key].is_object()) {
      for (const auto& [name, reason] : j[key].items()) {
        ++failed;
        ++reasons[reason.is_string() ? reason.get<std::string>() : reason.dump()];
      }
    }
  }
  const std::string error = j.value("Error", "");
  ok = error.empty() && passing + failed == nodes;
  o << passing << " pass, " << failed << " fail";
  for (const auto& [reason, count] : reasons) o << "; " << count << " \"" << reason << "\"";
  if (!error.empty()) o << "; Error: " << error;
  return o.str();
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseOptions(argc, argv, o)) {
    std::cerr << kUsage;
    return 2;
  }
  std::filesystem::create_directories(o.out);
  auto binaries = schedext::testing::FindControlPlaneBinaries();
  if (!binaries.ok()) {
    std::cerr << "schedext-prod-bench: " << binaries.status().message() << "\n";
    return schedext::testing::ControlPlaneRequired() ? 1 : 77;
  }
  std::ofstream runs_out(o.out + "/runs.txt", std::ios::trunc);
  std::ostringstream notes;  // the summary's header lines
  auto log = [&](const std::string& line) {
    std::cerr << "[prod-bench " << UtcNow().substr(11, 8) << "] " << line << "\n";
  };
  auto uptime = [&](const std::string& when) {
    const std::string line = when + ": " + UtcNow() + ", load average " + LoadAverage();
    log(line);
    notes << "* " << line << "\n";
  };
  uptime("start");

  // Nodes: the generator's, so the Go floor and full mode see the same ones.
  const size_t max_full = o.full.empty() ? 0 : *std::max_element(o.full.begin(), o.full.end());
  const schedext::bench::PayloadSet set(o.seed, std::max(o.nodes, max_full));
  std::vector<std::string> names;
  for (size_t i = 0; i < o.nodes; ++i) names.emplace_back(set.node_name(i));

  ControlPlaneOptions cpo;
  // No controller-manager or kubelet: admission's not-ready taint would stay
  // on every node.
  cpo.apiserver_flags = {"--disable-admission-plugins=TaintNodesByCondition"};
  cpo.start_timeout = std::chrono::seconds(120);
  // etcd and kube-apiserver inherit the mask of the thread that forks them.
  const CpuSplit split = o.cpu_split ? SplitCpus() : CpuSplit{};
  if (o.cpu_split && split.control.empty()) {
    log("--cpu-split: only one CPU, nothing split");
  }
  if (!PinThisThread(split.control)) {
    std::cerr << "schedext-prod-bench: sched_setaffinity: " << std::strerror(errno) << "\n";
    return 1;
  }
  ControlPlane cp(*binaries, cpo);
  if (auto s = cp.Start(); !s.ok()) {
    std::cerr << "schedext-prod-bench: control plane: " << s.message() << "\n";
    return 1;
  }
  // From here on this thread, the clients it starts and its children
  // (schedext, the Go floor) run on the serving side.
  if (!PinThisThread(split.serving)) {
    std::cerr << "schedext-prod-bench: sched_setaffinity: " << std::strerror(errno) << "\n";
    return 1;
  }
  if (!split.control.empty()) {
    const std::string l = "CPUs split (--cpu-split) for the names-mode rounds and time series: "
                          "etcd, kube-apiserver and the churn writers on CPU " +
                          CpuList(split.control) + "; schedext, the Go floor and the clients on CPU " +
                          CpuList(split.serving) + " (full mode: schedext, the Go floor and the "
                          "client on every CPU, as its decode uses two threads)";
    log(l);
    notes << "* " << l << "\n";
  }
  const auto t_create = Clock::now();
  {
    std::vector<std::pair<std::string, std::string>> objects;
    for (size_t i = 0; i < o.nodes; ++i)
      objects.emplace_back("/api/v1/nodes", NodeObject(set.node_json(i)));
    if (std::string e = CreateAll(cp, objects, o.create_threads); !e.empty()) {
      std::cerr << "schedext-prod-bench: creating nodes: " << e << "\n";
      return 1;
    }
    objects.clear();
    const size_t pods = o.nodes * o.pods_per_node;
    for (size_t i = 0; i < pods; ++i) {
      objects.emplace_back("/api/v1/namespaces/default/pods",
                           PodObject("bench-" + std::to_string(i), names[i % o.nodes], i));
    }
    if (std::string e = CreateAll(cp, objects, o.create_threads); !e.empty()) {
      std::cerr << "schedext-prod-bench: creating pods: " << e << "\n";
      return 1;
    }
  }
  const double create_s = std::chrono::duration<double>(Clock::now() - t_create).count();
  {
    std::ostringstream l;
    l << o.nodes << " nodes (" << set.Stats(o.nodes).median_bytes << " B median, +4 GPUs each) and "
      << o.nodes * o.pods_per_node << " pods created through kube-apiserver ("
      << cp.api_server_version() << ") in " << Ms(create_s) << " s";
    log(l.str());
    notes << "* " << l.str() << "\n";
  }

  // schedext through its kubeconfig, and the Go floor.
  // --log-level info for the one line that names the port (requests are
  // logged at debug only).
  pid_t sx = SpawnChild({o.schedext, "--config", o.config, "--listen", "127.0.0.1:0", "--log-level",
                         "info", "--kubeconfig", cp.schedext_kubeconfig()},
                        o.out + "/schedext.log");
  const auto t_sync = Clock::now();
  const int port = WaitListeningPort(sx, o.out + "/schedext.log",
                                     "listening on 127.0.0.1:", std::chrono::seconds(120));
  bool ready = false;
  while (port > 0 && Clock::now() - t_sync < std::chrono::seconds(600) && Running(sx)) {
    if (Get(port, "/readyz") == 200) {
      ready = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!ready) {
    std::cerr << "schedext-prod-bench: schedext not ready (log: " << o.out << "/schedext.log)\n";
    StopChild(sx, std::chrono::seconds(10));
    return 1;
  }
  {
    const std::string l = "schedext ready (/readyz 200, informers synced) " +
                          Ms(std::chrono::duration<double>(Clock::now() - t_sync).count()) +
                          " s after start, RSS " + std::to_string(SampleProcess(sx).rss_kb / 1024) +
                          " MiB, pid " + std::to_string(sx);
    log(l);
    notes << "* " << l << "\n";
    std::ofstream(o.out + "/schedext.pid") << sx << "\n";
  }
  pid_t go = -1;
  int go_port = -1;
  if (!o.go_baseline.empty()) {
    const std::string dir_file = o.out + "/go-directory.json";
    {
      std::ofstream f(dir_file, std::ios::binary | std::ios::trunc);
      f << set.Body(o.nodes, schedext::bench::Mode::kFull, schedext::bench::Verb::kFilter);
    }
    go = SpawnChild({o.go_baseline, "--listen", "127.0.0.1:0", "--directory", dir_file},
                    o.out + "/go-baseline.log");
    go_port = WaitListeningPort(go, o.out + "/go-baseline.log",
                                "listening on 127.0.0.1:", std::chrono::seconds(120));
    if (go_port <= 0 || Get(go_port, "/healthz") != 200) {
      std::cerr << "schedext-prod-bench: go-baseline not up (" << o.out << "/go-baseline.log)\n";
      StopChild(go, std::chrono::seconds(5));
      StopChild(sx, std::chrono::seconds(10));
      return 1;
    }
  }

  // Bodies: the generator's pending pod; GPU profiles get a pod that asks for
  // 4 GiB of GPU memory in its app container's limits.
  const std::string names_body =
      set.Body(o.nodes, schedext::bench::Mode::kNames, schedext::bench::Verb::kFilter);
  const std::string gpu_body = schedext::bench::GpuNamesBody(names_body);
  if (gpu_body.empty()) {
    std::cerr << "schedext-prod-bench: the generator's pod changed shape; no GPU request\n";
    return 1;
  }
  auto body_of = [&](const std::string& profile) -> const std::string& {
    return std::find(o.gpu_profiles.begin(), o.gpu_profiles.end(), profile) != o.gpu_profiles.end()
               ? gpu_body
               : names_body;
  };

  bool failed = false;
  // Sanity: every profile answers for every node, once, before measuring.
  std::ostringstream sanity;
  for (const std::string& profile : o.profiles) {
    for (const std::string verb : {"filter", "prioritize"}) {
      Conn c(port);
      int status = 0;
      std::string reply;
      const bool sent = c.Exchange(PostRequest(port, "/" + profile + "/" + verb, body_of(profile)),
                                   status, reply);
      bool ok = sent && status == 200;
      const std::string what = sent ? CheckReply(verb, reply, o.nodes, ok) : "no reply";
      sanity << "* `/" << profile << "/" << verb << "`: " << (ok ? "" : "**FAILED** ") << what
             << (status != 200 ? " (status " + std::to_string(status) + ")" : "") << "\n";
      if (!ok) failed = true;
    }
  }
  log("sanity:\n" + sanity.str());

  std::vector<Run> runs;
  std::vector<std::string> variant_names;
  auto record = [&](Run r, const std::string& condition, int round, const std::string& profile,
                    const std::string& verb, const std::string& server, size_t n) {
    r.condition = condition;
    r.round = round;
    r.profile = profile;
    r.verb = verb;
    r.server = server;
    r.nodes = n;
    runs_out << RunLine(r) << std::endl;
    if (r.errors > 0) {
      failed = true;
      log("errors in " + RunLine(r) + ": " + r.first_error);
    }
    runs.push_back(std::move(r));
  };

  Churn churn(cp, names, o.nodes * o.pods_per_node, o.churn_rate, split.control);
  std::ostringstream churn_note;
  for (const std::string condition : {"idle", "churn"}) {
    if (condition == "churn") {
      if (o.churn_rate <= 0) break;
      churn.Start();
      std::this_thread::sleep_for(std::chrono::seconds(o.smoke ? 1 : 3));
    }
    uptime(condition + " rounds begin");
    for (int round = 1; round <= o.rounds; ++round) {
      for (const std::string& profile : o.profiles) {
        for (const std::string verb : {"filter", "prioritize"}) {
          const std::string path = "/" + profile + "/" + verb;
          const std::string& body = body_of(profile);
          const std::string sreq = PostRequest(port, path, body);
          auto run_schedext = [&] {
            WaitQuiet(go);
            record(Measure(port, sx, sreq, 3, o.requests, 30), condition, round, profile, verb,
                   "schedext", o.nodes);
          };
          auto run_go = [&] {
            if (go < 0) return;
            WaitQuiet(sx);
            record(
                Measure(go_port, go, PostRequest(go_port, "/" + verb, body), 2, o.go_requests, 30),
                condition, round, profile, verb, "go", o.nodes);
          };
          if (round % 2 == 1) {
            run_schedext();
            run_go();
          } else {
            run_go();
            run_schedext();
          }
        }
      }
      log(condition + " round " + std::to_string(round) + " done");
    }
    if (condition == "churn") {
      churn.Stop();
      std::ostringstream c;
      c << churn.writes() << " writes in " << Ms(churn.seconds()) << " s ("
        << Ms(static_cast<double>(churn.writes()) / std::max(churn.seconds(), 1e-9))
        << "/s: node heartbeats, pod label patches, bound pods created and deleted), "
        << churn.errors() << " errors" << (churn.errors() ? " (" + churn.first_error() + ")" : "");
      churn_note << c.str();
      log("churn: " + c.str());
      if (churn.errors() > 0 && o.smoke) failed = true;
    }
    uptime(condition + " rounds end");
  }

  // Full mode: the nodes in the body (default profile; the cache still
  // supplies usage for the nodes it knows).
  std::vector<int> every_cpu = split.serving;
  every_cpu.insert(every_cpu.end(), split.control.begin(), split.control.end());
  for (const pid_t pid : {sx, go, pid_t{0}}) PinProcess(pid, every_cpu);
  for (size_t n : o.full) {
    const std::string fbody =
        set.Body(n, schedext::bench::Mode::kFull, schedext::bench::Verb::kFilter);
    for (const std::string verb : {"filter", "prioritize"}) {
      if (n > 5000 && verb == std::string("prioritize")) continue;
      const std::string profile = o.profiles.empty() ? "default" : o.profiles.front();
      const FullRequests counts = FullRequestsFor(o, n);
      const int sreqs = counts.schedext;
      const int greqs = counts.go;
      if (o.smoke) {
        Conn c(port);
        int status = 0;
        std::string reply;
        bool ok = c.Exchange(PostRequest(port, "/" + profile + "/" + verb, fbody), status, reply) &&
                  status == 200;
        const std::string what = CheckReply(verb, reply, n, ok);
        sanity << "* full `/" << profile << "/" << verb << "` " << n
               << " nodes: " << (ok ? "" : "**FAILED** ") << what << "\n";
        if (!ok) failed = true;
      }
      for (int round = 1; round <= o.rounds; ++round) {
        auto run_schedext = [&] {
          WaitQuiet(go);
          record(Measure(port, sx, PostRequest(port, "/" + profile + "/" + verb, fbody), 1, sreqs,
                         120),
                 "full", round, profile, verb, "schedext", n);
        };
        auto run_go = [&] {
          if (go < 0) return;
          WaitQuiet(sx);
          record(Measure(go_port, go, PostRequest(go_port, "/" + verb, fbody), 1, greqs, 120),
                 "full", round, profile, verb, "go", n);
        };
        if (round % 2 == 1) {
          run_schedext();
          run_go();
        } else {
          run_go();
          run_schedext();
        }
      }
    }
    log("full mode " + std::to_string(n) + " done");
  }
  uptime("full mode end");
  for (const pid_t pid : {sx, go, pid_t{0}}) PinProcess(pid, split.serving);

  // Variants: other configurations of the same binary, on the same cache
  // contents, alternating with the main one (order rotating per round).
  if (!o.variants.empty()) {
    struct Server {
      std::string name;
      int port;
      pid_t pid;
    };
    std::vector<Server> servers = {{"main", port, sx}};
    for (const auto& [name, spec] : o.variants) {
      const std::string vlog = o.out + "/schedext-" + name + ".log";
      const size_t at = spec.find('@');
      const std::string file = spec.substr(0, at);
      const std::string binary = at == std::string::npos ? o.schedext : spec.substr(at + 1);
      pid_t vpid = SpawnChild({binary, "--config", file, "--listen", "127.0.0.1:0",
                               "--log-level", "info", "--kubeconfig", cp.schedext_kubeconfig()},
                              vlog);
      const int vport =
          WaitListeningPort(vpid, vlog, "listening on 127.0.0.1:", std::chrono::seconds(120));
      const auto t0 = Clock::now();
      while (vport > 0 && Clock::now() - t0 < std::chrono::seconds(600) && Running(vpid) &&
             Get(vport, "/readyz") != 200) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (vport <= 0 || Get(vport, "/readyz") != 200) {
        log("variant " + name + " not ready; skipped");
        StopChild(vpid, std::chrono::seconds(10));
        continue;
      }
      servers.push_back({name, vport, vpid});
    }
    uptime("variant rounds begin");
    for (int round = 1; round <= o.rounds; ++round) {
      for (const std::string& profile : o.trace_profiles) {
        for (const std::string verb : {"filter", "prioritize"}) {
          for (size_t k = 0; k < servers.size(); ++k) {
            const Server& v = servers[(k + static_cast<size_t>(round)) % servers.size()];
            for (const Server& other : servers) {
              if (other.pid != v.pid) WaitQuiet(other.pid);
            }
            record(Measure(v.port, v.pid,
                           PostRequest(v.port, "/" + profile + "/" + verb, body_of(profile)), 3,
                           o.requests, 30),
                   "variant:" + v.name, round, profile, verb, "schedext", o.nodes);
          }
        }
      }
    }
    uptime("variant rounds end");
    for (size_t k = 1; k < servers.size(); ++k) StopChild(servers[k].pid, std::chrono::seconds(30));
    variant_names.push_back("main");
    for (size_t k = 1; k < servers.size(); ++k) variant_names.push_back(servers[k].name);
  }

  // Part 3: time series of one profile's filter, idle and under churn.
  std::ostringstream traces;
  for (const std::string& profile : o.trace_profiles) {
    if (o.trace_seconds <= 0) break;
    for (const std::string condition : {"idle", "churn"}) {
      if (condition == std::string("churn")) {
        if (o.churn_rate <= 0) break;
        churn.Start();
      }
      const std::string file = o.out + "/trace-" + profile + "-" + condition + ".txt";
      std::ofstream tf(file, std::ios::trunc);
      Conn c(port);
      const std::string req = PostRequest(port, "/" + profile + "/filter", body_of(profile));
      int status = 0;
      std::string reply;
      for (int i = 0; i < 3; ++i) c.Exchange(req, status, reply);
      const auto start = Clock::now();
      const auto end =
          start + std::chrono::microseconds(static_cast<int64_t>(o.trace_seconds * 1e6));
      std::vector<double> window_p50s, window_cpus;
      while (Clock::now() < end) {
        const auto wend =
            Clock::now() + std::chrono::microseconds(static_cast<int64_t>(o.trace_window_s * 1e6));
        const ProcSample p0 = SampleProcess(sx);
        const MachineSample m0 = SampleMachine();
        const double family0 = FamilyCpu();
        std::vector<double> lat;
        while (Clock::now() < wend) {
          const auto t0 = Clock::now();
          c.Exchange(req, status, reply);
          lat.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        }
        const double family1 = FamilyCpu();
        const MachineSample m1 = SampleMachine();
        const ProcSample p1 = SampleProcess(sx);
        std::sort(lat.begin(), lat.end());
        const double n = std::max<double>(1, static_cast<double>(lat.size()));
        const double total = std::max(m1.total_s - m0.total_s, 1e-9);
        char line[512];
        std::snprintf(
            line, sizeof line,
            "t_s=%.1f requests=%zu p50_ms=%.3f max_ms=%.3f cpu_ms_per_req=%.3f "
            "minflt_per_req=%.1f vcsw_per_req=%.2f ivcsw_per_req=%.2f machine_busy_pct=%.0f "
            "steal_pct=%.1f others_pct=%.0f rss_mib=%.0f",
            std::chrono::duration<double>(Clock::now() - start).count(), lat.size(),
            Percentile(lat, 50), lat.empty() ? 0 : lat.back(), (p1.cpu_s - p0.cpu_s) * 1000 / n,
            static_cast<double>(p1.minflt - p0.minflt) / n,
            static_cast<double>(p1.vcsw - p0.vcsw) / n,
            static_cast<double>(p1.ivcsw - p0.ivcsw) / n, 100 * (m1.busy_s - m0.busy_s) / total,
            100 * (m1.steal_s - m0.steal_s) / total,
            std::max(0.0, 100 * ((m1.busy_s - m0.busy_s) - (family1 - family0)) / total),
            static_cast<double>(p1.rss_kb) / 1024.0);
        tf << line << "\n";
        window_p50s.push_back(Percentile(lat, 50));
        window_cpus.push_back((p1.cpu_s - p0.cpu_s) * 1000 / n);
      }
      if (condition == std::string("churn")) churn.Stop();
      std::vector<double> sorted = window_p50s;
      std::sort(sorted.begin(), sorted.end());
      std::vector<double> cs = window_cpus;
      std::sort(cs.begin(), cs.end());
      traces << "| " << profile << " | " << condition << " | " << window_p50s.size() << " | "
             << Ms(sorted.front()) << " / " << Ms(Median(sorted)) << " / " << Ms(sorted.back())
             << " | " << Ms(cs.front()) << " / " << Ms(Median(cs)) << " / " << Ms(cs.back())
             << " | `" << std::filesystem::path(file).filename().string() << "` |\n";
      log("trace " + profile + " " + condition + " written to " + file);
    }
  }

  uptime("end");
  const int sx_status = StopChild(sx, std::chrono::seconds(30));
  if (go > 0) StopChild(go, std::chrono::seconds(5));
  if (!(sx_status >= 0 && WIFEXITED(sx_status) && WEXITSTATUS(sx_status) == 0)) {
    log("schedext did not exit 0 on SIGTERM (status " + std::to_string(sx_status) + ")");
    failed = true;
  }
  cp.Stop();

  std::ofstream md(o.out + "/summary.md", std::ios::trunc);
  md << "Production path: " << o.nodes << " nodes and " << o.nodes * o.pods_per_node
     << " pods in a real kube-apiserver, schedext's cache filled through `--kubeconfig`; "
     << o.rounds << " alternating rounds, " << o.requests << " schedext / " << o.go_requests
     << " Go requests per run on one keep-alive connection (full mode: "
     << FullRequestsFor(o, 5000).schedext << " schedext / " << FullRequestsFor(o, 5000).go
     << " Go up to 5,000 nodes, " << FullRequestsFor(o, 5001).schedext << " / "
     << FullRequestsFor(o, 5001).go << " above).\n\n"
     << notes.str() << "\n";
  md << "Replies checked before measuring:\n\n" << sanity.str() << "\n";
  md << "#### Names mode, idle\n\n"
     << Table(runs, "idle", go > 0 || !o.go_baseline.empty()) << "\n";
  if (o.churn_rate > 0) {
    md << "#### Names mode, under watch churn (" << churn_note.str() << ")\n\n"
       << Table(runs, "churn", !o.go_baseline.empty()) << "\n";
  }
  if (!o.full.empty()) {
    md << "#### Full mode (nodes in the body, profile " << o.profiles.front() << ")\n\n"
       << Table(runs, "full", !o.go_baseline.empty()) << "\n";
  }
  for (const std::string& name : variant_names) {
    md << "#### Variant `" << name << "` (idle, "
       << (name == "main" ? o.config : [&] {
            for (const auto& [n, f] : o.variants) {
              if (n == name) return f;
            }
            return std::string();
          }())
       << "), rounds alternating with the other variants\n\n"
       << Table(runs, "variant:" + name, false) << "\n";
  }
  if (!traces.str().empty()) {
    md << "#### Time series (" << o.trace_seconds << " s of back-to-back filters per row, "
       << o.trace_window_s << " s windows)\n\n"
       << "| profile | condition | windows | p50 per window min / median / max (ms) | "
          "CPU ms/req per window min / median / max | file |\n|---|---|---:|---:|---:|---|\n"
       << traces.str() << "\n";
  }
  md.close();
  std::cout << ReadWhole(o.out + "/summary.md");
  return failed ? 1 : 0;
}
