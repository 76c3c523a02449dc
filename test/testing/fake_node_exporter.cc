#include "testing/fake_node_exporter.h"

#include <httplib.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

namespace schedext::testing {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kGiB = int64_t{1} << 30;

struct Node {
  double cpu = 0;
  int64_t memory_total = kGiB;
  int64_t memory_available = kGiB;
  double idle_seconds = 1000;
  double busy_seconds = 1000;
  Clock::time_point last = Clock::now();
};

// The counters as of now, at the node's current utilisation.
void Advance(Node& n) {
  const Clock::time_point now = Clock::now();
  const double dt = std::chrono::duration<double>(now - n.last).count();
  n.idle_seconds += dt * (1 - n.cpu);
  n.busy_seconds += dt * n.cpu;
  n.last = now;
}

std::string Exposition(const Node& n) {
  std::ostringstream out;
  out.precision(17);
  out << "# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.\n"
      << "# TYPE node_cpu_seconds_total counter\n"
      << "node_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} " << n.idle_seconds << "\n"
      << "node_cpu_seconds_total{cpu=\"0\",mode=\"user\"} " << n.busy_seconds << "\n"
      << "# HELP node_memory_MemTotal_bytes Memory information field MemTotal_bytes.\n"
      << "# TYPE node_memory_MemTotal_bytes gauge\n"
      << "node_memory_MemTotal_bytes " << n.memory_total << "\n"
      << "# HELP node_memory_MemAvailable_bytes Memory information field "
         "MemAvailable_bytes.\n"
      << "# TYPE node_memory_MemAvailable_bytes gauge\n"
      << "node_memory_MemAvailable_bytes " << n.memory_available << "\n";
  return out.str();
}

}  // namespace

struct FakeNodeExporter::Impl {
  httplib::Server server;
  int port = 0;
  std::thread thread;
  std::mutex mu;
  std::map<std::string, Node> nodes;
};

FakeNodeExporter::FakeNodeExporter() : impl_(std::make_unique<Impl>()) {
  Impl* impl = impl_.get();
  impl->server.Get(R"(/metrics/([A-Za-z0-9.-]+))",
                   [impl](const httplib::Request& req, httplib::Response& res) {
                     const std::string node = req.matches[1];
                     std::lock_guard<std::mutex> lock(impl->mu);
                     auto it = impl->nodes.find(node);
                     if (it == impl->nodes.end()) {
                       res.status = 404;
                       return;
                     }
                     Advance(it->second);
                     res.set_content(Exposition(it->second), "text/plain; version=0.0.4");
                   });
  impl->port = impl->server.bind_to_any_port("127.0.0.1");
  impl->thread = std::thread([impl] { impl->server.listen_after_bind(); });
}

FakeNodeExporter::~FakeNodeExporter() {
  impl_->server.stop();
  impl_->thread.join();
}

void FakeNodeExporter::Set(const std::string& node, double cpu, double memory) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Node& n = impl_->nodes[node];
  Advance(n);
  n.cpu = cpu;
  n.memory_total = kGiB;
  n.memory_available = static_cast<int64_t>(std::llround((1 - memory) * kGiB));
}

int FakeNodeExporter::port() const { return impl_->port; }

}  // namespace schedext::testing
