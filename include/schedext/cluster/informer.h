// Informer: a reflector, as client-go has, for nodes, pods or the objects of any
// other resource (a policy's watch: RawObjects, see resource_path.h). It LISTs the
// resource page by page (`limit` / `continue`), hands the complete list to its
// handler (OnReplace), then WATCHes from the list's resourceVersion with
// `allowWatchBookmarks=true` and a `timeoutSeconds` randomised in
// [min_watch_timeout, 2 × min_watch_timeout), handing each ADDED / MODIFIED /
// DELETED object over (OnUpsert / OnDelete) and remembering the
// resourceVersion of every event and BOOKMARK.
//
// Recovery, compared with client-go's Reflector (tools/cache/reflector.go):
// * 410 Gone — an ERROR event whose Status.code is 410 or an HTTP 410 on the
//   WATCH — means the resourceVersion left the server's window: relist (a
//   full LIST, then OnReplace, whose replace semantics delete every object
//   that disappeared meanwhile). An expired `continue` token (410 on a page)
//   restarts the LIST from the first page, as client-go's pager does.
// * A watch that ends cleanly (server timeout) is resumed at once from the
//   last resourceVersion; a dropped connection, a non-200 reply, or an ERROR
//   event with another code are resumed from the last resourceVersion after
//   an exponential backoff with jitter (client-go: 800 ms doubling to 30 s,
//   jitter factor 1.0, reset after 2 min without failure — the defaults
//   here). client-go relists on those instead; resuming is cheaper, and a
//   resourceVersion that is really too old comes back as 410 and relists.
// * A watch event that does not decode is logged and forces a relist (the
//   state it described is unknown). A failed LIST is retried with backoff.
// The LIST is a consistent read (no resourceVersion), paginated: client-go's
// first LIST asks for resourceVersion=0 from the watch cache, which ignores
// `limit`; pagination bounds schedext's memory on a 150,000-pod relist.
//
// Threads: Start() runs one thread, owned and joined by Stop() (or the
// destructor). The handler is called only from that thread, with no informer
// lock held. Synced(), Relisting(), Stats() and WaitForSync() may be called from
// any thread.
#ifndef SCHEDEXT_CLUSTER_INFORMER_H_
#define SCHEDEXT_CLUSTER_INFORMER_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "schedext/cluster/kube_client.h"
#include "schedext/model/owned.h"
#include "schedext/status.h"
#include "schedext/wire/object_decoder.h"

namespace schedext::cluster {

// kObjects: any other resource, read as wire::RawObjects (a policy's watch).
enum class ResourceKind { kNodes, kPods, kObjects };

// "nodes" / "pods" / "objects", for logs.
std::string_view ResourceKindName(ResourceKind kind);

// A RawObject owned: its identity and JSON text copied into one string, so it
// outlives the page or event line it came in. Not copyable or movable (the
// view points into the object's own arena); hold it by shared_ptr.
class OwnedObject {
 public:
  explicit OwnedObject(const wire::RawObject& object);
  OwnedObject(const OwnedObject&) = delete;
  OwnedObject& operator=(const OwnedObject&) = delete;

  const wire::RawObject& view() const { return view_; }

 private:
  std::string arena_;
  wire::RawObject view_;
};

// One object of an informer: `node` for kNodes, `pod` for kPods, `object` for
// kObjects (the others null).
struct InformerObject {
  std::shared_ptr<const model::OwnedNode> node;
  std::shared_ptr<const model::OwnedPod> pod;
  std::shared_ptr<const OwnedObject> object;
};

// What an informer feeds; the cluster cache implements it. Calls come from the
// informer's thread, one at a time per informer, in the order of the stream.
class InformerHandler {
 public:
  virtual ~InformerHandler() = default;
  // The complete current set of `kind` (initial sync and every relist):
  // objects the handler holds that are not in it were deleted.
  virtual void OnReplace(ResourceKind kind, std::vector<InformerObject> objects) = 0;
  // ADDED or MODIFIED.
  virtual void OnUpsert(ResourceKind kind, InformerObject object) = 0;
  // DELETED; `object` is its last state.
  virtual void OnDelete(ResourceKind kind, InformerObject object) = 0;
};

struct InformerOptions {
  ResourceKind kind = ResourceKind::kPods;
  // Collection path; empty: "/api/v1/nodes" or "/api/v1/pods". Required for
  // kObjects (CollectionPath in resource_path.h builds it).
  std::string path;
  // What the logs call the resource; empty: ResourceKindName(kind).
  std::string name;
  // Extra query parameters for LIST and WATCH, already URL-encoded, without a
  // leading '&' (e.g. "fieldSelector=spec.nodeName%21%3D"). Empty: none.
  std::string extra_query;
  int64_t page_size = 500;
  std::chrono::seconds min_watch_timeout{300};
  std::chrono::milliseconds backoff_initial{800};
  std::chrono::milliseconds backoff_max{30'000};
  // A failure more than this after the previous one starts the backoff over.
  std::chrono::milliseconds backoff_reset_after{120'000};

  // ---- test seams ----
  // The clock for backoff resets. Default: std::chrono::steady_clock::now.
  std::function<std::chrono::steady_clock::time_point()> now;
  // Called to wait `duration` before a retry, with no informer lock held. The
  // default waits on a condition variable that Stop() interrupts; a
  // replacement should return promptly (tests record the durations).
  std::function<void(std::chrono::milliseconds duration)> sleep;
  // Seed of the jitter / timeout randomness; 0: from std::random_device.
  uint64_t seed = 0;
};

struct InformerStats {
  bool synced = false;
  bool relisting = false;
  int64_t lists = 0;             // completed LISTs (initial + relists)
  int64_t relists = 0;           // LISTs started after the first sync
  int64_t watches = 0;           // WATCH requests made
  int64_t events = 0;            // watch events applied (bookmarks included)
  int64_t failures = 0;          // failed LISTs / WATCHes (each one backed off)
  std::string resource_version;  // last seen
  std::string last_error;        // of the last failure, "" if none yet
};

class Informer {
 public:
  // `client` and `handler` must outlive the informer.
  Informer(KubeClient& client, InformerHandler& handler, InformerOptions options);
  ~Informer();  // Stop()s
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Starts the thread. Calling it twice is a bug (asserted).
  void Start();
  // Stops and joins the thread: wakes a backoff wait and calls
  // client.CancelWatches() — which ends every watch of that client, the other
  // informer's too, so Stop is for shutdown. An in-flight LIST page request
  // finishes first (bounded by the client's timeout). Idempotent.
  void Stop();

  // True once a first complete LIST has been handed to the handler; stays true.
  bool Synced() const;
  // True from the moment a relist is needed after the first sync (410, an
  // undecodable event) until that relist has been handed over.
  bool Relisting() const;
  // Waits until Synced() or `timeout`; returns Synced().
  bool WaitForSync(std::chrono::milliseconds timeout) const;
  InformerStats Stats() const;

 private:
  class Run;
  void Loop();

  KubeClient& client_;
  InformerHandler& handler_;
  const InformerOptions options_;

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;  // stop_, synced changes
  bool stop_ = false;                   // guarded by mu_
  InformerStats stats_;                 // guarded by mu_
  std::thread thread_;                  // touched by Start/Stop only (not concurrently)
};

}  // namespace schedext::cluster

#endif  // SCHEDEXT_CLUSTER_INFORMER_H_
