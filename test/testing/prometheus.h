// A real Prometheus server for tests: the Debian `prometheus` binary started
// on a loopback port the kernel picks, with a temporary storage directory and
// a generated configuration that scrapes the targets a test serves.
//
//   PrometheusOptions options;
//   options.targets.push_back({"node-a", "127.0.0.1:" + port, "/metrics/node-a",
//                              {{"instance", "node-a:9100"}}});
//   StatusOr<std::unique_ptr<PrometheusServer>> p = PrometheusServer::Start(options);
//   ... p->url() ...
//   (*p)->Stop();  // SIGTERM by PID, SIGKILL after a grace period; always reaped
//
// Every wait is bounded. Thread-safety: one owner thread.
#ifndef SCHEDEXT_TEST_TESTING_PROMETHEUS_H_
#define SCHEDEXT_TEST_TESTING_PROMETHEUS_H_

#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "schedext/status.h"

namespace schedext::testing {

// $SCHEDEXT_PROMETHEUS, else /usr/bin/prometheus, else `prometheus` on PATH;
// nullopt when none is executable.
std::optional<std::string> FindPrometheusBinary();

// Under CI=true a missing prometheus fails the test instead of skipping it.
bool PrometheusRequired();

struct ScrapeTarget {
  std::string job;           // job_name
  std::string address;       // host:port
  std::string metrics_path;  // "/metrics"
  std::map<std::string, std::string> labels;  // target labels (may set instance)
};

struct PrometheusOptions {
  std::string binary;  // "" = FindPrometheusBinary()
  std::vector<ScrapeTarget> targets;
  std::chrono::seconds scrape_interval{1};
  // How long Start waits for /-/ready.
  std::chrono::seconds start_timeout{60};
};

class PrometheusServer {
 public:
  // Writes the config into a fresh temporary directory, starts prometheus with
  // --web.listen-address=127.0.0.1:0, finds the port it listens on through
  // /proc, and waits for /-/ready. Stops the process on any failure (the
  // message carries the log's last lines).
  static StatusOr<std::unique_ptr<PrometheusServer>> Start(const PrometheusOptions& options);
  ~PrometheusServer();
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;

  // SIGTERM to the PID, SIGKILL after 10 s; reaps it. Idempotent. The
  // directory is removed by the destructor.
  void Stop();
  bool running() const { return pid_ > 0; }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // The last lines of prometheus's log, for failure messages.
  std::string LogTail() const;

 private:
  PrometheusServer() = default;

  std::string dir_;
  std::string log_path_;
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace schedext::testing

#endif  // SCHEDEXT_TEST_TESTING_PROMETHEUS_H_
