// Preemption explained (explain/preemption.h). nlohmann is fine here: this is
// explain's and the event writer's, never the preempt verb's own path.
#include "schedext/explain/preemption.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "explain/text_table.h"
#include "schedext/cluster/event_recorder.h"

namespace schedext::explain {
namespace {

using Json = nlohmann::ordered_json;
using Verdict = ExplainedCandidate::Verdict;

std::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kKeep:
      return "keep";
    case Verdict::kDrop:
      return "drop";
    case Verdict::kUnchecked:
      return "unchecked";
  }
  return "keep";
}

Json OrNull(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

std::string VictimLabel(const ExplainedVictim& v) {
  if (v.name.empty()) {
    return "uid " + v.uid;
  }
  return v.namespace_name + "/" + v.name;
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    out += i == 0 ? "" : sep;
    out += parts[i];
  }
  return out;
}

// The inverse of AppendPreemptionJson, for the text table.
bool FromJson(const Json& doc, PreemptionExplanation& out) {
  if (!doc.is_object() || doc.value("verb", "") != "preempt" || !doc.contains("candidates") ||
      !doc["candidates"].is_array() || !doc.contains("pod") || !doc["pod"].is_object()) {
    return false;
  }
  auto text = [](const Json& v) { return v.is_string() ? v.get<std::string>() : std::string(); };
  out.profile = text(doc.value("profile", Json()));
  out.pod_namespace = text(doc["pod"].value("namespace", Json()));
  out.pod_name = text(doc["pod"].value("name", Json()));
  out.pod_uid = text(doc["pod"].value("uid", Json()));
  out.full_pods = doc.value("victimsMode", "") == "NodeNameToVictims";
  bool has_preempters = false;
  if (doc.contains("policies") && doc["policies"].is_array()) {
    for (const Json& p : doc["policies"]) {
      has_preempters = has_preempters || p.value("preempt", false);
    }
  }
  for (const Json& c : doc["candidates"]) {
    if (!c.is_object() || !c.contains("victims") || !c["victims"].is_array()) {
      return false;
    }
    ExplainedCandidate candidate;
    candidate.node = text(c.value("name", Json()));
    const std::string verdict = c.value("verdict", "");
    candidate.verdict = verdict == "drop"        ? Verdict::kDrop
                        : verdict == "unchecked" ? Verdict::kUnchecked
                                                 : Verdict::kKeep;
    candidate.dropped_by = text(c.value("droppedBy", Json()));
    candidate.dropped_by_preempt = c.value("droppedByPreempt", false);
    candidate.reason = text(c.value("reason", Json()));
    candidate.has_preempters = has_preempters;
    for (const Json& v : c["victims"]) {
      if (!v.is_object()) return false;
      ExplainedVictim victim;
      victim.uid = text(v.value("uid", Json()));
      victim.namespace_name = text(v.value("namespace", Json()));
      victim.name = text(v.value("name", Json()));
      victim.evict = v.value("evict", true);
      if (v.contains("neededBy") && v["neededBy"].is_array()) {
        for (const Json& p : v["neededBy"]) victim.needed_by.push_back(text(p));
      }
      candidate.victims.push_back(std::move(victim));
    }
    out.candidates.push_back(std::move(candidate));
  }
  return true;
}

size_t Count(const PreemptionExplanation& e, Verdict v) {
  return static_cast<size_t>(std::count_if(e.candidates.begin(), e.candidates.end(),
                                           [v](const ExplainedCandidate& c) {
                                             return c.verdict == v;
                                           }));
}

bool Trimmed(const ExplainedCandidate& c) {
  return c.verdict == Verdict::kKeep &&
         std::any_of(c.victims.begin(), c.victims.end(),
                     [](const ExplainedVictim& v) { return !v.evict; });
}

}  // namespace

bool PreemptionExplanation::Changed() const {
  return std::any_of(candidates.begin(), candidates.end(), [](const ExplainedCandidate& c) {
    return c.verdict == Verdict::kDrop || Trimmed(c);
  });
}

PreemptionExplanation ExplainPreemption(const pipeline::Profile& profile,
                                        const wire::PreemptionArgsView& args,
                                        std::span<const pipeline::PreemptCandidate> candidates,
                                        std::span<const pipeline::PreemptDecision> decisions) {
  PreemptionExplanation out;
  out.profile = profile.name();
  out.pod_namespace = std::string(args.pod.namespace_name);
  out.pod_name = std::string(args.pod.name);
  out.pod_uid = std::string(args.pod.uid);
  out.full_pods = args.full_pods;
  const std::vector<std::string_view> preempters = profile.preempter_names();
  const auto proposed = args.candidates();
  const size_t n = std::min({proposed.size(), candidates.size(), decisions.size()});
  out.candidates.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const pipeline::PreemptDecision& d = decisions[i];
    ExplainedCandidate c;
    c.node = std::string(proposed[i].node);
    c.has_preempters = !preempters.empty();
    c.verdict = candidates[i].node == nullptr ? Verdict::kUnchecked
                : d.keep                      ? Verdict::kKeep
                                              : Verdict::kDrop;
    if (c.verdict == Verdict::kDrop) {
      c.dropped_by = std::string(d.dropped_by);
      c.dropped_by_preempt = d.dropped_by_preempt;
      c.reason = d.reason;
    }
    const std::span<const model::PodInfo> victims = proposed[i].pods;
    c.victims.reserve(victims.size());
    for (size_t v = 0; v < victims.size(); ++v) {
      ExplainedVictim victim;
      victim.uid = std::string(victims[v].uid);
      victim.namespace_name = std::string(victims[v].namespace_name);
      victim.name = std::string(victims[v].name);
      // Evicted: what the reply names; a dropped node's victims are not in it.
      victim.evict = c.verdict == Verdict::kUnchecked ||
                     (c.verdict == Verdict::kKeep && v < d.needed.size() && d.needed[v] != 0);
      const uint64_t mask = v < d.needed_by.size() ? d.needed_by[v] : 0;
      for (size_t h = 0; h < preempters.size() && c.verdict == Verdict::kKeep; ++h) {
        if ((mask >> h) & 1) victim.needed_by.emplace_back(preempters[h]);
      }
      c.victims.push_back(std::move(victim));
    }
    out.candidates.push_back(std::move(c));
  }
  return out;
}

std::string CandidateWhy(const ExplainedCandidate& c) {
  const size_t total = c.victims.size();
  switch (c.verdict) {
    case Verdict::kUnchecked:
      return "not checked: the node is unknown to schedext's cache; kept as proposed";
    case Verdict::kDrop:
      if (c.dropped_by_preempt) {
        return "dropped: " + c.dropped_by + ": " + c.reason + " (even after evicting all " +
               std::to_string(total) + " proposed pod" + (total == 1 ? "" : "s") + ")";
      }
      return "dropped: " + c.dropped_by + ": " + c.reason + " (eviction cannot change that)";
    case Verdict::kKeep:
      break;
  }
  if (total == 0) {
    return "kept: no victims proposed";
  }
  std::vector<std::string> evict;
  std::vector<std::string> spare;
  bool any_needed = false;
  for (const ExplainedVictim& v : c.victims) {
    if (!v.evict) {
      spare.push_back(VictimLabel(v));
      continue;
    }
    any_needed = any_needed || !v.needed_by.empty();
    evict.push_back(VictimLabel(v) +
                    (v.needed_by.empty() ? "" : " (" + Join(v.needed_by, ", ") + ")"));
  }
  if (!c.has_preempters) {
    return "kept as proposed: no policy of the profile selects victims";
  }
  if (!any_needed) {
    return "kept as proposed: no policy needs any of the " + std::to_string(total) +
           " victims evicted, and the reply cannot name none";
  }
  std::string why = "evict " + Join(evict, ", ");
  if (!spare.empty()) {
    why += "; spare " + Join(spare, ", ") + " (no policy needs " +
           (spare.size() == 1 ? "it" : "them") + " evicted)";
  }
  return why;
}

void AppendPreemptionJson(const pipeline::Profile& profile,
                          const PreemptionExplanation& explanation, std::string& out) {
  Json doc;
  doc["profile"] = explanation.profile;
  doc["verb"] = "preempt";
  doc["pod"] = {{"namespace", explanation.pod_namespace},
                {"name", explanation.pod_name},
                {"uid", explanation.pod_uid}};
  doc["victimsMode"] = explanation.full_pods ? "NodeNameToVictims" : "NodeNameToMetaVictims";
  Json policies = Json::array();
  for (const auto& p : profile.policies()) {
    const policy::FilterHook* filter = p->AsFilter();
    policies.push_back({{"name", std::string(p->Name())},
                        {"filter", filter != nullptr},
                        {"evictionCanHelp", filter != nullptr && filter->EvictionCanHelp()},
                        {"preempt", p->AsPreempter() != nullptr}});
  }
  doc["policies"] = std::move(policies);
  Json candidates = Json::array();
  size_t evicted = 0;
  size_t spared = 0;
  for (const ExplainedCandidate& c : explanation.candidates) {
    Json victims = Json::array();
    for (const ExplainedVictim& v : c.victims) {
      if (c.verdict != Verdict::kDrop) {
        (v.evict ? evicted : spared) += 1;
      }
      victims.push_back({{"uid", v.uid},
                         {"namespace", OrNull(v.namespace_name)},
                         {"name", OrNull(v.name)},
                         {"evict", v.evict},
                         {"neededBy", v.needed_by}});
    }
    candidates.push_back({{"name", c.node},
                          {"verdict", std::string(VerdictName(c.verdict))},
                          {"droppedBy", OrNull(c.dropped_by)},
                          {"droppedByPreempt", c.dropped_by_preempt},
                          {"reason", OrNull(c.reason)},
                          {"victims", std::move(victims)},
                          {"why", CandidateWhy(c)}});
  }
  doc["candidates"] = std::move(candidates);
  doc["kept"] = explanation.candidates.size() - Count(explanation, Verdict::kDrop);
  doc["dropped"] = Count(explanation, Verdict::kDrop);
  doc["evicted"] = evicted;
  doc["spared"] = spared;
  out.append(doc.dump());
}

std::string PreemptionNote(const PreemptionExplanation& e, size_t max_listed) {
  if (!e.Changed()) {
    return {};
  }
  const size_t dropped = Count(e, Verdict::kDrop);
  std::string note = "Preemption by profile " + e.profile + ": kept " +
                     std::to_string(e.candidates.size() - dropped) + " of " +
                     std::to_string(e.candidates.size()) + " candidate node" +
                     (e.candidates.size() == 1 ? "" : "s") + ".";
  // Dropped nodes first, then trimmed ones, each in request order.
  std::vector<const ExplainedCandidate*> changed;
  for (const ExplainedCandidate& c : e.candidates) {
    if (c.verdict == Verdict::kDrop) changed.push_back(&c);
  }
  for (const ExplainedCandidate& c : e.candidates) {
    if (Trimmed(c)) changed.push_back(&c);
  }
  // Room kept for the tail, so that listing a node never pushes it out.
  constexpr size_t kTailReserve = 200;
  size_t listed = 0;
  for (; listed < changed.size() && listed < max_listed; ++listed) {
    const std::string text = " " + changed[listed]->node + ": " + CandidateWhy(*changed[listed]) +
                             ".";
    if (note.size() + text.size() + kTailReserve > cluster::kEventNoteLimit) {
      break;
    }
    note += text;
  }
  std::map<std::string, size_t> more_dropped;  // policy → nodes
  size_t more_trimmed = 0;
  for (size_t i = listed; i < changed.size(); ++i) {
    if (changed[i]->verdict == Verdict::kDrop) {
      ++more_dropped[changed[i]->dropped_by];
    } else {
      ++more_trimmed;
    }
  }
  std::string tail;
  if (!more_dropped.empty()) {
    size_t count = 0;
    std::string by;
    for (const auto& [policy, nodes] : more_dropped) {
      count += nodes;
      by += (by.empty() ? "" : ", ") + policy + " " + std::to_string(nodes);
    }
    tail += ' ';
    tail += std::to_string(count);
    tail += listed > 0 ? " more" : "";
    tail += count == 1 ? " node" : " nodes";
    tail += " dropped: " + by + ".";
  }
  if (more_trimmed > 0) {
    tail += ' ';
    tail += std::to_string(more_trimmed);
    tail += listed > 0 ? " more" : "";
    tail += more_trimmed == 1 ? " node" : " nodes";
    tail += " kept with fewer victims.";
  }
  if (note.size() + tail.size() > cluster::kEventNoteLimit) {
    tail.resize(cluster::kEventNoteLimit - note.size());
  }
  return note + tail;
}

StatusOr<std::string> FormatPreemptionText(std::string_view json) {
  const Json doc = Json::parse(json, nullptr, false);
  PreemptionExplanation e;
  if (doc.is_discarded() || !FromJson(doc, e)) {
    return InvalidArgumentError("explain: not a preemption explain document");
  }
  std::string out = "profile " + e.profile + ", pod " + e.pod_namespace + "/" + e.pod_name +
                    ": preemption on " + std::to_string(e.candidates.size()) +
                    " candidate node(s), " + std::to_string(e.candidates.size() -
                                                             Count(e, Verdict::kDrop)) +
                    " kept\n";
  std::vector<std::vector<std::string>> rows = {{"NODE", "VERDICT", "EVICT", "SPARE", "WHY"}};
  for (const ExplainedCandidate& c : e.candidates) {
    size_t evict = 0;
    for (const ExplainedVictim& v : c.victims) evict += v.evict ? 1 : 0;
    const bool dropped = c.verdict == Verdict::kDrop;
    rows.push_back({c.node, std::string(VerdictName(c.verdict)),
                    dropped ? "-" : std::to_string(evict),
                    dropped ? "-" : std::to_string(c.victims.size() - evict), CandidateWhy(c)});
  }
  out += TextTable(rows);
  out += "kube-scheduler then picks one of the kept nodes and evicts the victims listed for it\n";
  return out;
}

}  // namespace schedext::explain
