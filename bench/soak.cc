// schedext-soak: a bounded soak of a real schedext process on loopback. It
// starts the binary on a free loopback port, then for --seconds runs at once:
//
// * --connections keep-alive clients, paced to --rate requests/s in total, each
//   cycling through a mix of verbs and probes: POST /filter and /prioritize
//   (full mode, the kube-scheduler 1.26 recordings given by --testdata), GET
//   /healthz, GET /metrics;
// * --idle connections that never send a byte (reopened when the server cuts
//   them at its header deadline);
// * --slowloris connections sending a header byte a second (reopened likewise);
// * a header flood every --flood-every seconds: 256 KiB of header bytes, which
//   must get 431.
//
// Every --interval seconds it prints a row: the server's RSS and open file
// descriptors (/proc/PID), p50/p99 of /healthz and of the filter over the
// interval, requests and errors of the keep-alive clients, the abusive
// clients' counts, the machine's 1-minute load average. At the end it sends
// SIGTERM, waits (bounded) for the exit and prints the exit status. It stops by
// itself; the server is killed by PID if it does not exit within 30 s.
//
//   schedext-soak --schedext build/x/src/schedext
//                 --testdata test/testdata/kube-scheduler-1.26/nodecache-false
//                 [--seconds 600] [--interval 60] [--connections 8] [--rate 800]
//                 [--idle 60] [--slowloris 30] [--flood-every 5]
//
// Exit status 0 when no keep-alive request failed, every flood got 431 and the
// server exited 0 on SIGTERM.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/stats.h"
#include "support/http_client.h"

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct Options {
  std::string schedext;
  std::string config;
  std::string testdata;
  double seconds = 600;
  double interval = 60;
  int connections = 8;
  double rate = 800;
  int idle = 60;
  int slowloris = 30;
  double flood_every = 5;
};

constexpr std::string_view kUsage =
    "usage: schedext-soak --schedext BIN --testdata DIR [--config FILE] [--seconds S]\n"
    "                     [--interval S] [--connections N] [--rate REQ_PER_S] [--idle N]\n"
    "                     [--slowloris N] [--flood-every S]\n";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A free loopback port, found by binding port 0 (the server binds it right
// after; a collision makes the start fail and is retried).
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

// The soak's own client connections give up on a hung server after 30 s.
int Connect(int port) { return schedext::bench::ConnectLoopback("127.0.0.1", port, 30); }

using schedext::bench::CarriesError;
using schedext::bench::SendAll;

std::string Request(std::string_view method, std::string_view path, std::string_view body) {
  std::string r;
  r.append(method).append(" ").append(path).append(" HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  r.append("User-Agent: schedext-soak\r\nAccept-Encoding: gzip\r\n");
  if (!body.empty()) {
    r.append("Content-Type: application/json\r\nContent-Length: ")
        .append(std::to_string(body.size()))
        .append("\r\n");
  }
  r.append("\r\n").append(body);
  return r;
}

// Latencies (ms) of one kind of request over the current interval.
class Samples {
 public:
  void Add(double ms) {
    std::lock_guard<std::mutex> lock(mu_);
    ms_.push_back(ms);
  }
  // p50 and p99 of the interval, then a fresh interval.
  std::pair<double, double> TakePercentiles() {
    std::vector<double> v;
    {
      std::lock_guard<std::mutex> lock(mu_);
      v.swap(ms_);
    }
    if (v.empty()) return {0, 0};
    std::sort(v.begin(), v.end());
    return {schedext::Percentile(v, 0.50), schedext::Percentile(v, 0.99)};
  }

 private:
  std::mutex mu_;
  std::vector<double> ms_;
};

struct Counters {
  std::atomic<long> requests{0};
  std::atomic<long> errors{0};
  std::atomic<long> idle_cut{0};       // idle connections the server closed
  std::atomic<long> slowloris_cut{0};  // slowloris connections the server closed
  std::atomic<long> floods{0};
  std::atomic<long> floods_431{0};
  std::atomic<long> connect_failures{0};
};

long StatusField(pid_t pid, std::string_view field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, field.size(), field) == 0) {
      return std::atol(line.c_str() + field.size());
    }
  }
  return -1;
}

long OpenFds(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return -1;
  long n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n;
}

double LoadAverage() {
  std::ifstream in("/proc/loadavg");
  double one = 0;
  in >> one;
  return one;
}

// Connections that are opened and then left to the server: `send_byte`
// decides what each sends per tick (nothing for idle ones). A connection the
// server closes is counted and reopened.
void HoldConnections(int port, int count, bool slowloris, const std::atomic<bool>& stop,
                     std::atomic<long>& cut, std::atomic<long>& connect_failures) {
  std::vector<int> fds(static_cast<size_t>(count), -1);
  auto open = [&](int& fd) {
    fd = Connect(port);
    if (fd < 0) {
      connect_failures.fetch_add(1);
      return;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    if (slowloris) {
      SendAll(fd, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
    }
  };
  for (int& fd : fds) open(fd);
  auto next_tick = Clock::now();
  while (!stop.load()) {
    std::vector<pollfd> p;
    for (int fd : fds) p.push_back(pollfd{fd, POLLIN, 0});
    poll(p.data(), p.size(), 200);
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i] >= 0 && (p[i].revents & (POLLIN | POLLHUP | POLLERR))) {
        char drop[4096];
        const ssize_t n = recv(fds[i], drop, sizeof drop, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN)) {
          close(fds[i]);
          cut.fetch_add(1);
          open(fds[i]);
        }
      } else if (fds[i] < 0) {
        open(fds[i]);
      }
    }
    if (slowloris && Clock::now() >= next_tick) {
      next_tick += std::chrono::seconds(1);
      for (int fd : fds) {
        if (fd >= 0) send(fd, "a", 1, MSG_NOSIGNAL);
      }
    }
  }
  for (int fd : fds) {
    if (fd >= 0) close(fd);
  }
}

bool WaitHealthy(int port, pid_t pid, std::chrono::seconds bound) {
  const auto deadline = Clock::now() + bound;
  while (Clock::now() < deadline) {
    int wstatus = 0;
    if (waitpid(pid, &wstatus, WNOHANG) == pid) return false;
    const int fd = Connect(port);
    if (fd >= 0) {
      schedext::bench::ReplyReader reader;
      std::string body;
      int status = 0;
      const bool ok = SendAll(fd, Request("GET", "/healthz", "")) &&
                      reader.Read(fd, status, body) && status == 200;
      close(fd);
      if (ok) return true;
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--schedext")
      o.schedext = value;
    else if (flag == "--config")
      o.config = value;
    else if (flag == "--testdata")
      o.testdata = value;
    else if (flag == "--seconds")
      o.seconds = std::atof(value.c_str());
    else if (flag == "--interval")
      o.interval = std::atof(value.c_str());
    else if (flag == "--connections")
      o.connections = std::max(1, std::atoi(value.c_str()));
    else if (flag == "--rate")
      o.rate = std::max(1.0, std::atof(value.c_str()));
    else if (flag == "--idle")
      o.idle = std::max(0, std::atoi(value.c_str()));
    else if (flag == "--slowloris")
      o.slowloris = std::max(0, std::atoi(value.c_str()));
    else if (flag == "--flood-every")
      o.flood_every = std::max(0.5, std::atof(value.c_str()));
    else {
      std::fprintf(stderr, "schedext-soak: unknown flag %s\n%s", argv[i], kUsage.data());
      return 2;
    }
  }
  if (argc % 2 == 0 || o.schedext.empty() || o.testdata.empty()) {
    std::fprintf(stderr, "%s", kUsage.data());
    return 2;
  }
  const std::string filter = ReadFile(o.testdata + "/filter-3.json");
  const std::string prioritize = ReadFile(o.testdata + "/prioritize-1.json");
  if (filter.empty() || prioritize.empty()) {
    std::fprintf(stderr, "schedext-soak: no filter-3.json / prioritize-1.json in %s\n",
                 o.testdata.c_str());
    return 2;
  }

  // ---- Start the server ----------------------------------------------------
  int port = -1;
  pid_t pid = -1;
  for (int attempt = 0; attempt < 3 && pid < 0; ++attempt) {
    port = FreePort();
    const std::string listen = "127.0.0.1:" + std::to_string(port);
    const pid_t child = fork();
    if (child == 0) {
      std::vector<const char*> args = {o.schedext.c_str(), "--listen", listen.c_str(),
                                       "--log-level", "error"};
      if (!o.config.empty()) {
        args.push_back("--config");
        args.push_back(o.config.c_str());
      }
      args.push_back(nullptr);
      execv(o.schedext.c_str(), const_cast<char* const*>(args.data()));
      _exit(127);
    }
    if (WaitHealthy(port, child, std::chrono::seconds(30))) {
      pid = child;
    } else {
      kill(child, SIGKILL);
      waitpid(child, nullptr, 0);
    }
  }
  if (pid < 0) {
    std::fprintf(stderr, "schedext-soak: %s did not become healthy\n", o.schedext.c_str());
    return 1;
  }
  std::printf(
      "schedext pid %d on 127.0.0.1:%d; %.0f s, %d keep-alive connections at %.0f req/s, "
      "%d idle, %d slowloris, a 256 KiB header flood every %.1f s\n",
      static_cast<int>(pid), port, o.seconds, o.connections, o.rate, o.idle, o.slowloris,
      o.flood_every);

  // ---- Load ------------------------------------------------------------------
  Counters counters;
  Samples healthz_ms, filter_ms;
  std::atomic<bool> stop{false};
  std::mutex error_mu;
  std::string first_error;
  const std::string requests[] = {
      Request("POST", "/filter", filter), Request("POST", "/prioritize", prioritize),
      Request("GET", "/healthz", ""),     Request("POST", "/filter", filter),
      Request("GET", "/healthz", ""),     Request("GET", "/metrics", ""),
  };
  const auto per_connection = std::chrono::duration<double>(o.connections / o.rate);

  std::vector<std::thread> threads;
  for (int c = 0; c < o.connections; ++c) {
    threads.emplace_back([&, c] {
      int fd = -1;
      schedext::bench::ReplyReader reader;
      std::string body;
      size_t next = static_cast<size_t>(c);
      auto due = Clock::now();
      while (!stop.load()) {
        std::this_thread::sleep_until(due);
        due += std::chrono::duration_cast<Clock::duration>(per_connection);
        if (due < Clock::now()) due = Clock::now();  // behind: no burst to catch up
        const size_t kind = next++ % std::size(requests);
        if (fd < 0) {
          fd = Connect(port);
          reader.Reset();
        }
        const auto t0 = Clock::now();
        int status = 0;
        const bool ok = fd >= 0 && SendAll(fd, requests[kind]) && reader.Read(fd, status, body);
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        counters.requests.fetch_add(1);
        const bool verb = kind == 0 || kind == 1 || kind == 3;
        if (!ok || status != 200 || (verb && CarriesError(body))) {
          counters.errors.fetch_add(1);
          std::lock_guard<std::mutex> lock(error_mu);
          if (first_error.empty()) {
            first_error = !ok ? "connection failed or reply unreadable"
                              : "status " + std::to_string(status) + ": " + body.substr(0, 200);
          }
        }
        if (!ok && fd >= 0) {
          close(fd);
          fd = -1;
        }
        if (ok && (kind == 0 || kind == 3)) filter_ms.Add(ms);
        if (ok && (kind == 2 || kind == 4)) healthz_ms.Add(ms);
      }
      if (fd >= 0) close(fd);
    });
  }
  threads.emplace_back([&] {
    HoldConnections(port, o.idle, false, stop, counters.idle_cut, counters.connect_failures);
  });
  threads.emplace_back([&] {
    HoldConnections(port, o.slowloris, true, stop, counters.slowloris_cut,
                    counters.connect_failures);
  });
  threads.emplace_back([&] {
    const std::string flood = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Flood: " +
                              std::string(size_t{256} << 10, 'f');
    auto due = Clock::now();
    while (!stop.load()) {
      std::this_thread::sleep_until(due);
      due +=
          std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.flood_every));
      const int fd = Connect(port);
      if (fd < 0) {
        counters.connect_failures.fetch_add(1);
        continue;
      }
      SendAll(fd, flood);  // may stop early: the server refuses at its limit
      schedext::bench::ReplyReader reader;
      std::string body;
      int status = 0;
      counters.floods.fetch_add(1);
      if (reader.Read(fd, status, body) && status == 431) counters.floods_431.fetch_add(1);
      close(fd);
    }
  });

  // ---- Samples -----------------------------------------------------------------
  std::printf(
      "| min | RSS MiB | fds | healthz p50 / p99 ms | filter p50 / p99 ms | requests | "
      "errors | idle cut | slowloris cut | floods 431/sent | load avg |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::fflush(stdout);
  const auto start = Clock::now();
  const auto end =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));
  long last_requests = 0, last_errors = 0;
  auto next_sample = start;
  bool server_died = false;
  while (Clock::now() < end && !server_died) {
    next_sample +=
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.interval));
    while (Clock::now() < std::min(next_sample, end)) {
      std::this_thread::sleep_for(milliseconds(200));
      if (waitpid(pid, nullptr, WNOHANG) == pid) {
        server_died = true;
        break;
      }
    }
    const auto [h50, h99] = healthz_ms.TakePercentiles();
    const auto [f50, f99] = filter_ms.TakePercentiles();
    const long req = counters.requests.load(), err = counters.errors.load();
    std::printf(
        "| %.1f | %.1f | %ld | %.3f / %.3f | %.3f / %.3f | %ld | %ld | %ld | %ld | "
        "%ld/%ld | %.1f |\n",
        std::chrono::duration<double>(Clock::now() - start).count() / 60.0,
        static_cast<double>(StatusField(pid, "VmRSS:")) / 1024.0, OpenFds(pid), h50, h99, f50, f99,
        req - last_requests, err - last_errors, counters.idle_cut.load(),
        counters.slowloris_cut.load(), counters.floods_431.load(), counters.floods.load(),
        LoadAverage());
    std::fflush(stdout);
    last_requests = req;
    last_errors = err;
  }
  stop.store(true);
  for (std::thread& t : threads) t.join();

  // ---- Stop the server ---------------------------------------------------------
  int wstatus = 0;
  bool exited = server_died;
  if (!server_died) {
    kill(pid, SIGTERM);
    const auto bound = Clock::now() + std::chrono::seconds(30);
    while (Clock::now() < bound) {
      if (waitpid(pid, &wstatus, WNOHANG) == pid) {
        exited = true;
        break;
      }
      std::this_thread::sleep_for(milliseconds(50));
    }
    if (!exited) {
      kill(pid, SIGKILL);
      waitpid(pid, &wstatus, 0);
    }
  }
  const bool clean_exit = exited && !server_died && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0;
  std::printf(
      "total: requests=%ld errors=%ld floods=%ld floods_431=%ld idle_cut=%ld "
      "slowloris_cut=%ld connect_failures=%ld server_exit=%s\n",
      counters.requests.load(), counters.errors.load(), counters.floods.load(),
      counters.floods_431.load(), counters.idle_cut.load(), counters.slowloris_cut.load(),
      counters.connect_failures.load(),
      server_died          ? "died during the soak"
      : !exited            ? "killed after 30 s"
      : WIFEXITED(wstatus) ? std::to_string(WEXITSTATUS(wstatus)).c_str()
                           : "signal");
  if (!first_error.empty()) std::printf("first error: %s\n", first_error.c_str());
  return counters.errors.load() == 0 && counters.floods.load() == counters.floods_431.load() &&
                 clean_exit
             ? 0
             : 1;
}
