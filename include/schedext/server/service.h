// ExtenderService: the transport-free core of the server. Bytes in, bytes out:
// it decodes a request, resolves its nodes, runs the profile and encodes the
// reply, and returns the HTTP status to send.
//
// Status mapping (architecture §8): a semantically valid request answers 200,
// with failures in `Error` where the message has one (filter, bind); a body
// that does not decode answers 400 {"Error": ...}; an internal failure of
// prioritize or preempt (no Error field) answers 500, or 503 when the node
// directory is unavailable.
//
// Thread-safety: Handle may run concurrently on many threads, each with its
// own Scratch.
#ifndef SCHEDEXT_SERVER_SERVICE_H_
#define SCHEDEXT_SERVER_SERVICE_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "schedext/cluster/binder.h"
#include "schedext/cluster/cache.h"
#include "schedext/pipeline/bind_cycle.h"
#include "schedext/pipeline/profile.h"
#include "schedext/server/metrics.h"
#include "schedext/wire/decoder.h"
#include "schedext/wire/encoder.h"
#include "schedext/wire/messages.h"
#include "schedext/wire/request_buffer.h"

namespace schedext::server {

class LogLimiter;  // src/server/request_log.h

// The reason filter answers, in FailedAndUnresolvableNodes, for a node name
// the cluster cache does not know; explain and replay say the same.
inline constexpr std::string_view kUnknownNodeReason = "node(s) unknown to schedext";

// Per-worker scratch, reused across requests so that steady-state requests do
// not allocate.
struct Scratch {
  explicit Scratch(const wire::DecoderOptions& decoder_options = {}) : decoder(decoder_options) {}

  wire::RequestDecoder decoder;
  wire::ExtenderArgsView args;
  wire::PreemptionArgsView preemption;
  wire::BindingArgsView binding;
  // The request's known nodes and, per entry, its index in the request.
  std::vector<const model::NodeInfo*> nodes;
  std::vector<uint32_t> node_index;
  std::vector<const model::NodeInfo*> resolved;  // per request node; nullptr = unknown
  // The cluster snapshot of this request, loaded once; the pointers above may
  // point into it. Given back (ClusterCache::Release) when the request ends.
  std::shared_ptr<const cluster::Snapshot> snapshot;
  policy::RequestState state;
  pipeline::FilterOutcome filter;
  pipeline::ScoreScratch score;
  std::vector<int64_t> scores;
  std::vector<std::string_view> passing;
  std::vector<wire::FailedNode> failed;
  std::vector<wire::FailedNode> unresolvable;
  std::vector<wire::HostScore> host_scores;
  std::vector<pipeline::PreemptCandidate> candidates;
  std::vector<pipeline::PreemptDecision> decisions;
  std::vector<std::string_view> uids;
  std::vector<wire::MetaVictimsEntry> victims;
  // bind: when kube-scheduler stops waiting for this bind's answer (set by
  // the listener from the request's arrival and server.bindDeadlineMillis;
  // max: never). A bind that cannot be sent by then is refused unsent.
  std::chrono::steady_clock::time_point bind_not_after = std::chrono::steady_clock::time_point::max();
  // Set by a writer that sends replies in pieces (the HTTP listener): a
  // filter reply then leaves the passing nodes (full mode) or long runs of
  // passing names (names mode) in the request body and lists them in
  // reply_splices (wire::AppendFilterResult), so the reply is `out` with
  // reply_splices inserted and the body must live until it is written.
  // Otherwise reply_splices stays empty and `out` is the reply.
  bool splice_replies = false;
  std::vector<wire::ReplySplice> reply_splices;
};

// What the request log line and metrics need to know about one request.
struct RequestSummary {
  size_t nodes_in = 0;
  size_t nodes_out = 0;  // passing nodes (filter), scored (prioritize), kept (preempt)
  size_t failed = 0;        // filter: FailedNodes
  size_t unresolvable = 0;  // filter: FailedAndUnresolvableNodes
  std::string_view pod_namespace;
  std::string_view pod_name;
  std::string error;  // empty when the request succeeded
};

class ExtenderService;

// What one Handle call ran, as an ExchangeObserver sees it. Everything is
// borrowed from the call and valid only during OnExchange.
struct HandledExchange {
  Verb verb;
  const pipeline::Profile& profile;
  const wire::RequestBuffer& body;
  const Scratch& scratch;  // the decoded request, its resolved nodes and snapshot
  std::string_view reply;  // with scratch.reply_splices: the reply body
  int http_status;
  std::chrono::steady_clock::time_point start;  // when Handle began
};

// Watches the exchanges the service handles (record/'s Recorder). Called at
// the end of every Handle, on the request thread, before the cluster
// snapshot is released: it must be cheap (sample, then copy what it keeps)
// and must not throw.
class ExchangeObserver {
 public:
  virtual ~ExchangeObserver() = default;
  virtual void OnExchange(const HandledExchange& exchange) = 0;
};

// Several observers, told in the order added (main: the recorder, then the
// pending-pod events of explain/pending_events.h). Add before serving.
class ExchangeObservers final : public ExchangeObserver {
 public:
  void Add(ExchangeObserver* observer) { observers_.push_back(observer); }
  bool empty() const { return observers_.empty(); }
  void OnExchange(const HandledExchange& exchange) override {
    for (ExchangeObserver* o : observers_) o->OnExchange(exchange);
  }

 private:
  std::vector<ExchangeObserver*> observers_;
};

// A verb served by a layer above the server over the same request resolution
// as the extender verbs: explain/'s POST /<profile>/explain. Handle decodes
// and resolves through the service's DecodeExtenderArgs and ResolveNodes.
class VerbHandler {
 public:
  virtual ~VerbHandler() = default;
  virtual int Handle(const ExtenderService& service, const pipeline::Profile& profile,
                     const wire::RequestBuffer& body, Scratch& s, std::string& out,
                     RequestSummary& summary) const = 0;
};

class ExtenderService {
 public:
  // `profiles` non-empty; `default_profile` indexes it. `cache` and `binder`
  // may be null (no cluster connection); `metrics` may be null.
  // With a cache, names are resolved through its snapshots, full node objects
  // get their usage from it, preempt resolves victims' UIDs in it, and bind
  // reserves the pod on its node (with the profile's ReserveHook annotations)
  // before calling `binder`, which writes those annotations with the
  // Binding: the pipeline::BindCycle over these two runs the bind verb.
  // `on_bound` (may be empty) is told of every pod bound (policy::PolicyHost's
  // NotifyPodBound).
  ExtenderService(
      std::vector<std::shared_ptr<const pipeline::Profile>> profiles, size_t default_profile,
      cluster::ClusterCache* cache, cluster::PodBinder* binder, Metrics* metrics,
      std::function<void(const model::PodInfo& pod, std::string_view node)> on_bound = {});
  ~ExtenderService();

  // Index of the profile named `name`; "" means the default profile. -1 when
  // there is no such profile.
  int FindProfile(std::string_view name) const;
  const pipeline::Profile& profile(size_t index) const { return *profiles_[index]; }
  size_t profile_count() const { return profiles_.size(); }

  // Handles one request for profile `profile_index`: clears `out`, writes the
  // reply body into it and returns the HTTP status. Never throws on bad input.
  int Handle(Verb verb, size_t profile_index, const wire::RequestBuffer& body, Scratch& scratch,
             std::string& out, RequestSummary& summary) const;

  // Told of every exchange (server.record: record/recorder.h); null: none.
  // Set before serving; must outlive the service.
  void SetObserver(ExchangeObserver* observer) { observer_ = observer; }
  // Serves Verb::kExplain (explain/explain.h's ExplainVerb); null: explain
  // answers 404. Set before serving; must outlive the service.
  void SetExplain(const VerbHandler* explain) { explain_ = explain; }

  // The prologue shared by filter, prioritize and explain: decodes the
  // ExtenderArgs in `body` into s.args and fills the summary's pod and node
  // count. A body that does not decode, or that sends nodes without a pod, is
  // a bad request: its message goes to summary.error and, through
  // `append_error` (the verb's error shape), to `out`; then false (answer 400).
  // Full-mode nodes get the blocks the profile's policies read.
  bool DecodeExtenderArgs(const pipeline::Profile& profile, const wire::RequestBuffer& body,
                          Scratch& s, std::string& out, RequestSummary& summary,
                          void (*append_error)(std::string_view, std::string&)) const;
  // Fills s.nodes / s.node_index for the decoded ExtenderArgs: the request's
  // node objects (with the cache's usage), or the cache's nodes for names
  // (unknown names left out; s.resolved has one entry per name). Loads the
  // cluster snapshot into s.snapshot. kUnavailable before the cache has
  // synced, or for names without a cache.
  Status ResolveNodes(Scratch& s) const;
  // What preempt and explain share, on the ExtenderPreemptionArgs already
  // decoded into s.preemption: resolves the candidate nodes and MetaVictims
  // UIDs against the cluster snapshot (s.candidates) and runs the profile's
  // RunPreempt into s.decisions. Returns 200, or the HTTP status to answer
  // with the message in summary.error: 400 for candidates without a pod, 503
  // before the cache has synced, 500 for a policy's error. No candidates:
  // 200 with no decisions.
  int DecidePreemption(const pipeline::Profile& profile, Scratch& s,
                       RequestSummary& summary) const;

 private:
  int Filter(const pipeline::Profile& profile, const wire::RequestBuffer& body, Scratch& s,
             std::string& out, RequestSummary& summary) const;
  int Prioritize(const pipeline::Profile& profile, const wire::RequestBuffer& body, Scratch& s,
                 std::string& out, RequestSummary& summary) const;
  int Preempt(const pipeline::Profile& profile, const wire::RequestBuffer& body, Scratch& s,
              std::string& out, RequestSummary& summary) const;
  int Bind(const pipeline::Profile& profile, const wire::RequestBuffer& body, Scratch& s,
           std::string& out, RequestSummary& summary) const;
  // Loads the cluster snapshot into s.snapshot: kUnavailable before the cache
  // has synced; OK and null without a cache.
  Status LoadSnapshot(Scratch& s) const;

  std::vector<std::shared_ptr<const pipeline::Profile>> profiles_;
  size_t default_profile_;
  cluster::ClusterCache* cache_;
  cluster::PodBinder* binder_;
  Metrics* metrics_;
  std::unique_ptr<pipeline::BindCycle> bind_cycle_;
  // Rate limits of the request warnings (counted in metrics_).
  std::unique_ptr<LogLimiter> bad_request_log_;
  std::unique_ptr<LogLimiter> failed_request_log_;
  ExchangeObserver* observer_ = nullptr;
  const VerbHandler* explain_ = nullptr;
};

}  // namespace schedext::server

#endif  // SCHEDEXT_SERVER_SERVICE_H_
