// FakeNodeExporter: node_exporter's CPU and memory series for fake nodes,
// served on a loopback port for a real Prometheus to scrape (testing/
// prometheus.h): GET /metrics/<node> answers that node's
// node_cpu_seconds_total counters — advancing with the steady clock at the
// utilisation set for it, one CPU — and its memory gauges (1 GiB total).
//
//   FakeNodeExporter exporter;
//   exporter.Set("node-a", 0.10, 0.50);  // 10 % CPU busy, 50 % memory used
//   ScrapeTarget{"node-a", "127.0.0.1:" + std::to_string(exporter.port()),
//                "/metrics/node-a", {{"instance", "node-a:9100"}}};
//
// A node never Set answers 404. Thread-safety: Set and scrapes from any
// thread; the destructor stops the server and joins its thread.
#ifndef SCHEDEXT_TEST_TESTING_FAKE_NODE_EXPORTER_H_
#define SCHEDEXT_TEST_TESTING_FAKE_NODE_EXPORTER_H_

#include <memory>
#include <string>

namespace schedext::testing {

class FakeNodeExporter {
 public:
  FakeNodeExporter();
  ~FakeNodeExporter();
  FakeNodeExporter(const FakeNodeExporter&) = delete;
  FakeNodeExporter& operator=(const FakeNodeExporter&) = delete;

  // From now on the node's CPU is `cpu` busy (0..1) and `memory` (0..1) of
  // its memory is used. The counters keep what they have accumulated.
  void Set(const std::string& node, double cpu, double memory);
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace schedext::testing

#endif  // SCHEDEXT_TEST_TESTING_FAKE_NODE_EXPORTER_H_
