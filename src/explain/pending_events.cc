#include "schedext/explain/pending_events.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

#include <spdlog/spdlog.h>

#include "schedext/cluster/cache.h"
#include "schedext/model/owned.h"

namespace schedext::explain {
namespace {

using pipeline::ExplainedNode;
using policy::Verdict;

// How far a node is, from the "short by <N><unit>" that ends a detail
// (GpuShare's, HamiVgpu's, NodeResourcesFit's). Amounts compare only within
// one group: the same unit, and for a detail "<resource>: ..." the same
// resource (a node short of 1 cpu is not nearer than one short of 2 GiB).
struct Shortfall {
  std::string_view resource;
  std::string_view unit;
  int64_t amount = std::numeric_limits<int64_t>::max();  // no "short by": last
};

Shortfall ShortBy(std::string_view detail) {
  constexpr std::string_view kMarker = "short by ";
  const size_t at = detail.rfind(kMarker);
  if (at == std::string_view::npos) {
    return {};
  }
  const char* first = detail.data() + at + kMarker.size();
  const char* last = detail.data() + detail.size();
  int64_t value = 0;
  const auto [ptr, ec] = std::from_chars(first, last, value);
  if (ec != std::errc() || ptr == first) {
    return {};
  }
  Shortfall out;
  out.amount = value;
  out.unit = std::string_view(ptr, static_cast<size_t>(last - ptr));
  const size_t colon = detail.substr(0, at).find(':');
  if (colon != std::string_view::npos) {
    out.resource = detail.substr(0, colon);
  }
  return out;
}

struct Rank {
  size_t rejections;
  int unresolvable;
  int decisive;
  Shortfall short_by;
  std::string_view name;
  size_t index;
  auto Key() const {
    return std::tie(rejections, unresolvable, decisive, short_by.resource, short_by.unit,
                    short_by.amount, name);
  }
};

// "gpu-b (GpuShare: needs ...; NodeResourcesFit: cpu: ...)".
std::string NodeText(std::string_view name, const ExplainedNode& node) {
  std::string text(name);
  text += " (";
  bool first = true;
  for (const pipeline::ExplainedVerdict& v : node.filters) {
    if (v.code == Verdict::Code::kSuccess) continue;
    if (!first) text += "; ";
    first = false;
    text += v.policy;
    text += ": ";
    text += v.detail.empty() ? v.reason : v.detail;
  }
  text += ")";
  return text;
}

}  // namespace

std::string UnschedulableNote(std::string_view profile,
                              std::span<const std::string_view> node_names,
                              const pipeline::Explanation& explanation, size_t unknown,
                              size_t max_listed) {
  std::vector<Rank> ranks;
  ranks.reserve(explanation.nodes.size());
  for (size_t k = 0; k < explanation.nodes.size(); ++k) {
    const ExplainedNode& node = explanation.nodes[k];
    if (node.decisive < 0) {
      return {};  // a node fits now: nothing to say
    }
    size_t rejections = 0;
    for (const pipeline::ExplainedVerdict& v : node.filters) {
      rejections += v.code != Verdict::Code::kSuccess ? 1 : 0;
    }
    ranks.push_back({rejections,
                     node.code == Verdict::Code::kUnschedulable ? 0 : 1,
                     node.decisive,
                     ShortBy(node.detail()),
                     node_names[k],
                     k});
  }
  std::sort(ranks.begin(), ranks.end(),
            [](const Rank& a, const Rank& b) { return a.Key() < b.Key(); });

  const size_t total = explanation.nodes.size() + unknown;
  std::string note = "0/" + std::to_string(total) + " nodes fit profile " + std::string(profile) +
                     ".";
  // What the tail ("N more nodes rejected: ...") may need at most, so that
  // listing a node never pushes it past the limit.
  constexpr size_t kTailReserve = 256;
  size_t listed = 0;
  for (; listed < ranks.size() && listed < max_listed; ++listed) {
    const Rank& r = ranks[listed];
    const std::string text = NodeText(r.name, explanation.nodes[r.index]);
    const std::string_view lead = listed == 0 ? " Nearest: " : ", ";
    if (note.size() + lead.size() + text.size() + 1 + kTailReserve > cluster::kEventNoteLimit) {
      break;
    }
    note += lead;
    note += text;
  }
  if (listed > 0) note += ".";

  const size_t rest = ranks.size() - listed;
  if (rest + unknown > 0) {
    // Counted by the policy that rejects each node first (the verbs' reason),
    // in the profile's order.
    std::map<int, std::pair<std::string_view, size_t>> by_policy;  // decisive → name, count
    for (size_t i = listed; i < ranks.size(); ++i) {
      const ExplainedNode& node = explanation.nodes[ranks[i].index];
      auto& [policy, count] = by_policy[ranks[i].decisive];
      policy = node.filters[node.decisive].policy;
      ++count;
    }
    std::string tail = " ";
    tail += std::to_string(rest + unknown);
    tail += listed > 0 ? " more" : "";
    tail += rest + unknown == 1 ? " node" : " nodes";
    tail += " rejected: ";
    bool first = true;
    for (const auto& [decisive, entry] : by_policy) {
      tail += first ? "" : ", ";
      first = false;
      tail += entry.first;
      tail += ' ';
      tail += std::to_string(entry.second);
    }
    if (unknown > 0) {
      tail += std::string(first ? "" : ", ") + "unknown to schedext " + std::to_string(unknown);
    }
    tail += ".";
    if (note.size() + tail.size() > cluster::kEventNoteLimit) {
      tail.resize(cluster::kEventNoteLimit - note.size());
    }
    note += tail;
  }
  return note;
}

struct PendingEventWriter::Job {
  const pipeline::Profile* profile = nullptr;
  std::unique_ptr<model::OwnedPod> pod;
  std::shared_ptr<const cluster::Snapshot> snapshot;
  std::vector<const model::NodeInfo*> nodes;  // names mode: into `snapshot`
  std::vector<std::string> names;             // full-node mode: looked up later
  size_t unknown = 0;
  // Set for a preempt exchange (the fields above are then unused).
  std::unique_ptr<PreemptionExplanation> preemption;
};

PendingEventWriter::PendingEventWriter(cluster::EventRecorder& recorder,
                                       PendingEventOptions options)
    : recorder_(recorder), options_(std::move(options)) {
  if (!options_.now) {
    options_.now = [] { return std::chrono::system_clock::now(); };
  }
}

PendingEventWriter::~PendingEventWriter() { Stop(); }

void PendingEventWriter::Start() {
  if (!thread_.joinable()) {
    thread_ = std::thread([this] { Run(); });
  }
}

void PendingEventWriter::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
  std::lock_guard<std::mutex> lock(mu_);
  queue_.clear();
}

namespace {

// Whether the preempt verb answered something other than what the scheduler
// proposed: a candidate dropped or a victim spared. Reads only the decisions,
// so that an unchanged answer costs nothing more.
bool PreemptionChanged(const server::Scratch& s) {
  for (size_t i = 0; i < s.candidates.size() && i < s.decisions.size(); ++i) {
    const pipeline::PreemptDecision& d = s.decisions[i];
    if (s.candidates[i].node == nullptr) continue;
    if (!d.keep) return true;
    for (uint8_t needed : d.needed) {
      if (needed == 0) return true;
    }
  }
  return false;
}

}  // namespace

bool PendingEventWriter::Admit(const pipeline::Profile& profile) {
  if (std::find(options_.profiles.begin(), options_.profiles.end(), &profile) ==
      options_.profiles.end()) {
    return false;
  }
  if (options_.may_write && !options_.may_write()) {
    dropped_[static_cast<size_t>(EventDrop::kNotLeader)].fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  // Checked before copying anything: a full queue costs one lock.
  std::lock_guard<std::mutex> lock(mu_);
  if (queue_.size() >= options_.queue_size || stopping_) {
    dropped_[static_cast<size_t>(EventDrop::kQueueFull)].fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  return true;
}

void PendingEventWriter::Enqueue(std::unique_ptr<Job> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.size() >= options_.queue_size || stopping_) {
      dropped_[static_cast<size_t>(EventDrop::kQueueFull)].fetch_add(1,
                                                                     std::memory_order_relaxed);
      return;  // `job` (and its snapshot reference) freed here, rarely
    }
    queue_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void PendingEventWriter::OnExchange(const server::HandledExchange& exchange) {
  const server::Scratch& s = exchange.scratch;
  if (exchange.verb == server::Verb::kPreempt) {
    // Preempt is rare (after a failed cycle): the explanation is copied here,
    // its note written on the writer thread.
    if (exchange.http_status != 200 || !PreemptionChanged(s) || !Admit(exchange.profile)) {
      return;
    }
    auto job = std::make_unique<Job>();
    job->profile = &exchange.profile;
    job->preemption = std::make_unique<PreemptionExplanation>(ExplainPreemption(
        exchange.profile, s.preemption, s.candidates,
        std::span<const pipeline::PreemptDecision>(s.decisions.data(), s.candidates.size())));
    Enqueue(std::move(job));
    return;
  }
  // Every node the filter answered for was rejected: no passing node, no
  // request error (which leaves failed and unresolvable empty), and at least
  // one node schedext knows.
  if (exchange.verb != server::Verb::kFilter || exchange.http_status != 200 ||
      !s.passing.empty() || s.failed.size() + s.unresolvable.size() == 0 || s.nodes.empty() ||
      s.snapshot == nullptr) {
    return;
  }
  if (!Admit(exchange.profile)) {
    return;
  }
  auto job = std::make_unique<Job>();
  job->profile = &exchange.profile;
  job->pod = std::make_unique<model::OwnedPod>(s.args.pod);
  job->snapshot = s.snapshot;
  job->unknown = s.args.node_names.size() - s.nodes.size();
  if (s.args.mode == wire::NodeMode::kFullNodes) {
    // The request's node objects die with the request.
    job->names.reserve(s.nodes.size());
    for (uint32_t i : s.node_index) job->names.emplace_back(s.args.node_names[i]);
  } else {
    job->nodes = s.nodes;
  }
  Enqueue(std::move(job));
}

size_t PendingEventWriter::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

void PendingEventWriter::Count(cluster::EventWrite write) {
  switch (write) {
    case cluster::EventWrite::kCreated:
      created_.fetch_add(1, std::memory_order_relaxed);
      break;
    case cluster::EventWrite::kUpdated:
      updated_.fetch_add(1, std::memory_order_relaxed);
      break;
    case cluster::EventWrite::kCounted:
      break;
    case cluster::EventWrite::kRateLimited:
      dropped_[static_cast<size_t>(EventDrop::kRateLimited)].fetch_add(1,
                                                                       std::memory_order_relaxed);
      break;
    case cluster::EventWrite::kFailed:
      dropped_[static_cast<size_t>(EventDrop::kApiError)].fetch_add(1, std::memory_order_relaxed);
      break;
  }
}

void PendingEventWriter::Write(const cluster::EventPod& pod, std::string_view note,
                               cluster::EventKind kind) {
  Status error;
  const cluster::EventWrite write = recorder_.Record(pod, note, options_.now(), &error, kind);
  Count(write);
  if (write == cluster::EventWrite::kFailed) {
    spdlog::warn("event for pod {}/{}: {}", pod.namespace_name, pod.name, error.message());
  }
}

void PendingEventWriter::Process(Job& job) {
  if (job.preemption != nullptr) {
    const PreemptionExplanation& e = *job.preemption;
    const std::string note = PreemptionNote(e, options_.max_listed);
    if (!note.empty()) {
      Write({e.pod_namespace, e.pod_name, e.pod_uid}, note,
            {kPreemptionEventReason, kPreemptionEventType});
    }
    return;
  }
  if (!job.names.empty()) {
    job.nodes.clear();
    for (const std::string& name : job.names) {
      if (const model::NodeInfo* n = job.snapshot->FindNode(name)) {
        job.nodes.push_back(n);
      } else {
        ++job.unknown;
      }
    }
  }
  if (job.nodes.empty()) {
    return;
  }
  std::vector<std::string_view> names;
  names.reserve(job.nodes.size());
  for (const model::NodeInfo* n : job.nodes) names.push_back(n->name);
  const model::PodInfo& pod = job.pod->info();
  pipeline::Explanation explanation;
  job.profile->Explain(pod, job.nodes, pipeline::ExplainScoring::kPassing, explanation);
  const std::string note = UnschedulableNote(job.profile->name(), names, explanation, job.unknown,
                                             options_.max_listed);
  if (note.empty()) {
    return;
  }
  Write({std::string(pod.namespace_name), std::string(pod.name), std::string(pod.uid)}, note, {});
}

void PendingEventWriter::DrainForTest() {
  for (;;) {
    std::unique_ptr<Job> job;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (queue_.empty()) break;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    Process(*job);
  }
  const size_t sent = recorder_.Flush(options_.now());
  updated_.fetch_add(sent, std::memory_order_relaxed);
}

void PendingEventWriter::Run() {
  std::chrono::steady_clock::time_point last_flush;
  for (;;) {
    std::unique_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::seconds(1), [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      if (!queue_.empty()) {
        job = std::move(queue_.front());
        queue_.pop_front();
      }
    }
    if (job != nullptr) {
      Process(*job);
    }
    // Series whose repeats waited for the interval; Flush walks the whole
    // table, so at most once a second however busy the queue is.
    const auto now = std::chrono::steady_clock::now();
    if (now - last_flush >= std::chrono::seconds(1)) {
      last_flush = now;
      const size_t sent = recorder_.Flush(options_.now());
      updated_.fetch_add(sent, std::memory_order_relaxed);
    }
  }
}

void PendingEventWriter::AppendMetrics(std::string& out) const {
  out +=
      "# HELP schedext_events_dropped_total SchedextUnschedulable and SchedextPreemption events "
      "not written, by why.\n"
      "# TYPE schedext_events_dropped_total counter\n";
  static constexpr std::array<std::string_view, kEventDropCount> kReasons = {
      "queue_full", "not_leader", "rate_limited", "api_error"};
  for (size_t i = 0; i < kEventDropCount; ++i) {
    out += "schedext_events_dropped_total{reason=\"" + std::string(kReasons[i]) + "\"} " +
           std::to_string(dropped_[i].load(std::memory_order_relaxed)) + "\n";
  }
  out +=
      "# HELP schedext_events_written_total SchedextUnschedulable and SchedextPreemption event "
      "writes: new events and series updates.\n"
      "# TYPE schedext_events_written_total counter\n"
      "schedext_events_written_total{op=\"create\"} " +
      std::to_string(created_.load(std::memory_order_relaxed)) +
      "\n"
      "schedext_events_written_total{op=\"update\"} " +
      std::to_string(updated_.load(std::memory_order_relaxed)) + "\n";
}

std::unique_ptr<PendingEventWriter> NewPendingEventWriter(
    const config::Config& config, std::span<const std::shared_ptr<const pipeline::Profile>> profiles,
    cluster::ClusterConnection* connection) {
  if (connection == nullptr || connection->events() == nullptr) {
    return nullptr;
  }
  PendingEventOptions options;
  options.queue_size = static_cast<size_t>(config.cluster.events.queue_size);
  options.max_listed = static_cast<size_t>(config.cluster.events.nodes_listed);
  for (size_t i = 0; i < profiles.size() && i < config.profiles.size(); ++i) {
    if (config.profiles[i].events) {
      options.profiles.push_back(profiles[i].get());
    }
  }
  if (options.profiles.empty()) {
    return nullptr;
  }
  if (const cluster::LeaderElector* e = connection->elector()) {
    options.may_write = [e] { return e->IsLeader(); };
  }
  return std::make_unique<PendingEventWriter>(*connection->events(), std::move(options));
}

}  // namespace schedext::explain
