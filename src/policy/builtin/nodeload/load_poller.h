// LoadPoller: NodeLoad's background reader of Prometheus. A thread of its own
// runs the configured instant queries every interval and publishes what they
// answered as an immutable LoadSnapshot; request threads load the current
// snapshot once per request (an atomic shared_ptr) and look nodes up in it
// without locks or allocation. No query ever runs on a request thread.
//
// A round publishes a new snapshot only when every query succeeded; after a
// failure the previous snapshot stays, growing older, and NodeLoad treats it
// as missing once it is older than its maxAge. Thread-safety: Current() and
// stats() from any thread; Start(), Stop() and PollOnce() from one owner.
#ifndef SCHEDEXT_POLICY_BUILTIN_NODELOAD_LOAD_POLLER_H_
#define SCHEDEXT_POLICY_BUILTIN_NODELOAD_LOAD_POLLER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "policy/builtin/nodeload/prometheus.h"
#include "schedext/policy/background.h"
#include "schedext/status.h"

namespace schedext::policy::nodeload {

using Clock = std::chrono::steady_clock;

inline constexpr double kNoData = std::numeric_limits<double>::quiet_NaN();

// What Prometheus said about one node, in percent of the node's capacity;
// kNoData (NaN) where the query had no series for the node.
struct NodeLoadSample {
  double cpu = kNoData;
  double cpu_stddev = kNoData;
  double memory = kNoData;
  double memory_stddev = kNoData;
};

// One poll's answers for every node any query named. Immutable.
class LoadSnapshot {
 public:
  // `nodes` with unique names, in any order (sorted here).
  LoadSnapshot(std::vector<std::pair<std::string, NodeLoadSample>> nodes, Clock::time_point taken);

  // The node's sample, or nullptr. Binary search; no allocation.
  const NodeLoadSample* Find(std::string_view node) const;
  // When the poll that produced it started (the queries' evaluation time is
  // at or after it).
  Clock::time_point taken() const { return taken_; }
  size_t size() const { return nodes_.size(); }
  const std::vector<std::pair<std::string, NodeLoadSample>>& nodes() const { return nodes_; }

 private:
  const std::vector<std::pair<std::string, NodeLoadSample>> nodes_;
  const Clock::time_point taken_;
};

// The PromQL of each series; "" is not queried (its values stay kNoData).
struct LoadQueries {
  std::string cpu;
  std::string cpu_stddev;
  std::string memory;
  std::string memory_stddev;
};

struct PollerStats {
  uint64_t polls = 0;          // rounds run
  uint64_t query_errors = 0;   // failed queries (a round stops at its first failure)
  size_t nodes_with_data = 0;  // nodes in the current snapshot
  // When the current snapshot was taken; nullopt before the first success.
  std::optional<Clock::time_point> last_success;
  std::string last_error;  // "" after a successful round
};

class LoadPoller {
 public:
  LoadPoller(std::unique_ptr<PrometheusClient> client, LoadQueries queries,
             std::string node_label, bool trim_port, std::chrono::milliseconds interval);
  // Stops the thread.
  ~LoadPoller();
  LoadPoller(const LoadPoller&) = delete;
  LoadPoller& operator=(const LoadPoller&) = delete;

  // Starts the thread: a round at once, then one every interval. Once only.
  void Start();
  // Wakes and joins the thread (an HTTP query in flight finishes first, bounded
  // by the client's timeout). Idempotent.
  void Stop();
  // One round on the calling thread: every query, then the snapshot when all
  // succeeded. Returns the first failure.
  Status PollOnce();

  // The latest snapshot; nullptr before the first successful round.
  std::shared_ptr<const LoadSnapshot> Current() const { return current_.load(); }
  PollerStats stats() const;

 private:
  void Run();

  const std::unique_ptr<PrometheusClient> client_;
  const LoadQueries queries_;
  const std::string node_label_;
  const bool trim_port_;
  const std::chrono::milliseconds interval_;

  std::atomic<std::shared_ptr<const LoadSnapshot>> current_;
  std::atomic<uint64_t> polls_{0};
  std::atomic<uint64_t> query_errors_{0};

  mutable std::mutex mu_;  // guards the fields below
  std::condition_variable wake_;
  bool stopping_ = false;
  std::string last_error_;
  std::thread thread_;
};

// The poller as the handle's BackgroundTask: started and stopped by the
// handle's owner.
class PollerTask final : public BackgroundTask {
 public:
  explicit PollerTask(std::shared_ptr<LoadPoller> poller);
  std::string_view Name() const override { return "NodeLoad poller"; }
  Status Start() override;
  void Stop() override;

 private:
  const std::shared_ptr<LoadPoller> poller_;
};

}  // namespace schedext::policy::nodeload

#endif  // SCHEDEXT_POLICY_BUILTIN_NODELOAD_LOAD_POLLER_H_
