#include "testing/prometheus.h"

#include <dirent.h>
#include <fcntl.h>
#include <httplib.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "testing/child_process.h"

namespace schedext::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

bool IsExecutable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

std::string Getenv(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

// Waits up to `timeout` for our child `pid` to exit and reaps it.
bool WaitExit(pid_t pid, milliseconds timeout) {
  const auto deadline = steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) {
      return true;
    }
    if (steady_clock::now() >= deadline) {
      return false;
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
}

bool Exited(pid_t pid) {
  int status = 0;
  return ::waitpid(pid, &status, WNOHANG) == pid;
}

// The inodes of the sockets `pid` holds open.
std::set<std::string> SocketInodes(pid_t pid) {
  std::set<std::string> out;
  const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* dir = ::opendir(fd_dir.c_str());
  if (dir == nullptr) {
    return out;
  }
  while (dirent* entry = ::readdir(dir)) {
    char target[256];
    const std::string link = fd_dir + "/" + entry->d_name;
    const ssize_t n = ::readlink(link.c_str(), target, sizeof(target) - 1);
    if (n <= 0) {
      continue;
    }
    const std::string text(target, static_cast<size_t>(n));
    if (text.rfind("socket:[", 0) == 0 && text.back() == ']') {
      out.insert(text.substr(8, text.size() - 9));
    }
  }
  ::closedir(dir);
  return out;
}

// The port of a TCP socket of `pid` listening on 127.0.0.1, or 0. Sockets
// this process holds too are not its own: between fork and exec the child
// still has ours (the test's exporter listens on loopback as well).
int ListeningLoopbackPort(pid_t pid) {
  std::set<std::string> inodes = SocketInodes(pid);
  for (const std::string& mine : SocketInodes(::getpid())) {
    inodes.erase(mine);
  }
  if (inodes.empty()) {
    return 0;
  }
  std::ifstream tcp("/proc/net/tcp");
  std::string line;
  std::getline(tcp, line);  // header
  while (std::getline(tcp, line)) {
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
    std::istringstream fields(line);
    std::string sl, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
    fields >> sl >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >>
        inode;
    if (state != "0A" || inodes.count(inode) == 0) {
      continue;
    }
    const size_t colon = local.find(':');
    if (colon == std::string::npos || local.substr(0, colon) != "0100007F") {
      continue;
    }
    return static_cast<int>(std::strtol(local.substr(colon + 1).c_str(), nullptr, 16));
  }
  return 0;
}

std::string Quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    out += c;
    if (c == '\'') {
      out += '\'';
    }
  }
  return out + "'";
}

}  // namespace

std::optional<std::string> FindPrometheusBinary() {
  const std::string env = Getenv("SCHEDEXT_PROMETHEUS");
  if (!env.empty()) {
    return IsExecutable(env) ? std::optional<std::string>(env) : std::nullopt;
  }
  if (IsExecutable("/usr/bin/prometheus")) {
    return "/usr/bin/prometheus";
  }
  std::istringstream path(Getenv("PATH"));
  std::string dir;
  while (std::getline(path, dir, ':')) {
    if (!dir.empty() && IsExecutable(dir + "/prometheus")) {
      return dir + "/prometheus";
    }
  }
  return std::nullopt;
}

bool PrometheusRequired() { return Getenv("CI") == "true"; }

StatusOr<std::unique_ptr<PrometheusServer>> PrometheusServer::Start(
    const PrometheusOptions& options) {
  std::string binary = options.binary;
  if (binary.empty()) {
    std::optional<std::string> found = FindPrometheusBinary();
    if (!found.has_value()) {
      return NotFoundError("prometheus not found (apt-get install prometheus)");
    }
    binary = *found;
  }
  std::unique_ptr<PrometheusServer> server(new PrometheusServer());
  std::string pattern = std::filesystem::temp_directory_path().string() + "/prometheus_XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    return InternalError(std::string("mkdtemp: ") + std::strerror(errno));
  }
  server->dir_ = pattern;
  server->log_path_ = server->dir_ + "/prometheus.log";

  const std::string interval = std::to_string(options.scrape_interval.count()) + "s";
  std::string config = "global:\n  scrape_interval: " + interval +
                       "\n  scrape_timeout: " + interval +
                       "\n  evaluation_interval: " + interval + "\nscrape_configs:\n";
  for (const ScrapeTarget& t : options.targets) {
    config += "  - job_name: " + Quoted(t.job) + "\n    metrics_path: " + Quoted(t.metrics_path) +
              "\n    static_configs:\n      - targets: [" + Quoted(t.address) + "]\n";
    if (!t.labels.empty()) {
      config += "        labels:\n";
      for (const auto& [key, value] : t.labels) {
        config += "          " + key + ": " + Quoted(value) + "\n";
      }
    }
  }
  {
    std::ofstream out(server->dir_ + "/prometheus.yml");
    out << config;
    if (!out) {
      return InternalError("write " + server->dir_ + "/prometheus.yml");
    }
  }

  std::vector<std::string> args = {binary,
                                   "--config.file=" + server->dir_ + "/prometheus.yml",
                                   "--storage.tsdb.path=" + server->dir_ + "/data",
                                   "--web.listen-address=127.0.0.1:0",
                                   "--log.level=info"};
  const int log_fd =
      ::open(server->log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    return InternalError("open " + server->log_path_ + ": " + std::strerror(errno));
  }
  StatusOr<pid_t> spawned = SpawnProcess(args, -1, log_fd);
  ::close(log_fd);
  SCHEDEXT_RETURN_IF_ERROR(spawned.status());
  const pid_t pid = *spawned;
  server->pid_ = pid;

  const auto deadline = steady_clock::now() + options.start_timeout;
  while (server->port_ == 0) {
    if (Exited(pid)) {
      server->pid_ = -1;
      return UnavailableError("prometheus exited at start\n" + server->LogTail());
    }
    if (steady_clock::now() >= deadline) {
      return DeadlineExceededError("prometheus did not listen\n" + server->LogTail());
    }
    // Only once the child runs prometheus (after exec), not our fork of us.
    std::error_code ec;
    const std::filesystem::path exe =
        std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec);
    const std::filesystem::path want = std::filesystem::canonical(binary, ec);
    if (!ec && exe == want) {
      server->port_ = ListeningLoopbackPort(pid);
    }
    if (server->port_ == 0) {
      std::this_thread::sleep_for(milliseconds(50));
    }
  }
  httplib::Client client("127.0.0.1", server->port_);
  client.set_connection_timeout(std::chrono::seconds(2));
  client.set_read_timeout(std::chrono::seconds(5));
  for (;;) {
    httplib::Result ready = client.Get("/-/ready");
    if (ready && ready->status == 200 && ready->body.find("Prometheus") != std::string::npos) {
      return server;
    }
    if (Exited(pid)) {
      server->pid_ = -1;
      return UnavailableError("prometheus exited before it was ready\n" + server->LogTail());
    }
    if (steady_clock::now() >= deadline) {
      return DeadlineExceededError("prometheus not ready in time\n" + server->LogTail());
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
}

PrometheusServer::~PrometheusServer() {
  Stop();
  if (!dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
}

void PrometheusServer::Stop() {
  if (pid_ <= 0) {
    return;
  }
  ::kill(pid_, SIGTERM);
  if (!WaitExit(pid_, milliseconds(10000))) {
    ::kill(pid_, SIGKILL);
    WaitExit(pid_, milliseconds(10000));
  }
  pid_ = -1;
}

std::string PrometheusServer::LogTail() const {
  std::ifstream in(log_path_);
  std::stringstream text;
  text << in.rdbuf();
  std::string all = text.str();
  size_t pos = all.size();
  for (int lines = 0; lines < 20 && pos > 0; ++lines) {
    const size_t nl = all.rfind('\n', pos - 1);
    if (nl == std::string::npos) {
      pos = 0;
      break;
    }
    pos = nl;
  }
  return "--- last lines of " + log_path_ + " ---\n" + all.substr(pos);
}

}  // namespace schedext::testing
