// What schedext-prod-bench measures: kube-scheduler-like requests on one
// keep-alive connection, their latencies, and the servers' and the machine's
// /proc counters around them, so that a slow round can be told apart from a
// busy machine. Called from the driver's thread (prod_bench.cc).
#ifndef SCHEDEXT_BENCH_PROD_BENCH_MEASURE_H_
#define SCHEDEXT_BENCH_PROD_BENCH_MEASURE_H_

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "support/http_client.h"

namespace schedext::bench::prod {

struct ProcSample {
  double cpu_s = 0;  // utime + stime, all threads
  uint64_t minflt = 0;
  uint64_t majflt = 0;
  uint64_t vcsw = 0;  // voluntary context switches, summed over threads
  uint64_t ivcsw = 0;
  uint64_t rss_kb = 0;
};

// The counters of process `pid` (all zero for pid <= 0).
ProcSample SampleProcess(pid_t pid);

// Waits (at most `limit`) until process `pid` has been nearly idle (under 1 %
// of a CPU) for `quiet`; false when it never was. The servers take turns, and
// what one does after its run (the Go floor's garbage collector and scavenger
// sweeping the garbage of 60 decoded 5,000-name bodies) must not share a CPU
// with the other's run: with --cpu-split both sit on the same one, and before
// this wait those slices (up to 10 ms, `perf record -e sched:sched_switch`)
// were where schedext's p99 of 3-5 ms came from. Nothing when pid <= 0.
bool WaitQuiet(pid_t pid, std::chrono::milliseconds quiet = std::chrono::milliseconds(20),
               std::chrono::milliseconds limit = std::chrono::milliseconds(2000));

// The machine's CPU time from /proc/stat, in seconds summed over CPUs.
struct MachineSample {
  double busy_s = 0;
  double steal_s = 0;
  double total_s = 0;
};
MachineSample SampleMachine();

// CPU seconds (ticks) of this process and its direct children: the servers,
// etcd and kube-apiserver. The machine's busy time minus this is what the
// neighbours used.
double FamilyCpu();

// /proc/loadavg's three averages, "0.52 0.58 0.59".
std::string LoadAverage();
// "2026-12-06 14:00:00 UTC" and "2026-12-06T14:00:00Z".
std::string UtcNow();
std::string Rfc3339Now();

// One keep-alive connection to 127.0.0.1:port; each request in one write on a
// TCP_NODELAY socket, as Go's transport sends them (support/http_client.h).
using Conn = schedext::bench::LoopbackConnection;

// A POST of `body` to `path` as kube-scheduler v1.26 sends it.
std::string PostRequest(int port, const std::string& path, const std::string& body);

// GET on a fresh connection; the status, or -1.
int Get(int port, const std::string& path);

// One measured run: latencies in ms and the counters of the server `pid`.
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

// `requests` sequential requests (after `warmup`), bounded by `seconds`.
Run Measure(int port, pid_t pid, const std::string& request, int warmup, int requests,
            double seconds);

// `r` as one key=value line of runs.txt.
std::string RunLine(const Run& r);

// A time series of back-to-back `request`s for `seconds`, cut into windows of
// `window_s`: one key=value line per window to `out`, and each window's p50
// latency and CPU per request (ms).
struct Trace {
  std::vector<double> window_p50s;
  std::vector<double> window_cpus;
};
Trace TraceRequests(int port, pid_t pid, const std::string& request, double seconds,
                    double window_s, std::ostream& out);

}  // namespace schedext::bench::prod

#endif  // SCHEDEXT_BENCH_PROD_BENCH_MEASURE_H_
