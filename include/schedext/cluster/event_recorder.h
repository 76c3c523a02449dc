// EventRecorder: writes events.k8s.io/v1 Events about pods, deduplicated into
// series the way client-go's events broadcaster (tools/events) does, so a pod
// that the scheduler retries a hundred times makes one Event whose
// series.count grows, not a hundred Events.
//
// Per pod (namespace, name, uid) and event reason it remembers the last Event
// it created and that Event's note:
//   * the first occurrence, or one after `series_window` without any, POSTs a
//     new Event (no series);
//   * a repeat with the same note counts into the series: at most once per
//     `update_interval` the count and lastObservedTime go out in one JSON
//     merge PATCH (the events API's series update); repeats in between are
//     only counted, and Flush sends them once the interval has passed;
//   * a different note starts a new Event, but not within `update_interval`
//     of the pod's last Event (such a note is dropped: kRateLimited).
// The table holds at most `max_pods` pods, least recently seen evicted first,
// and Flush forgets pods not seen for `series_window`.
//
// Requests go through the KubeClient given, with its rate limit (schedext
// gives it a client of its own, cluster.events.qps, so events never take a
// bind's turn). Time is passed in (wall clock: eventTime and
// lastObservedTime are wall-clock stamps), so tests drive it with a fake one.
//
// Thread-safety: none; one thread (explain/'s PendingEventWriter) owns it.
#ifndef SCHEDEXT_CLUSTER_EVENT_RECORDER_H_
#define SCHEDEXT_CLUSTER_EVENT_RECORDER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>

#include "schedext/cluster/kube_client.h"
#include "schedext/status.h"

namespace schedext::cluster {

// The events API refuses a note longer than this (bytes).
inline constexpr size_t kEventNoteLimit = 1024;

struct EventRecorderOptions {
  std::string reporting_controller = "schedext";
  // Which replica wrote it: the pod name (or host name) of this process.
  std::string reporting_instance;
  std::string reason = "SchedextUnschedulable";
  std::string action = "Scheduling";
  std::string type = "Warning";
  std::chrono::seconds update_interval{30};
  std::chrono::seconds series_window{360};
  size_t max_pods = 4096;
};

struct EventPod {
  std::string namespace_name;
  std::string name;
  std::string uid;
};

// What an Event says it is; empty fields take the recorder's options. Each
// kind of a pod is a series of its own: a SchedextPreemption note does not
// replace (or rate-limit) the pod's SchedextUnschedulable one.
struct EventKind {
  std::string_view reason;
  std::string_view type;
};

enum class EventWrite {
  kCreated,      // a new Event was POSTed
  kUpdated,      // the series went out (PATCH)
  kCounted,      // a repeat, counted; its update waits for the interval
  kRateLimited,  // a new note too soon after the pod's last Event: dropped
  kFailed,       // the API refused or could not be reached (see `error`)
};

class EventRecorder {
 public:
  using WallTime = std::chrono::system_clock::time_point;

  // `client` must outlive the recorder.
  EventRecorder(KubeClient& client, EventRecorderOptions options);

  // One occurrence of `note` (at most kEventNoteLimit bytes; cut there if
  // longer) about `pod` at `now`. On kFailed, `error` (if given) says why.
  EventWrite Record(const EventPod& pod, std::string_view note, WallTime now,
                    Status* error = nullptr, EventKind kind = {});
  // Sends the series updates whose interval has passed by `now` and forgets
  // pods not seen for series_window. Returns the updates sent.
  size_t Flush(WallTime now);

  size_t tracked() const { return lru_.size(); }

  // The Event a Record creates (for tests and the docs): JSON, keys in the
  // order kubectl shows them.
  std::string EventBody(const EventPod& pod, std::string_view event_name, std::string_view note,
                        WallTime now, EventKind kind = {}) const;
  // "<pod name>.<hex nanoseconds>", client-go's naming, cut to fit 253 bytes.
  static std::string EventName(std::string_view pod_name, WallTime now);
  // RFC 3339 with microseconds, UTC: a Kubernetes MicroTime.
  static std::string MicroTime(WallTime t);

 private:
  struct Entry {
    std::string key;
    EventPod pod;
    std::string reason;  // of the kind recorded, filled from the options
    std::string type;
    std::string event_name;
    std::string note;
    int64_t count = 1;          // occurrences in the series
    int64_t written_count = 1;  // the count the API has
    WallTime created;
    WallTime last_observed;
    WallTime last_written;
  };
  using Lru = std::list<Entry>;  // most recently seen first

  EventWrite Create(const EventPod& pod, std::string_view note, WallTime now, EventKind kind,
                    Status* error);
  EventKind Resolved(EventKind kind) const;
  static std::string Key(const EventPod& pod, EventKind kind);
  // PATCHes the series; 404 (the Event expired): creates a new one.
  EventWrite Update(Lru::iterator it, WallTime now, Status* error);

  KubeClient& client_;
  EventRecorderOptions options_;
  Lru lru_;
  std::unordered_map<std::string_view, Lru::iterator> index_;  // keys point into entries
};

}  // namespace schedext::cluster

#endif  // SCHEDEXT_CLUSTER_EVENT_RECORDER_H_
