#include "prod_bench/measure.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <sstream>
#include <system_error>
#include <thread>

#include "common/stats.h"
#include "prod_bench/processes.h"

namespace schedext::bench::prod {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

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

bool WaitQuiet(pid_t pid, std::chrono::milliseconds quiet, std::chrono::milliseconds limit) {
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
  run.p50 = Percentile(lat, 0.5);
  run.p90 = Percentile(lat, 0.9);
  run.p99 = Percentile(lat, 0.99);
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

Trace TraceRequests(int port, pid_t pid, const std::string& request, double seconds,
                    double window_s, std::ostream& out) {
  Conn c(port);
  int status = 0;
  std::string reply;
  for (int i = 0; i < 3; ++i) c.Exchange(request, status, reply);
  const auto start = Clock::now();
  const auto end =
      start + std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
  Trace trace;
  while (Clock::now() < end) {
    const auto wend =
        Clock::now() + std::chrono::microseconds(static_cast<int64_t>(window_s * 1e6));
    const ProcSample p0 = SampleProcess(pid);
    const MachineSample m0 = SampleMachine();
    const double family0 = FamilyCpu();
    std::vector<double> lat;
    while (Clock::now() < wend) {
      const auto t0 = Clock::now();
      c.Exchange(request, status, reply);
      lat.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    const double family1 = FamilyCpu();
    const MachineSample m1 = SampleMachine();
    const ProcSample p1 = SampleProcess(pid);
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
        Percentile(lat, 0.5), lat.empty() ? 0 : lat.back(), (p1.cpu_s - p0.cpu_s) * 1000 / n,
        static_cast<double>(p1.minflt - p0.minflt) / n,
        static_cast<double>(p1.vcsw - p0.vcsw) / n,
        static_cast<double>(p1.ivcsw - p0.ivcsw) / n, 100 * (m1.busy_s - m0.busy_s) / total,
        100 * (m1.steal_s - m0.steal_s) / total,
        std::max(0.0, 100 * ((m1.busy_s - m0.busy_s) - (family1 - family0)) / total),
        static_cast<double>(p1.rss_kb) / 1024.0);
    out << line << "\n";
    trace.window_p50s.push_back(Percentile(lat, 0.5));
    trace.window_cpus.push_back((p1.cpu_s - p0.cpu_s) * 1000 / n);
  }
  return trace;
}

}  // namespace schedext::bench::prod
