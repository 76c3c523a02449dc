// Recorder: writes a sample of the verbs' real traffic to files, so that
// `schedext replay` can run it again through another configuration
// (server.record in the configuration; off unless server.record.dir is set).
//
// Each record is one JSON line (record/record_file.h has the format): verb,
// profile, HTTP status, latency, the request and reply bodies, and for the
// filter and prioritize verbs what the cluster cache lent the request: in
// node-cache mode the node objects it resolved the names to, and in both modes
// the usage it counted on each node, with the stateful policies' per-node
// state (GpuShare's devices), and what the profile's stateful policies saw of
// their own sources (NodeLoad's samples and recent binds); for preempt the
// candidate nodes and the victims the cache resolved. A record replays
// without the cluster.
//
// The request thread only samples and enqueues: Sample() is a relaxed atomic
// counter and checks of the body sizes against maxBytes and of the queue's
// length and bytes, all before anything is copied (a full-mode body can be
// 170 MB); a sampled request then copies its body and reply and keeps the
// cache snapshot its nodes point into alive (a pointer copy) until the writer
// thread has serialised them. The queue is bounded in entries and bytes; when
// the writer falls behind, new records are dropped and counted
// (schedext_record_dropped_total{reason="queue_full"}), never waited for. A
// record above maxBytes is dropped (reason="too_large"): on the request
// thread when its bodies alone exceed it, else by the writer once encoded.
// Files rotate at maxBytes each; beyond maxFiles the oldest recording file of
// the directory is deleted.
//
// Thread-safety: Sample, Enqueue, stats and AppendMetrics from any thread.
#ifndef SCHEDEXT_RECORD_RECORDER_H_
#define SCHEDEXT_RECORD_RECORDER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "schedext/config/config.h"
#include "schedext/model/node_info.h"
#include "schedext/model/pod_info.h"
#include "schedext/policy/node_accounting.h"
#include "schedext/server/service.h"
#include "schedext/status.h"

namespace schedext::policy {
class CapturedState;   // recorded_state.h
class NodeStateCodec;  // recorded_state.h
}  // namespace schedext::policy

namespace schedext::record {

struct RecorderOptions {
  config::RecordConfig config;
  // Bounds of the queue between request threads and the writer.
  size_t queue_entries = 256;
  size_t queue_bytes = size_t{64} << 20;
  // Test seams: the clock of the records' time stamps and file names, and a
  // hook the writer calls before each record (a test can hold it there to
  // fill the queue).
  std::function<std::chrono::system_clock::time_point()> now;
  std::function<void()> before_write;
  // The cache's accountings, by slot (PolicyHost::accountings()): the node
  // states of those that implement policy::NodeStateCodec are recorded with
  // each node's usage.
  std::vector<std::shared_ptr<const policy::NodeAccounting>> accountings;
};

// One exchange, as the service hands it over.
struct Exchange {
  std::string_view verb;  // "filter", ... (static text)
  std::string profile;
  int status = 0;
  int64_t latency_micros = 0;
  std::string request;
  std::string reply;
  // Keeps what `nodes` and `usage` point into alive (the cache snapshot).
  std::shared_ptr<const void> snapshot;
  // Node-cache mode: per request node, the node the cache resolved it to
  // (nullptr: unknown to schedext). Empty in full-node mode.
  std::vector<const model::NodeInfo*> nodes;
  // Full-node mode: per request node, the usage the cache counted on it
  // (nullptr: no cache). In node-cache mode each node's own usage is used.
  std::vector<const model::NodeUsage*> usage;
  // preempt, node-cache mode: the victims the cache resolved (MetaVictims
  // name UIDs only), pointing into the snapshot.
  std::vector<const model::PodInfo*> victims;
  // What each of the profile's policy::RequestStateRecorder policies saw,
  // by policy name (NodeLoad's samples and recent binds).
  std::vector<std::pair<std::string, std::shared_ptr<const policy::CapturedState>>> policy_states;
};

struct RecorderStats {
  uint64_t recorded = 0;             // records written
  uint64_t dropped_queue_full = 0;   // sampled, but the queue was full
  uint64_t dropped_too_large = 0;    // a record above maxBytes
  uint64_t dropped_write_error = 0;  // the file could not be written
  uint64_t files_deleted = 0;        // oldest files removed for maxFiles
  uint64_t bytes_written = 0;
};

class Recorder final : public server::ExchangeObserver {
 public:
  // Creates the directory if needed and starts the writer thread.
  static StatusOr<std::unique_ptr<Recorder>> Start(RecorderOptions options);
  // Writes what is queued, then stops the writer.
  ~Recorder() override;
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Whether to record this request of `verb`, whose request and reply bodies
  // are `body_bytes` together (the least its record takes): configured verbs
  // only, at the sample rate (deterministic: over n requests, floor(n × rate)
  // are taken), and only when `body_bytes` is within maxBytes and the queue
  // has room for them (else counted as dropped: too_large, queue_full).
  bool Sample(std::string_view verb, size_t body_bytes);
  // Queues a sampled exchange; never blocks on the writer.
  void Enqueue(Exchange exchange);
  // The service's hook (ExtenderService::SetObserver): samples the exchange
  // and enqueues a copy of what replay needs (record/service_record.cc).
  void OnExchange(const server::HandledExchange& exchange) override;

  RecorderStats stats() const;
  // schedext_record_* series in the Prometheus text format.
  void AppendMetrics(std::string& out) const;
  // Waits until everything queued so far is written (tests, shutdown).
  void Flush();

  const std::string& dir() const { return options_.config.dir; }

 private:
  explicit Recorder(RecorderOptions options);
  // Node-state codecs by slot (null: not recorded), from options_.accountings.
  std::vector<const policy::NodeStateCodec*> codecs_;
  void Run();
  void Write(const Exchange& exchange);
  Status OpenNextFile();

  const RecorderOptions options_;
  std::atomic<uint64_t> seen_{0};
  std::atomic<size_t> pending_{0};        // queue_.size(), for Sample
  std::atomic<size_t> pending_bytes_{0};  // queue_bytes_, for Sample

  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable drained_;
  std::deque<Exchange> queue_;  // guarded by mu_
  size_t queue_bytes_ = 0;      // guarded by mu_
  bool writing_ = false;        // guarded by mu_
  bool stop_ = false;           // guarded by mu_

  // Writer thread only.
  int fd_ = -1;
  size_t file_bytes_ = 0;
  uint64_t sequence_ = 0;

  std::atomic<uint64_t> recorded_{0};
  std::atomic<uint64_t> dropped_queue_full_{0};
  std::atomic<uint64_t> dropped_too_large_{0};
  std::atomic<uint64_t> dropped_write_error_{0};
  std::atomic<uint64_t> files_deleted_{0};
  std::atomic<uint64_t> bytes_written_{0};
  std::thread thread_;
};

}  // namespace schedext::record

#endif  // SCHEDEXT_RECORD_RECORDER_H_
