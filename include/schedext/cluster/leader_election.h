// LeaderElector: one active replica among several, elected on a
// coordination.k8s.io/v1 Lease with client-go's leader-election semantics
// (tools/leaderelection), so that only one schedext serves the verbs: two
// replicas each assuming their own binds would double-book nodes and GPUs.
//
// The protocol, as client-go's:
//   * Every retry_period each candidate GETs the Lease. A candidate remembers
//     the lease's spec and the local (monotonic) time at which it last saw
//     that spec *change*; expiry is measured from that observation, never from
//     the remote renewTime, so clocks of different machines never meet.
//   * It may take the lease when the holder is empty (a released lease) or
//     when the spec has not changed for lease_duration. Absent: POST creates it.
//   * The holder renews by writing renewTime every retry_period.
//   * leaseTransitions counts changes of holder; acquireTime is kept across
//     renewals. Release (Stop) writes an empty holder with
//     leaseDurationSeconds 1, as client-go's ReleaseOnCancel does, so a
//     follower takes over on its next attempt instead of after the lease
//     duration.
//
// Writes are optimistic-concurrency updates. KubeClient has no PUT, so an
// update is a JSON merge patch (application/merge-patch+json) of the whole
// spec that also carries metadata.resourceVersion: the API server applies the
// patch to the stored object and then checks that resourceVersion as a
// precondition, answering 409 Conflict when anybody wrote the lease since we
// read it (exactly the check a PUT of the read object would make). Two
// candidates racing for an expired lease therefore cannot both win: the
// second write carries a stale resourceVersion.
//
// Never two serving leaders: IsLeader() is not a flag the elector thread sets
// and clears, but a deadline: it is true only until renew_deadline after the
// *start* of the last successful acquire/renew attempt (measured before the
// GET, so before the write reached the API server). Another candidate can take
// the lease only lease_duration after it observed that write, which happened
// after the attempt started; renew_deadline < lease_duration, so this replica
// has stopped serving (lease_duration - renew_deadline) before any other can
// acquire, whatever its own thread is doing (blocked in a request to an
// unreachable API server, for instance). The margin assumes the two machines'
// monotonic clocks run at about the same rate, as client-go does.
//
// Where this differs from client-go: after losing the lease client-go's Run
// returns (the process usually exits); this elector stays a candidate, since
// schedext's followers keep their caches synced and serve again on their
// next acquire. The follower's wait between attempts is jittered by up to
// 0.2 × retry_period instead of client-go's 1.2 ×: there are only a few
// replicas, and a released lease is taken within 1.2 × retry_period.
//
// Thread-safety: Start/Stop from one thread. IsLeader(), holder(),
// transitions() are lock-free and may be called from any thread (request
// handlers, metrics). TryAcquireOrRenew/Release are the thread's single
// steps, public for tests that drive the elector with a fake clock instead of
// starting the thread; never call them while the thread runs.
#ifndef SCHEDEXT_CLUSTER_LEADER_ELECTION_H_
#define SCHEDEXT_CLUSTER_LEADER_ELECTION_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <thread>

#include "schedext/cluster/kube_client.h"
#include "schedext/status.h"

namespace schedext::cluster {

struct LeaderElectionOptions {
  std::string lease_namespace = "default";
  std::string lease_name = "schedext";
  // Unique per candidate (DefaultLeaderIdentity(): hostname_pid).
  std::string identity;
  std::chrono::milliseconds lease_duration{15000};
  std::chrono::milliseconds renew_deadline{10000};
  std::chrono::milliseconds retry_period{2000};
  // Called on the elector thread when this replica starts (true) or stops
  // (false) leading as its thread sees it; not under any lock.
  std::function<void(bool leading)> on_change;
  // Test seams. The monotonic clock for expiry and the serving deadline
  // (default std::chrono::steady_clock::now), and the wall clock for the
  // lease's renewTime/acquireTime (default system_clock::now).
  std::function<std::chrono::steady_clock::time_point()> now;
  std::function<std::chrono::system_clock::time_point()> wall_now;
};

// client-go's checks: identity and names set, every duration > 0,
// lease_duration > renew_deadline > 1.2 × retry_period.
Status ValidateLeaderElectionOptions(const LeaderElectionOptions& options);

// The namespace a pod runs in: `pod_namespace_env` (the POD_NAMESPACE
// variable, from the downward API) when non-empty, else the first line of
// `service_account_namespace_file` when readable and non-empty, else
// "default".
std::string DefaultLeaseNamespace(const char* pod_namespace_env,
                                  const std::string& service_account_namespace_file =
                                      "/var/run/secrets/kubernetes.io/serviceaccount/namespace");
// "<hostname>_<pid>": unique among the replicas (the pod name is the
// hostname) and across restarts of one pod.
std::string DefaultLeaderIdentity();

class LeaderElector {
 public:
  // `client` must outlive the elector. Its per-request timeout should be well
  // below renew_deadline (main gives the elector a client of its own with
  // such a timeout), so that a hung request cannot use up the deadline; the
  // serving deadline does not depend on it.
  LeaderElector(KubeClient& client, LeaderElectionOptions options);
  ~LeaderElector();  // Stop()
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  // Starts the one elector thread: acquire, then renew, and acquire again
  // after a loss. Call once.
  void Start();
  // Stops serving at once (IsLeader() false from now on) but keeps holding
  // and renewing the lease, so that nobody else serves while this replica's
  // in-flight requests drain; Stop() then releases it.
  void StopServing();
  // Stops serving at once, stops the thread (after its current request, at
  // most one client timeout), and releases the lease if this replica holds
  // it. Idempotent.
  void Stop();

  // Whether this replica may serve: it holds the lease and its last
  // successful renewal started less than renew_deadline ago.
  bool IsLeader() const;
  // The holder last seen in the lease ("" when none or not read yet).
  std::shared_ptr<const std::string> holder() const;
  // How many times this replica started or stopped leading.
  uint64_t transitions() const { return transitions_.load(std::memory_order_relaxed); }
  // "lease <ns>/<name> is held by <holder>" (or "... has no holder"): why a
  // follower refuses work, for error bodies and /readyz.
  std::string FollowerReason() const;
  const LeaderElectionOptions& options() const { return options_; }

  // One attempt (GET, then POST or PATCH). OK when this replica holds the
  // lease afterwards; kFailedPrecondition when another holder's lease is
  // still valid or a write lost a race (409); the transport's or API's error
  // otherwise. Updates IsLeader() and calls on_change as the thread does.
  Status TryAcquireOrRenew();
  // Stops serving and, if this replica is the holder it last saw, writes the
  // released lease (retrying once on a 409 after a fresh GET).
  Status Release();

 private:
  struct Observed;  // the lease as last read

  Status Attempt(std::chrono::steady_clock::time_point start);
  Status Write(const std::string* resource_version, std::string_view holder,
               int64_t duration_seconds, int64_t transitions, const std::string& acquire_time,
               const std::string& now_wall);
  StatusOr<bool> Read();  // true: the lease exists (and observed_ is updated)
  // Compares IsLeader() with the thread's view; `why` words a loss (default:
  // FollowerReason()).
  void NoteLeading(std::string_view why = {});
  void Run();
  std::chrono::steady_clock::time_point Now() const;
  std::string WallNow() const;
  std::string LeasePath() const;

  KubeClient& client_;
  const LeaderElectionOptions options_;
  // Steady-clock nanoseconds until which this replica may serve; 0: not the
  // leader. The serving decision reads only this and the clock.
  std::atomic<int64_t> serve_until_ns_{0};
  // Set by Stop() before anything else: an attempt that succeeds after it
  // must not extend serve_until_ns_ again.
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> transitions_{0};
  std::atomic<std::shared_ptr<const std::string>> holder_;

  // Thread state (the elector thread, or the test calling the steps).
  std::unique_ptr<Observed> observed_;
  bool leading_ = false;  // as last reported to on_change
  std::minstd_rand jitter_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  bool started_ = false;
  bool stopped_ = false;
  std::thread thread_;
};

}  // namespace schedext::cluster

#endif  // SCHEDEXT_CLUSTER_LEADER_ELECTION_H_
