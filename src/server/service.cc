#include "schedext/server/service.h"

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "schedext/wire/encoder.h"
#include "server/request_log.h"

namespace schedext::server {
namespace {

// The usage of a node no pod counts against (yet).
const model::NodeUsage kNoUsage;

constexpr std::string_view kNoDirectory =
    "node-cache mode (NodeNames) needs schedext's cluster cache, which is not running: "
    "configure the extender with nodeCacheCapable: false, or give schedext cluster access";

int HttpStatusFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

}  // namespace

ExtenderService::ExtenderService(std::vector<std::shared_ptr<const pipeline::Profile>> profiles,
                                 size_t default_profile, cluster::ClusterCache* cache,
                                 cluster::PodBinder* binder, Metrics* metrics,
                                 std::function<void(const model::PodInfo& pod,
                                                    std::string_view node)>
                                     on_bound)
    : profiles_(std::move(profiles)),
      default_profile_(default_profile),
      cache_(cache),
      binder_(binder),
      metrics_(metrics),
      bad_request_log_(std::make_unique<LogLimiter>(
          LogLimiter::Options{.what = "warnings about bad requests"}, metrics)),
      failed_request_log_(std::make_unique<LogLimiter>(
          LogLimiter::Options{.what = "warnings about failed requests"}, metrics)) {
  pipeline::BindCycleOptions bind;
  bind.cache = cache;
  bind.binder = binder;
  bind.on_bound = std::move(on_bound);
  bind_cycle_ = std::make_unique<pipeline::BindCycle>(std::move(bind));
}

ExtenderService::~ExtenderService() = default;

int ExtenderService::FindProfile(std::string_view name) const {
  if (name.empty()) {
    return static_cast<int>(default_profile_);
  }
  for (size_t i = 0; i < profiles_.size(); ++i) {
    if (profiles_[i]->name() == name) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

int ExtenderService::Handle(Verb verb, size_t profile_index, const wire::RequestBuffer& body,
                            Scratch& scratch, std::string& out, RequestSummary& summary) const {
  const auto start = std::chrono::steady_clock::now();
  out.clear();
  scratch.reply_splices.clear();
  summary = RequestSummary{};
  const pipeline::Profile& profile = *profiles_[profile_index];
  int http_status = 500;
  switch (verb) {
    case Verb::kFilter:
      http_status = Filter(profile, body, scratch, out, summary);
      break;
    case Verb::kPrioritize:
      http_status = Prioritize(profile, body, scratch, out, summary);
      break;
    case Verb::kPreempt:
      http_status = Preempt(profile, body, scratch, out, summary);
      break;
    case Verb::kBind:
      http_status = Bind(profile, body, scratch, out, summary);
      break;
    case Verb::kExplain:
      if (explain_ != nullptr) {
        http_status = explain_->Handle(*this, profile, body, scratch, out, summary);
      } else {
        summary.error = "explain is not served here";
        wire::AppendErrorBody(summary.error, out);
        http_status = 404;
      }
      break;
  }
  if (observer_ != nullptr) {
    observer_->OnExchange(HandledExchange{.verb = verb,
                                          .profile = profile,
                                          .body = body,
                                          .scratch = scratch,
                                          .reply = out,
                                          .http_status = http_status,
                                          .start = start});
  }
  if (cache_ != nullptr) {
    // The reply is encoded: nothing points into the snapshot any more, and an
    // idle worker must not pin an old version of the cluster.
    cache_->Release(scratch.snapshot);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Outcome outcome = Outcome::kOk;
  if (http_status == 400) {
    outcome = Outcome::kBadRequest;
  } else if (http_status != 200 || !summary.error.empty()) {
    outcome = Outcome::kError;
  }
  if (metrics_ != nullptr) {
    metrics_->RecordRequest(profile_index, verb, outcome, seconds, summary.nodes_in);
    if (summary.failed + summary.unresolvable > 0) {
      metrics_->RecordRejected(profile_index, summary.failed, summary.unresolvable);
    }
  }
  if (outcome == Outcome::kOk) {
    if (spdlog::should_log(spdlog::level::debug)) {
      spdlog::debug("{} profile={} pod={}/{} nodes={} out={} status={} duration_us={}",
                    VerbName(verb), LogEscape(profile.name()), LogEscape(summary.pod_namespace),
                    LogEscape(summary.pod_name), summary.nodes_in, summary.nodes_out, http_status,
                    static_cast<int64_t>(seconds * 1e6));
    }
  } else {
    // The scheduler discards the body of a non-200 reply, so the log is the only
    // place an operator can read why. A client can cause these at will, so they
    // are rate-limited; malformed requests and failed ones have separate
    // budgets, so a flood of garbage does not hide a failing bind.
    LogLimiter& log = outcome == Outcome::kBadRequest ? *bad_request_log_ : *failed_request_log_;
    if (log.Allow()) {
      spdlog::warn("{} profile={} pod={}/{} nodes={} status={} duration_us={} error: {}",
                   VerbName(verb), LogEscape(profile.name()), LogEscape(summary.pod_namespace),
                   LogEscape(summary.pod_name), summary.nodes_in, http_status,
                   static_cast<int64_t>(seconds * 1e6),
                   LogEscape(summary.error, kLogMessageMaxBytes));
    }
  }
  return http_status;
}

bool ExtenderService::DecodeExtenderArgs(const pipeline::Profile& profile,
                                         const wire::RequestBuffer& body, Scratch& s,
                                         std::string& out, RequestSummary& summary,
                                         void (*append_error)(std::string_view,
                                                              std::string&)) const {
  const Status st = s.decoder.DecodeExtenderArgs(body, s.args, profile.node_fields());
  if (!st.ok()) {
    summary.error = st.message();
    append_error(summary.error, out);
    return false;
  }
  summary.pod_namespace = s.args.pod.namespace_name;
  summary.pod_name = s.args.pod.name;
  summary.nodes_in = s.args.node_names.size();
  if (summary.nodes_in > 0 && !s.args.has_pod) {
    summary.error = "decode ExtenderArgs: /Pod: missing or null, but nodes were sent";
    append_error(summary.error, out);
    return false;
  }
  return true;
}

Status ExtenderService::LoadSnapshot(Scratch& s) const {
  s.snapshot.reset();
  if (cache_ == nullptr) {
    return OkStatus();
  }
  s.snapshot = cache_->snapshot();
  if (!s.snapshot->synced()) {
    return UnavailableError("node cache not synced");
  }
  return OkStatus();
}

Status ExtenderService::ResolveNodes(Scratch& s) const {
  s.nodes.clear();
  s.node_index.clear();
  if (s.args.mode == wire::NodeMode::kFullNodes) {
    SCHEDEXT_RETURN_IF_ERROR(LoadSnapshot(s));
    for (uint32_t i = 0; i < s.args.nodes.size(); ++i) {
      model::NodeInfo& node = s.args.nodes[i];
      if (s.snapshot != nullptr) {
        const model::NodeUsage* usage = s.snapshot->FindUsage(node.name);
        node.usage = usage != nullptr ? usage : &kNoUsage;
      }
      s.nodes.push_back(&node);
      s.node_index.push_back(i);
    }
    return OkStatus();
  }
  if (s.args.node_names.empty()) {
    return OkStatus();
  }
  if (cache_ == nullptr) {
    return UnavailableError(std::string(kNoDirectory));
  }
  SCHEDEXT_RETURN_IF_ERROR(cache_->Resolve(s.args.node_names, s.resolved, s.snapshot));
  for (uint32_t i = 0; i < s.resolved.size(); ++i) {
    if (s.resolved[i] != nullptr) {
      s.nodes.push_back(s.resolved[i]);
      s.node_index.push_back(i);
    }
  }
  return OkStatus();
}

int ExtenderService::Filter(const pipeline::Profile& profile, const wire::RequestBuffer& body,
                            Scratch& s, std::string& out, RequestSummary& summary) const {
  if (!DecodeExtenderArgs(profile, body, s, out, summary, wire::AppendFilterError)) {
    return 400;
  }
  s.passing.clear();
  s.failed.clear();
  s.unresolvable.clear();
  wire::FilterResultView result;
  result.mode = s.args.mode;
  if (summary.nodes_in == 0) {
    wire::AppendFilterResult(result, out);
    return 200;
  }
  Status st = ResolveNodes(s);
  if (!st.ok()) {
    // 200 with Error: the scheduler then fails this attempt and retries the pod
    // with back-off, without preempting anything.
    summary.error = "filter: " + st.message();
    wire::AppendFilterError(summary.error, out);
    return 200;
  }
  s.state.Clear();
  st = profile.RunFilters(s.args.pod, s.nodes, s.state, s.filter);
  if (!st.ok()) {
    summary.error = "filter: " + st.message();
    wire::AppendFilterError(summary.error, out);
    return 200;
  }
  const bool full = s.args.mode == wire::NodeMode::kFullNodes;
  for (uint32_t k : s.filter.passed) {
    const uint32_t i = s.node_index[k];
    s.passing.push_back(full ? s.args.nodes[i].raw_json : s.args.node_names[i]);
  }
  for (const auto& r : s.filter.failed) {
    s.failed.push_back({s.args.node_names[s.node_index[r.node]], r.reason});
  }
  for (const auto& r : s.filter.unresolvable) {
    s.unresolvable.push_back({s.args.node_names[s.node_index[r.node]], r.reason});
  }
  if (s.nodes.size() != s.args.node_names.size()) {
    // Names the directory does not know: listed so that every input node is in
    // exactly one of the three sets (their order among the unresolvable ones
    // follows the request).
    for (uint32_t i = 0; i < s.resolved.size(); ++i) {
      if (s.resolved[i] == nullptr) {
        s.unresolvable.push_back({s.args.node_names[i], kUnknownNodeReason});
      }
    }
  }
  result.passing = s.passing;
  // Every name in the result is a request name: their literals are the body's bytes.
  result.names_quoted = s.args.names_quoted;
  result.failed = s.failed;
  result.unresolvable = s.unresolvable;
  wire::AppendFilterResult(result, out, s.splice_replies ? &s.reply_splices : nullptr);
  summary.nodes_out = s.passing.size();
  summary.failed = s.failed.size();
  summary.unresolvable = s.unresolvable.size();
  return 200;
}

int ExtenderService::Prioritize(const pipeline::Profile& profile,
                                const wire::RequestBuffer& body, Scratch& s, std::string& out,
                                RequestSummary& summary) const {
  if (!DecodeExtenderArgs(profile, body, s, out, summary, wire::AppendErrorBody)) {
    return 400;
  }
  s.host_scores.clear();
  if (summary.nodes_in == 0) {
    wire::AppendHostPriorityList(s.host_scores, out);
    return 200;
  }
  Status st = ResolveNodes(s);
  if (st.ok()) {
    s.score.state.Clear();
    st = profile.RunScorers(s.args.pod, s.nodes, s.score, s.scores);
  }
  if (!st.ok()) {
    // The list has no error field; a non-200 makes the scheduler ignore our
    // scores for this pod rather than trust zeros.
    summary.error = "prioritize: " + st.message();
    wire::AppendErrorBody(summary.error, out);
    return HttpStatusFor(st) == 400 ? 500 : HttpStatusFor(st);
  }
  // One entry per input node, in input order; unknown names score 0.
  s.host_scores.resize(s.args.node_names.size());
  for (size_t i = 0; i < s.host_scores.size(); ++i) {
    s.host_scores[i] = {s.args.node_names[i], 0};
  }
  for (size_t k = 0; k < s.nodes.size(); ++k) {
    s.host_scores[s.node_index[k]].score = s.scores[k];
  }
  wire::KeepScoresAboveLowest(s.host_scores);
  wire::AppendHostPriorityList(s.host_scores, out, s.args.names_quoted);
  summary.nodes_out = s.nodes.size();
  return 200;
}

int ExtenderService::Preempt(const pipeline::Profile& profile, const wire::RequestBuffer& body,
                             Scratch& s, std::string& out, RequestSummary& summary) const {
  s.victims.clear();
  Status st = s.decoder.DecodePreemptionArgs(body, s.preemption);
  if (!st.ok()) {
    summary.error = st.message();
    wire::AppendErrorBody(summary.error, out);
    return 400;
  }
  const int status = DecidePreemption(profile, s, summary);
  if (status != 200) {
    wire::AppendErrorBody(summary.error, out);
    return status;
  }
  const auto candidates = s.preemption.candidates();
  // UIDs first (the entries hold spans into this vector, so it must not grow
  // after they are taken).
  s.uids.clear();
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (!s.decisions[i].keep) {
      continue;
    }
    for (size_t v = 0; v < candidates[i].pods.size(); ++v) {
      if (s.decisions[i].needed[v] != 0) {
        s.uids.push_back(candidates[i].pods[v].uid);
      }
    }
  }
  size_t offset = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (!s.decisions[i].keep) {
      continue;
    }
    size_t count = 0;
    for (uint8_t needed : s.decisions[i].needed) {
      count += needed != 0 ? 1 : 0;
    }
    s.victims.push_back({candidates[i].node,
                         std::span<const std::string_view>(s.uids.data() + offset, count),
                         candidates[i].num_pdb_violations});
    offset += count;
  }
  wire::AppendPreemptionResult(s.victims, out);
  summary.nodes_out = s.victims.size();
  return 200;
}

int ExtenderService::DecidePreemption(const pipeline::Profile& profile, Scratch& s,
                                      RequestSummary& summary) const {
  const auto candidates = s.preemption.candidates();
  summary.pod_namespace = s.preemption.pod.namespace_name;
  summary.pod_name = s.preemption.pod.name;
  summary.nodes_in = candidates.size();
  // s.decisions keeps its entries (and their capacity) for the next request:
  // only the first candidates().size() are this request's.
  s.candidates.clear();
  if (candidates.empty()) {
    return 200;
  }
  if (!s.preemption.has_pod) {
    summary.error = "decode ExtenderPreemptionArgs: /Pod: missing or null";
    return 400;
  }
  // Preemption args carry node names only, in both modes: the node objects come
  // from the cluster cache when there is one. Without it the candidates cannot
  // be re-checked and pass unchanged.
  s.resolved.assign(candidates.size(), nullptr);
  Status st = LoadSnapshot(s);
  if (!st.ok()) {
    summary.error = "preempt: " + st.message();
    return HttpStatusFor(st) == 400 ? 500 : HttpStatusFor(st);
  }
  if (s.snapshot != nullptr) {
    for (size_t i = 0; i < candidates.size(); ++i) {
      s.resolved[i] = s.snapshot->FindNode(candidates[i].node);
      if (s.preemption.full_pods) {
        continue;
      }
      // MetaVictims carry UIDs only: the pods (their requests, priority) come
      // from the cache; a UID it does not know stays a bare UID.
      for (model::PodInfo& victim : s.preemption.nodes[i].pods) {
        if (const model::PodInfo* known = s.snapshot->FindPod(victim.uid)) {
          victim = *known;
        }
      }
    }
  }
  s.candidates.resize(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) {
    s.candidates[i] = {s.resolved[i], candidates[i].pods};
  }
  s.state.Clear();
  st = profile.RunPreempt(s.preemption.pod, s.candidates, s.state, s.decisions);
  if (!st.ok()) {
    summary.error = "preempt: " + st.message();
    return 500;
  }
  return 200;
}

int ExtenderService::Bind(const pipeline::Profile& profile, const wire::RequestBuffer& body,
                          Scratch& s, std::string& out, RequestSummary& summary) const {
  Status st = s.decoder.DecodeBindingArgs(body, s.binding);
  if (!st.ok()) {
    summary.error = st.message();
    wire::AppendBindingResult(summary.error, out);
    return 400;
  }
  const wire::BindingArgsView& b = s.binding;
  summary.pod_namespace = b.pod_namespace;
  summary.pod_name = b.pod_name;
  summary.nodes_in = 1;
  const char* missing = b.pod_name.empty()        ? "PodName"
                        : b.pod_namespace.empty() ? "PodNamespace"
                        : b.node.empty()          ? "Node"
                                                  : nullptr;
  if (missing != nullptr) {
    summary.error = std::string("decode ExtenderBindingArgs: /") + missing + ": must be set";
    wire::AppendBindingResult(summary.error, out);
    return 400;
  }
  st = bind_cycle_->Run(profile,
                        {b.pod_namespace, b.pod_name, b.pod_uid, b.node, s.bind_not_after});
  if (!st.ok()) {
    summary.error = st.message();
  } else {
    summary.nodes_out = 1;
  }
  wire::AppendBindingResult(summary.error, out);
  return 200;
}

}  // namespace schedext::server
