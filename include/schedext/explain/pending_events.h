// Pending-pod events: when a profile's filter rejects a pod on every node it
// was asked about, a SchedextUnschedulable Event on the pod says what would
// make it fit; when its preempt verb drops a candidate node or spares a
// victim the scheduler proposed, a SchedextPreemption Event says why
// (preemption.h's PreemptionNote) (docs/pending-pods.md).
//
// PendingEventWriter is the service's ExchangeObserver for this. On the
// request thread OnExchange only decides (a 200 filter reply with no passing
// node, a profile with events on, this replica the leader) and enqueues a
// small job: an owned copy of the decoded pod, the request's nodes (pointers
// into the request's cluster snapshot, which the job keeps alive; in
// full-node mode their names, looked up in that snapshot later) and the
// profile. A full queue drops the job and counts it; nothing on the request
// path waits. The writer thread explains the pod on those nodes
// (Profile::Explain), formats UnschedulableNote and hands it to
// cluster::EventRecorder, which deduplicates into series and writes through
// its own rate-limited API client. A 200 preempt reply that differs from the
// scheduler's proposal enqueues a copy of its PreemptionExplanation instead,
// whose PreemptionNote the writer thread records the same way, as a series
// of its own.
//
// Thread-safety: OnExchange from any request thread; AppendMetrics from any
// thread; Start/Stop from the main thread.
#ifndef SCHEDEXT_EXPLAIN_PENDING_EVENTS_H_
#define SCHEDEXT_EXPLAIN_PENDING_EVENTS_H_

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "schedext/cluster/connection.h"
#include "schedext/cluster/event_recorder.h"
#include "schedext/config/config.h"
#include "schedext/explain/preemption.h"
#include "schedext/pipeline/explain.h"
#include "schedext/pipeline/profile.h"
#include "schedext/server/service.h"

namespace schedext::explain {

// The Event's note for a pod no node of `explanation` passes: the nearest
// `max_listed` nodes with the policies that reject them and their detail
// (FilterHook::Detail, else the reason), then how many more were rejected by
// which policy. `node_names[k]` names explanation.nodes[k]; `unknown` counts
// request nodes schedext's cache does not know. Nearest first: fewest
// rejecting policies, then a plain Unschedulable before an unresolvable one,
// then, among nodes rejected by the same policy (and, for NodeResourcesFit,
// short of the same resource), the smaller "short by N" that ends the detail
// (GpuShare's, HamiVgpu's, NodeResourcesFit's), then name. At most
// cluster::kEventNoteLimit bytes:
// fewer nodes are listed when their text would not fit. Example:
//   0/5 nodes fit profile gpu. Nearest: gpu-b (GpuShare: needs 8 GiB on one
//   GPU; largest free 6 GiB, short by 2 GiB), gpu-a (...). 3 more nodes
//   rejected: GpuShare 3.
std::string UnschedulableNote(std::string_view profile,
                              std::span<const std::string_view> node_names,
                              const pipeline::Explanation& explanation, size_t unknown,
                              size_t max_listed = 3);

struct PendingEventOptions {
  size_t queue_size = 256;
  size_t max_listed = 3;
  // Profiles whose rejections make events (profiles[].events); others none.
  std::vector<const pipeline::Profile*> profiles;
  // Whether this replica may write now (leader election); empty: always.
  std::function<bool()> may_write;
  // The wall clock (tests replace it).
  std::function<cluster::EventRecorder::WallTime()> now;
};

// The preemption Event's reason and type (SchedextUnschedulable's are the
// recorder's options).
inline constexpr std::string_view kPreemptionEventReason = "SchedextPreemption";
inline constexpr std::string_view kPreemptionEventType = "Normal";

// Why a job or an event was not written: schedext_events_dropped_total{reason}.
enum class EventDrop { kQueueFull = 0, kNotLeader, kRateLimited, kApiError };
inline constexpr size_t kEventDropCount = 4;

class PendingEventWriter final : public server::ExchangeObserver {
 public:
  // `recorder` is used by the writer thread only and must outlive Stop().
  PendingEventWriter(cluster::EventRecorder& recorder, PendingEventOptions options);
  ~PendingEventWriter() override;  // Stop()s

  void Start();
  // Ends the thread; jobs still queued are dropped uncounted.
  void Stop();

  void OnExchange(const server::HandledExchange& exchange) override;

  // schedext_events_dropped_total{reason=...} and
  // schedext_events_written_total{op="create"|"update"}.
  void AppendMetrics(std::string& out) const;

  // For tests: the jobs queued and not yet taken; and processes them on the
  // calling thread (instead of Start).
  size_t queued() const;
  void DrainForTest();
  uint64_t dropped(EventDrop reason) const {
    return dropped_[static_cast<size_t>(reason)].load(std::memory_order_relaxed);
  }

 private:
  struct Job;
  // Whether a job for `profile` may be queued now (counts the drop if not).
  bool Admit(const pipeline::Profile& profile);
  void Enqueue(std::unique_ptr<Job> job);
  void Run();
  void Process(Job& job);
  void Write(const cluster::EventPod& pod, std::string_view note, cluster::EventKind kind);
  void Count(cluster::EventWrite write);

  cluster::EventRecorder& recorder_;
  PendingEventOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Job>> queue_;
  bool stopping_ = false;
  std::thread thread_;
  std::array<std::atomic<uint64_t>, kEventDropCount> dropped_{};
  std::atomic<uint64_t> created_{0};
  std::atomic<uint64_t> updated_{0};
};

// The writer cluster.events and profiles[].events ask for, over
// `connection`'s event recorder, writing only while this replica leads (with
// cluster.leaderElection); null when events are off, without a connection,
// or when no profile wants them. `profiles` are `config.profiles`, built, in
// the same order.
std::unique_ptr<PendingEventWriter> NewPendingEventWriter(
    const config::Config& config, std::span<const std::shared_ptr<const pipeline::Profile>> profiles,
    cluster::ClusterConnection* connection);

}  // namespace schedext::explain

#endif  // SCHEDEXT_EXPLAIN_PENDING_EVENTS_H_
