// BindLedger: the pods NodeLoad has seen bound recently, so that a burst of
// binds does not pile onto the node that looked idle in the last sample.
// Prometheus only shows a pod's load some time after its bind (the pod must
// start, be scraped, and fill a rate() window); until a sample taken at least
// `settle` after the bind could cover it, the pod's requests are added to the
// node's measured use.
//
// Binds are rare next to requests: each Add/Remove publishes a new immutable
// BindLedger::View (copy-on-write, entries older than the retention dropped),
// and request threads load the current view once per request and sum a node's
// entries with a binary search, without locks or allocation.
// Thread-safety: every method may be called from any thread.
#ifndef SCHEDEXT_POLICY_BUILTIN_NODELOAD_BIND_LEDGER_H_
#define SCHEDEXT_POLICY_BUILTIN_NODELOAD_BIND_LEDGER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace schedext::policy::nodeload {

class BindLedger {
 public:
  using Clock = std::chrono::steady_clock;

  struct Entry {
    std::string node;
    std::string pod_uid;
    int64_t cpu_millis = 0;
    int64_t memory_bytes = 0;
    Clock::time_point bound;
  };

  // An immutable set of entries, sorted by node then bind time.
  class View {
   public:
    explicit View(std::vector<Entry> entries) : entries_(std::move(entries)) {}
    // Σ of `node`'s entries bound after `since`. No allocation.
    void SumSince(std::string_view node, Clock::time_point since, int64_t& cpu_millis,
                  int64_t& memory_bytes) const;
    size_t size() const { return entries_.size(); }
    template <typename Fn>
    void ForEach(Fn&& fn) const {
      for (const Entry& e : entries_) fn(e);
    }

   private:
    const std::vector<Entry> entries_;
  };

  // Entries older than `retention` (by `now`) are dropped at each change.
  explicit BindLedger(Clock::duration retention,
                      std::function<Clock::time_point()> now = [] { return Clock::now(); });

  // Records a bind of `pod_uid` to `node` at `bound`; a second Add of the same
  // uid replaces the first (a retried bind).
  void Add(std::string_view node, std::string_view pod_uid, int64_t cpu_millis,
           int64_t memory_bytes, Clock::time_point bound);
  // Forgets `pod_uid` (its bind failed, or the pod went away). No-op when absent.
  void Remove(std::string_view pod_uid);

  // The current view; never null.
  std::shared_ptr<const View> Current() const { return current_.load(); }

 private:
  // Publishes `entries` minus the expired ones, sorted. Requires mu_.
  void Publish(std::vector<Entry> entries);

  const Clock::duration retention_;
  const std::function<Clock::time_point()> now_;
  std::mutex mu_;  // serialises writers; readers only load current_
  std::atomic<std::shared_ptr<const View>> current_;
};

}  // namespace schedext::policy::nodeload

#endif  // SCHEDEXT_POLICY_BUILTIN_NODELOAD_BIND_LEDGER_H_
