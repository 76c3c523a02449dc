// schedext-prod-bench's side of the API server: the objects it creates
// before measuring, and the watch churn it writes while measuring.
// Thread-safety: CreateAll runs its own threads; a Churn is started and
// stopped from one thread.
#ifndef SCHEDEXT_BENCH_PROD_BENCH_CLUSTER_H_
#define SCHEDEXT_BENCH_PROD_BENCH_CLUSTER_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "testing/control_plane.h"

namespace schedext::bench::prod {

using schedext::testing::ControlPlane;

// Creates `objects` (path, body) with `threads` connections; the first error.
std::string CreateAll(const ControlPlane& cp,
                      const std::vector<std::pair<std::string, std::string>>& objects,
                      int threads);

// Watch churn: node heartbeats (strategic merge of the Ready condition), pod
// label changes, bound pods created and deleted, in turn, at `rate` writes/s
// over kWriters connections (one write's latency must not cap the rate),
// until stopped. Every write is an ADDED/MODIFIED/DELETED event schedext's
// informers receive.
class Churn {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr int kWriters = 4;

  // `cpus`: where the writers run (--cpu-split: the control plane's side, as
  // the kubelets and controllers writing these objects are not on the
  // extender's cores); empty: anywhere.
  // `name_prefix`: of the bound pods it creates (one Churn after another in
  // the same cluster needs its own: the last one's pods are left bound).
  Churn(const ControlPlane& cp, const std::vector<std::string>& nodes, size_t pods, double rate,
        std::vector<int> cpus, std::string name_prefix = "churn-")
      : cp_(cp),
        nodes_(nodes),
        pods_(pods),
        rate_(rate),
        cpus_(std::move(cpus)),
        name_prefix_(std::move(name_prefix)) {}
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

  void Loop(int t);

  const ControlPlane& cp_;
  const std::vector<std::string>& nodes_;
  const size_t pods_;
  const double rate_;
  const std::vector<int> cpus_;
  const std::string name_prefix_;
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

}  // namespace schedext::bench::prod

#endif  // SCHEDEXT_BENCH_PROD_BENCH_CLUSTER_H_
