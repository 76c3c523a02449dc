// Replay (record/replay.h): each record through the new configuration, the
// differences counted into a ReplayReport; its text and JSON forms are
// replay_report.cc.
#include "schedext/record/replay.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "schedext/policy/recorded_state.h"
#include "schedext/record/record_file.h"
#include "schedext/server/service.h"
#include "schedext/wire/decoder.h"
#include "schedext/wire/request_buffer.h"

namespace schedext::record {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kBindNotReplayed =
    "bind is not replayed (it has side effects: pod annotations and a Binding through the API "
    "server)";
const model::NodeUsage kNoUsage;

// What filter answered for one node.
struct NodeVerdict {
  std::string kind;  // "pass", "unschedulable", "unresolvable"
  std::string reason;
  bool operator==(const NodeVerdict&) const = default;
};

std::string Describe(const NodeVerdict& v) {
  return v.kind == "pass" ? "pass" : v.kind + " \"" + v.reason + "\"";
}

// filter's recorded reply: per node, or the Error.
bool ReadFilterReply(const Json& reply, std::map<std::string, NodeVerdict>& out,
                     std::string& error) {
  if (!reply.is_object()) {
    return false;
  }
  if (reply.contains("Error") && reply["Error"].is_string()) {
    error = reply["Error"].get<std::string>();
  }
  if (reply.contains("NodeNames") && reply["NodeNames"].is_array()) {
    for (const Json& n : reply["NodeNames"]) {
      out[n.get<std::string>()] = {"pass", ""};
    }
  }
  if (reply.contains("Nodes") && reply["Nodes"].is_object() && reply["Nodes"].contains("items") &&
      reply["Nodes"]["items"].is_array()) {
    for (const Json& n : reply["Nodes"]["items"]) {
      out[n["metadata"]["name"].get<std::string>()] = {"pass", ""};
    }
  }
  for (const auto& [key, kind] : {std::pair{"FailedNodes", "unschedulable"},
                                  std::pair{"FailedAndUnresolvableNodes", "unresolvable"}}) {
    if (reply.contains(key) && reply[key].is_object()) {
      for (const auto& [node, reason] : reply[key].items()) {
        out[node] = {kind, reason.is_string() ? reason.get<std::string>() : ""};
      }
    }
  }
  return true;
}

std::string Top(const std::vector<std::pair<std::string, int64_t>>& scores) {
  int64_t best = -1;
  for (const auto& [host, score] : scores) {
    best = std::max(best, score);
  }
  std::string out;
  for (const auto& [host, score] : scores) {
    if (score == best) {
      out += (out.empty() ? "" : ",") + host;
    }
  }
  return out;
}

// Every score less the lowest.
void AboveLowest(std::vector<std::pair<std::string, int64_t>>& scores) {
  int64_t lowest = 0;
  for (size_t i = 0; i < scores.size(); ++i) {
    lowest = i == 0 ? scores[i].second : std::min(lowest, scores[i].second);
  }
  for (auto& entry : scores) {
    entry.second -= lowest;
  }
}

int64_t MicrosSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                               start)
      .count();
}

// The new configuration's node-state codecs, with the slot each decodes into.
using Codecs = std::vector<std::pair<const policy::NodeStateCodec*, policy::NodeStateSlot>>;

// The nodes of one replayed request as the live request had them: copies of
// the recorded node objects and usage, the recorded states decoded into the
// new configuration's slots.
class RecordedNodes {
 public:
  RecordedNodes(const Record& record, const Codecs& codecs) : record_(record), codecs_(codecs) {
    for (const RecordedNodeState& state : record.node_states) {
      states_[state.node].push_back(&state);
    }
  }

  // The usage of `name`: nullptr when the record has none (no cache ran),
  // empty usage for a node the cache counted nothing on.
  StatusOr<const model::NodeUsage*> Usage(std::string_view name) {
    if (!record_.has_usage) {
      return nullptr;
    }
    const model::NodeUsage* recorded = record_.FindUsage(name);
    if (recorded == nullptr) {
      return &kNoUsage;
    }
    const auto states = states_.find(name);
    if (states == states_.end()) {
      return recorded;
    }
    model::NodeUsage& usage = usages_.emplace_back(*recorded);
    for (const RecordedNodeState* state : states->second) {
      // A state no policy of the new configuration keeps is not read.
      for (const auto& [codec, slot] : codecs_) {
        if (codec->StateName() == state->name) {
          StatusOr<std::shared_ptr<const model::NodeState>> decoded =
              codec->DecodeState(state->json);
          if (!decoded.ok()) {
            return decoded.status().WithContext("node " + std::string(name));
          }
          usage.states.Set(slot, std::move(decoded).value());
        }
      }
    }
    return &usage;
  }

  // A copy of the recorded node `name` with its usage; nullptr when the
  // record does not have it (unknown to schedext).
  StatusOr<const model::NodeInfo*> Node(std::string_view name) {
    const model::NodeInfo* known = record_.FindNode(name);
    if (known == nullptr) {
      return nullptr;
    }
    SCHEDEXT_ASSIGN_OR_RETURN(const model::NodeUsage* usage, Usage(name));
    model::NodeInfo& copy = nodes_.emplace_back(*known);
    copy.usage = usage;
    return &copy;
  }

 private:
  const Record& record_;
  const Codecs& codecs_;
  std::map<std::string_view, std::vector<const RecordedNodeState*>> states_;
  std::deque<model::NodeUsage> usages_;  // stable addresses
  std::deque<model::NodeInfo> nodes_;
};

// Gives each stateful policy of `profile` what the record says it saw.
// Records without it leave the policies on their own (empty) sources.
Status RestorePolicyStates(const Record& record, const pipeline::Profile& profile,
                           policy::RequestState& state) {
  for (const auto& p : profile.policies()) {
    const policy::RequestStateRecorder* recorder = policy::AsStateRecorder(*p);
    if (recorder == nullptr) {
      continue;
    }
    for (const auto& [name, json] : record.policy_states) {
      if (name == p->Name()) {
        SCHEDEXT_RETURN_IF_ERROR(recorder->Restore(json, state).WithContext(name));
      }
    }
  }
  return OkStatus();
}

// Which policy's filter now decides a node: the first that rejects it, in
// configured order (as RunFilters), over the restored state.
class Attribution {
 public:
  Attribution(const Record& record, const pipeline::Profile& profile, const model::PodInfo& pod)
      : record_(record), profile_(profile), pod_(pod) {}

  std::string RejectedBy(const model::NodeInfo& node) {
    if (!prepared_) {
      prepared_ = true;
      ok_ = RestorePolicyStates(record_, profile_, state_).ok();
      for (const auto& p : profile_.policies()) {
        if (const policy::FilterHook* f = p->AsFilter(); f != nullptr && ok_) {
          ok_ = f->PreFilter(state_, pod_).ok();
        }
      }
    }
    for (const auto& p : profile_.policies()) {
      const policy::FilterHook* f = p->AsFilter();
      if (ok_ && f != nullptr && !f->Filter(state_, pod_, node).ok()) {
        return std::string(p->Name());
      }
    }
    return "";
  }

 private:
  const Record& record_;
  const pipeline::Profile& profile_;
  const model::PodInfo& pod_;
  policy::RequestState state_;
  bool prepared_ = false;
  bool ok_ = false;
};

// Replays one filter or prioritize record into `r`, updating `report`.
void ReplayArgs(const Record& record, const pipeline::Profile& profile, const Codecs& codecs,
                RequestReplay& r, ReplayReport& report) {
  wire::RequestDecoder decoder;
  wire::ExtenderArgsView args;
  const wire::RequestBuffer body = wire::RequestBuffer::CopyOf(record.request);
  if (Status s = decoder.DecodeExtenderArgs(body, args); !s.ok()) {
    r.skipped = "the request does not decode: " + s.message();
    return;
  }
  r.pod = std::string(args.pod.namespace_name) + "/" + std::string(args.pod.name);
  // The nodes as the live request had them: objects, usage, unknown names.
  RecordedNodes recorded(record, codecs);
  std::vector<const model::NodeInfo*> nodes;
  std::vector<uint32_t> node_index;
  for (uint32_t i = 0; i < args.node_names.size(); ++i) {
    const std::string_view name = args.node_names[i];
    StatusOr<const model::NodeInfo*> node = nullptr;
    if (args.mode == wire::NodeMode::kFullNodes) {
      StatusOr<const model::NodeUsage*> usage = recorded.Usage(name);
      if (usage.ok()) {
        args.nodes[i].usage = *usage;
        node = &args.nodes[i];
      } else {
        node = usage.status();
      }
    } else {
      node = recorded.Node(name);
    }
    if (!node.ok()) {
      r.skipped = "the recorded state does not decode";
      report.state_errors.push_back(r.where + ": " + node.status().message());
      return;
    }
    if (*node != nullptr) {
      nodes.push_back(*node);
      node_index.push_back(i);
    }
  }
  policy::RequestState state;
  if (Status s = RestorePolicyStates(record, profile, state); !s.ok()) {
    r.skipped = "the recorded state does not decode";
    report.state_errors.push_back(r.where + ": " + s.message());
    return;
  }

  const Json reply = Json::parse(record.reply, nullptr, false);
  report.by_verb[record.verb]++;
  r.replayed = true;
  if (record.verb == "filter") {
    // The verb's own loop decides.
    pipeline::FilterOutcome outcome;
    const auto start = std::chrono::steady_clock::now();
    const Status st = profile.RunFilters(args.pod, nodes, state, outcome);
    r.replay_micros = MicrosSince(start);
    std::map<std::string, NodeVerdict> now;
    for (uint32_t i = 0; i < args.node_names.size(); ++i) {
      now[std::string(args.node_names[i])] = {"unresolvable", std::string(server::kUnknownNodeReason)};
    }
    for (uint32_t k : outcome.passed) {
      now[std::string(args.node_names[node_index[k]])] = {"pass", ""};
    }
    for (const auto& f : outcome.failed) {
      now[std::string(args.node_names[node_index[f.node]])] = {"unschedulable",
                                                               std::string(f.reason)};
    }
    for (const auto& f : outcome.unresolvable) {
      now[std::string(args.node_names[node_index[f.node]])] = {"unresolvable",
                                                               std::string(f.reason)};
    }
    std::map<std::string, NodeVerdict> before;
    std::string before_error;
    if (!ReadFilterReply(reply, before, before_error)) {
      r.diff.push_back("the recorded reply is not a filter result");
      r.changed = true;
      return;
    }
    const std::string now_error = st.ok() ? "" : "filter: " + st.message();
    if (!before_error.empty() || !now_error.empty()) {
      if (before_error != now_error) {
        r.diff.push_back("error: \"" + before_error + "\" -> \"" + now_error + "\"");
        r.changed = true;
        report.outcome_changed++;
      }
      return;
    }
    Attribution attribution(record, profile, args.pod);
    for (uint32_t i = 0; i < args.node_names.size(); ++i) {
      const std::string name(args.node_names[i]);
      const NodeVerdict& was = before.count(name) ? before[name] : NodeVerdict{"missing", ""};
      const NodeVerdict& is = now[name];
      if (was == is) {
        continue;
      }
      std::string policy;
      for (size_t k = 0; k < node_index.size(); ++k) {
        if (node_index[k] == i) {
          policy = attribution.RejectedBy(*nodes[k]);
        }
      }
      report.decisions_changed++;
      r.changed = true;
      std::string line =
          name + ": " + Describe(was) + " -> " +
          (policy.empty() ? Describe(is) : is.kind + " by " + policy + " \"" + is.reason + "\"");
      if (was.kind == "pass") {
        report.newly_rejected++;
        report.newly_rejected_by[policy.empty() ? std::string(server::kUnknownNodeReason) : policy]++;
      } else if (is.kind == "pass") {
        report.newly_accepted++;
        report.newly_accepted_from[was.reason]++;
      }
      r.diff.push_back(std::move(line));
    }
    return;
  }

  // prioritize: one score per request node, unknown names 0, as the verb.
  pipeline::ScoreScratch scratch;
  scratch.state = std::move(state);
  std::vector<int64_t> scores;
  const auto start = std::chrono::steady_clock::now();
  const Status st = profile.RunScorers(args.pod, nodes, scratch, scores);
  r.replay_micros = MicrosSince(start);
  report.prioritize++;
  const bool before_ok = record.status == 200 && reply.is_array();
  if (!before_ok || !st.ok()) {
    if (before_ok != st.ok()) {
      r.diff.push_back(before_ok ? "now fails: " + st.message()
                                 : "no longer fails (recorded status " +
                                       std::to_string(record.status) + ")");
      r.changed = true;
      report.outcome_changed++;
    }
    return;
  }
  // Both sides as kube-scheduler reads them: a host the reply leaves out
  // scores 0, and only a score's distance above the request's lowest counts
  // (wire::KeepScoresAboveLowest), so a reply recorded with every host and one
  // written now compare alike.
  std::map<std::string, int64_t, std::less<>> replied;
  for (const Json& h : reply) {
    replied[h.value("Host", "")] = h.value("Score", int64_t{0});
  }
  std::vector<std::pair<std::string, int64_t>> now;
  std::vector<std::pair<std::string, int64_t>> before;
  for (uint32_t i = 0; i < args.node_names.size(); ++i) {
    const std::string_view name = args.node_names[i];
    now.emplace_back(std::string(name), 0);
    const auto was = replied.find(name);
    before.emplace_back(std::string(name), was == replied.end() ? int64_t{0} : was->second);
  }
  for (size_t k = 0; k < nodes.size(); ++k) {
    now[node_index[k]].second = scores[k];
  }
  AboveLowest(now);
  AboveLowest(before);
  if (Top(before) != Top(now)) {
    report.top_changed++;
    r.changed = true;
    r.diff.push_back("top node: " + Top(before) + " -> " + Top(now));
  }
  for (size_t i = 0; i < now.size(); ++i) {
    const auto& [host, score] = now[i];
    const int64_t was = before[i].second;
    report.scores++;
    if (was != score) {
      report.scores_changed++;
      const int64_t shift = std::abs(score - was);
      report.max_shift = std::max(report.max_shift, shift);
      report.total_shift += shift;
      r.changed = true;
      r.diff.push_back(host + ": score " + std::to_string(was) + " -> " + std::to_string(score));
    }
  }
}

// preempt's recorded reply: node → victims' UIDs in reply order. Both result
// forms (MetaVictims, full Victims).
bool ReadPreemptReply(const Json& reply, std::map<std::string, std::string>& out) {
  if (!reply.is_object()) {
    return false;
  }
  for (const char* key : {"NodeNameToMetaVictims", "NodeNameToVictims"}) {
    if (!reply.contains(key) || !reply[key].is_object()) {
      continue;
    }
    for (const auto& [node, victims] : reply[key].items()) {
      std::string uids;
      if (victims.is_object() && victims.contains("Pods") && victims["Pods"].is_array()) {
        for (const Json& pod : victims["Pods"]) {
          std::string uid;
          if (pod.contains("UID") && pod["UID"].is_string()) {
            uid = pod["UID"].get<std::string>();
          } else if (pod.contains("metadata") && pod["metadata"].is_object() &&
                     pod["metadata"].contains("uid") && pod["metadata"]["uid"].is_string()) {
            uid = pod["metadata"]["uid"].get<std::string>();
          }
          uids += (uids.empty() ? "" : ",") + uid;
        }
      }
      out[node] = uids;
    }
  }
  return true;
}

// Replays one preempt record: the candidates' recorded nodes (with usage and
// states) and victims through RunPreempt, victims compared per node.
void ReplayPreempt(const Record& record, const pipeline::Profile& profile, const Codecs& codecs,
                   RequestReplay& r, ReplayReport& report) {
  wire::RequestDecoder decoder;
  wire::PreemptionArgsView args;
  const wire::RequestBuffer body = wire::RequestBuffer::CopyOf(record.request);
  if (Status s = decoder.DecodePreemptionArgs(body, args); !s.ok()) {
    r.skipped = "the request does not decode: " + s.message();
    return;
  }
  r.pod = std::string(args.pod.namespace_name) + "/" + std::string(args.pod.name);
  RecordedNodes recorded(record, codecs);
  std::vector<pipeline::PreemptCandidate> candidates;
  for (size_t i = 0; i < args.node_count; ++i) {
    wire::VictimsView& candidate = args.nodes[i];
    if (!args.full_pods) {
      // As the live request: the pods the cache knew replace bare UIDs.
      for (model::PodInfo& victim : candidate.pods) {
        if (const model::PodInfo* known = record.FindVictim(victim.uid)) {
          victim = *known;
        }
      }
    }
    // Without recorded nodes (no cache) every candidate stays unchanged.
    StatusOr<const model::NodeInfo*> node = nullptr;
    if (record.has_nodes) {
      node = recorded.Node(candidate.node);
    }
    if (!node.ok()) {
      r.skipped = "the recorded state does not decode";
      report.state_errors.push_back(r.where + ": " + node.status().message());
      return;
    }
    candidates.push_back({*node, candidate.pods});
  }
  policy::RequestState state;
  if (Status s = RestorePolicyStates(record, profile, state); !s.ok()) {
    r.skipped = "the recorded state does not decode";
    report.state_errors.push_back(r.where + ": " + s.message());
    return;
  }
  report.by_verb[record.verb]++;
  r.replayed = true;
  std::vector<pipeline::PreemptDecision> decisions;
  const auto start = std::chrono::steady_clock::now();
  const Status st = args.node_count == 0
                        ? OkStatus()
                        : profile.RunPreempt(args.pod, candidates, state, decisions);
  r.replay_micros = MicrosSince(start);
  report.preempt++;
  const Json reply = Json::parse(record.reply, nullptr, false);
  std::map<std::string, std::string> before;
  const bool before_ok = record.status == 200 && ReadPreemptReply(reply, before);
  if (!before_ok || !st.ok()) {
    if (before_ok != st.ok()) {
      r.diff.push_back(before_ok ? "now fails: " + st.message()
                                 : "no longer fails (recorded status " +
                                       std::to_string(record.status) + ")");
      r.changed = true;
      report.outcome_changed++;
    }
    return;
  }
  for (size_t i = 0; i < candidates.size(); ++i) {
    const std::string node(args.nodes[i].node);
    std::optional<std::string> is;
    if (decisions[i].keep) {
      std::string uids;
      for (size_t v = 0; v < candidates[i].victims.size(); ++v) {
        if (decisions[i].needed[v] != 0) {
          uids += (uids.empty() ? "" : ",") + std::string(candidates[i].victims[v].uid);
        }
      }
      is = uids;
    }
    const auto found = before.find(node);
    const std::optional<std::string> was =
        found != before.end() ? std::optional<std::string>(found->second) : std::nullopt;
    report.preempt_nodes++;
    if (was == is) {
      continue;
    }
    report.preempt_nodes_changed++;
    r.changed = true;
    auto describe = [](const std::optional<std::string>& v) {
      return v.has_value() ? "victims " + *v : std::string("dropped");
    };
    r.diff.push_back(node + ": " + describe(was) + " -> " + describe(is));
  }
}

}  // namespace

StatusOr<ReplayReport> ReplayDirectory(
    const std::string& dir, const std::vector<std::shared_ptr<const pipeline::Profile>>& profiles,
    std::span<const std::shared_ptr<const policy::NodeAccounting>> accountings) {
  SCHEDEXT_ASSIGN_OR_RETURN(std::vector<std::string> files, ListRecordFiles(dir));
  Codecs codecs;
  for (size_t slot = 0; slot < accountings.size(); ++slot) {
    if (accountings[slot] == nullptr) {
      continue;
    }
    if (const policy::NodeStateCodec* codec = policy::AsNodeStateCodec(*accountings[slot])) {
      codecs.emplace_back(codec, slot);
    }
  }
  ReplayReport report;
  for (const std::string& file : files) {
    std::ifstream in(file, std::ios::binary);
    size_t line_number = 0;
    for (std::string line; std::getline(in, line);) {
      ++line_number;
      if (line.empty()) {
        continue;
      }
      auto record = DecodeRecord(line);
      if (!record.ok()) {
        report.unreadable++;
        continue;
      }
      report.records++;
      RequestReplay r;
      r.where = file.substr(file.rfind('/') + 1) + ":" + std::to_string(line_number);
      r.verb = (*record)->verb;
      r.profile = (*record)->profile;
      r.recorded_micros = (*record)->latency_micros;
      r.state_recorded = (*record)->has_state;
      const pipeline::Profile* profile = nullptr;
      for (const auto& p : profiles) {
        if (p->name() == r.profile) {
          profile = p.get();
        }
      }
      if (r.verb == "bind") {
        r.skipped = std::string(kBindNotReplayed);
      } else if (r.verb != "filter" && r.verb != "prioritize" && r.verb != "preempt") {
        r.skipped = r.verb + " is not replayed";
      } else if (profile == nullptr) {
        // The new configuration has no such profile: the scheduler's calls
        // to it would now answer 404.
        r.replayed = true;
        r.changed = true;
        r.diff.push_back("profile \"" + r.profile + "\" is not in the new configuration");
        report.outcome_changed++;
        report.by_verb[r.verb]++;
      } else if (r.verb == "preempt") {
        ReplayPreempt(**record, *profile, codecs, r, report);
      } else {
        ReplayArgs(**record, *profile, codecs, r, report);
      }
      if (r.replayed) {
        report.replayed++;
        if (!r.state_recorded) {
          report.without_state++;
        }
        if (r.changed) {
          report.changed++;
          report.changed_by_verb[r.verb]++;
        }
      } else {
        report.skipped[r.skipped]++;
      }
      report.requests.push_back(std::move(r));
    }
  }
  return report;
}

}  // namespace schedext::record
