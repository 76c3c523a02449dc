// Metrics: request counters and latency histograms per profile and verb, in
// the Prometheus text format (GET /metrics).
//
// Thread-safety: Record* may be called from any thread (relaxed atomics, no
// locks); Render may run concurrently with them. SetExtra only before the
// server starts.
#ifndef SCHEDEXT_SERVER_METRICS_H_
#define SCHEDEXT_SERVER_METRICS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace schedext::server {

// kExplain: POST /<profile>/explain (src/explain/), not an extender verb.
enum class Verb { kFilter = 0, kPrioritize, kPreempt, kBind, kExplain };
inline constexpr size_t kVerbCount = 5;
std::string_view VerbName(Verb verb);

// How a request ended, for the `outcome` label.
enum class Outcome { kOk = 0, kError, kBadRequest };
inline constexpr size_t kOutcomeCount = 3;

class Metrics {
 public:
  explicit Metrics(std::vector<std::string> profile_names);

  // One request of `profile_index` (index into the names given at construction).
  void RecordRequest(size_t profile_index, Verb verb, Outcome outcome, double seconds,
                     uint64_t nodes);
  // Nodes rejected by filter, per profile.
  void RecordRejected(size_t profile_index, uint64_t failed, uint64_t unresolvable);
  // Log lines dropped by a rate limiter (LogLimiter in src/server/request_log.h),
  // exported as schedext_log_suppressed_total.
  void RecordLogSuppressed(uint64_t lines) {
    log_suppressed_.fetch_add(lines, std::memory_order_relaxed);
  }

  // Appends the Prometheus text exposition of every series.
  void Render(std::string& out) const;
  // Series computed at scrape time (e.g. from the cluster cache), appended
  // after the request series by every Render. `extra` must allow concurrent
  // calls.
  void SetExtra(std::function<void(std::string& out)> extra) { extra_ = std::move(extra); }
  // Like SetExtra, after what is already set (e.g. the recorder's series).
  void AddExtra(std::function<void(std::string& out)> extra) {
    if (!extra_) {
      extra_ = std::move(extra);
      return;
    }
    extra_ = [first = std::move(extra_), second = std::move(extra)](std::string& out) {
      first(out);
      second(out);
    };
  }
  // State read at scrape time (set before the server starts; each function
  // must allow concurrent calls). With `synced`: schedext_cache_synced 0/1,
  // whether the node and pod cache has synced. With leader election:
  // schedext_leader 0/1 (this replica holds the Lease and may serve) and
  // schedext_leader_transitions_total (times it started or stopped leading).
  void SetCacheSynced(std::function<bool()> synced) { cache_synced_ = std::move(synced); }
  void SetLeaderElection(std::function<bool()> leader, std::function<uint64_t()> transitions) {
    leader_ = std::move(leader);
    leader_transitions_ = std::move(transitions);
  }

 private:
  static constexpr std::array<double, 14> kBuckets = {
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
      0.025,  0.05,    0.1,    0.25,  0.5,    1.0,   2.5};
  struct Series {
    std::array<std::atomic<uint64_t>, kOutcomeCount> count{};
    std::array<std::atomic<uint64_t>, kBuckets.size()> buckets{};  // non-cumulative
    std::atomic<uint64_t> sum_micros{0};
    std::atomic<uint64_t> nodes{0};
  };
  struct ProfileSeries {
    std::array<Series, kVerbCount> verbs;
    std::atomic<uint64_t> failed{0};
    std::atomic<uint64_t> unresolvable{0};
  };
  std::vector<std::string> names_;
  std::unique_ptr<ProfileSeries[]> series_;
  std::atomic<uint64_t> log_suppressed_{0};
  std::function<void(std::string& out)> extra_;
  std::function<bool()> cache_synced_;
  std::function<bool()> leader_;
  std::function<uint64_t()> leader_transitions_;
};

}  // namespace schedext::server

#endif  // SCHEDEXT_SERVER_METRICS_H_
