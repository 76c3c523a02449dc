// Metrics: request counters and latency histograms per profile and verb, in
// the Prometheus text format (GET /metrics).
//
// Thread-safety: Record* may be called from any thread (relaxed atomics, no
// locks); Render may run concurrently with them.
#ifndef SCHEDEXT_SERVER_METRICS_H_
#define SCHEDEXT_SERVER_METRICS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace schedext::server {

enum class Verb { kFilter = 0, kPrioritize, kPreempt, kBind };
inline constexpr size_t kVerbCount = 4;
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

  // Appends the Prometheus text exposition of every series.
  void Render(std::string& out) const;

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
};

}  // namespace schedext::server

#endif  // SCHEDEXT_SERVER_METRICS_H_
