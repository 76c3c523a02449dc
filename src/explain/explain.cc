// The explain document and its text table (explain/explain.h). nlohmann is
// fine here: explain is not on the verbs' path.
#include "schedext/explain/explain.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "explain/text_table.h"
#include "schedext/explain/preemption.h"

namespace schedext::explain {
namespace {

using Json = nlohmann::ordered_json;

std::string_view VerdictName(policy::Verdict::Code code) {
  switch (code) {
    case policy::Verdict::Code::kSuccess:
      return "pass";
    case policy::Verdict::Code::kUnschedulable:
      return "unschedulable";
    case policy::Verdict::Code::kUnschedulableAndUnresolvable:
      return "unresolvable";
    case policy::Verdict::Code::kError:
      return "error";
  }
  return "error";
}

Json OrNull(std::string_view s) { return s.empty() ? Json(nullptr) : Json(std::string(s)); }

std::string_view ModeName(wire::NodeMode mode) {
  switch (mode) {
    case wire::NodeMode::kFullNodes:
      return "Nodes";
    case wire::NodeMode::kNodeNames:
      return "NodeNames";
    case wire::NodeMode::kNone:
      break;
  }
  return "none";
}

}  // namespace

void AppendExplanationJson(const pipeline::Profile& profile, const wire::ExtenderArgsView& args,
                           std::span<const uint32_t> node_index,
                           const pipeline::Explanation& explanation, std::string& out,
                           std::string_view node_mode) {
  Json doc;
  doc["profile"] = profile.name();
  doc["pod"] = {{"namespace", std::string(args.pod.namespace_name)},
                {"name", std::string(args.pod.name)},
                {"uid", std::string(args.pod.uid)}};
  doc["nodeMode"] = std::string(node_mode.empty() ? ModeName(args.mode) : node_mode);
  doc["scoring"] = "passing";
  Json policies = Json::array();
  for (const auto& p : profile.policies()) {
    Json weight = nullptr;
    for (const pipeline::Explanation::Scorer& sc : explanation.scorers) {
      if (sc.policy == p->Name()) {
        weight = sc.weight;
      }
    }
    policies.push_back({{"name", std::string(p->Name())},
                        {"weight", weight},
                        {"filter", p->AsFilter() != nullptr},
                        {"score", !weight.is_null()}});
  }
  doc["policies"] = std::move(policies);
  doc["totalWeight"] = explanation.total_weight;
  doc["filterError"] = OrNull(explanation.filter_error);
  doc["prioritizeError"] = OrNull(explanation.score_error);

  // Request index → explained index (-1: unknown to schedext).
  std::vector<int64_t> explained(args.node_names.size(), -1);
  for (size_t k = 0; k < node_index.size(); ++k) {
    explained[node_index[k]] = static_cast<int64_t>(k);
  }
  // Ranking: the scored passing nodes, best first, ties in request order.
  std::vector<size_t> ranked;
  for (size_t i = 0; i < explained.size(); ++i) {
    if (explained[i] < 0) {
      continue;
    }
    const pipeline::ExplainedNode& node = explanation.nodes[explained[i]];
    if (node.scored && node.decisive < 0 && explanation.filter_error.empty()) {
      ranked.push_back(i);
    }
  }
  const bool can_rank = explanation.score_error.empty();
  if (!can_rank) {
    ranked.clear();
  }
  std::stable_sort(ranked.begin(), ranked.end(), [&](size_t a, size_t b) {
    return explanation.nodes[explained[a]].score > explanation.nodes[explained[b]].score;
  });
  std::vector<int64_t> rank(explained.size(), 0);
  for (size_t r = 0; r < ranked.size(); ++r) {
    const bool tie = r > 0 && explanation.nodes[explained[ranked[r]]].score ==
                                  explanation.nodes[explained[ranked[r - 1]]].score;
    rank[ranked[r]] = tie ? rank[ranked[r - 1]] : static_cast<int64_t>(r) + 1;
  }

  Json nodes = Json::array();
  for (size_t i = 0; i < explained.size(); ++i) {
    Json n;
    n["name"] = std::string(args.node_names[i]);
    if (explained[i] < 0) {
      n["verdict"] = "unresolvable";
      n["reason"] = std::string(server::kUnknownNodeReason);
      n["detail"] = nullptr;
      n["rejectedBy"] = nullptr;
      n["filters"] = Json::array();
      n["scores"] = nullptr;
      n["weightedTotal"] = nullptr;
      n["score"] = nullptr;
      n["rank"] = nullptr;
      nodes.push_back(std::move(n));
      continue;
    }
    const pipeline::ExplainedNode& node = explanation.nodes[explained[i]];
    n["verdict"] = std::string(VerdictName(node.code));
    n["reason"] = OrNull(node.reason());
    n["detail"] = OrNull(node.detail());
    n["rejectedBy"] =
        node.decisive < 0 ? Json(nullptr) : Json(std::string(node.filters[node.decisive].policy));
    Json filters = Json::array();
    for (const pipeline::ExplainedVerdict& v : node.filters) {
      filters.push_back({{"policy", std::string(v.policy)},
                         {"verdict", std::string(VerdictName(v.code))},
                         {"reason", OrNull(v.reason)},
                         {"detail", OrNull(v.detail)}});
    }
    n["filters"] = std::move(filters);
    if (node.scored && can_rank) {
      Json scores = Json::array();
      for (const pipeline::ExplainedScore& s : node.scores) {
        scores.push_back({{"policy", std::string(s.policy)},
                          {"weight", s.weight},
                          {"raw", s.raw},
                          {"normalized", s.normalized},
                          {"weighted", s.weighted}});
      }
      n["scores"] = std::move(scores);
      n["weightedTotal"] = node.weighted_total;
      n["score"] = node.score;
    } else {
      n["scores"] = nullptr;
      n["weightedTotal"] = nullptr;
      n["score"] = nullptr;
    }
    n["rank"] = rank[i] > 0 ? Json(rank[i]) : Json(nullptr);
    nodes.push_back(std::move(n));
  }
  doc["nodes"] = std::move(nodes);
  Json ranking = Json::array();
  for (size_t i : ranked) {
    ranking.push_back(std::string(args.node_names[i]));
  }
  doc["ranking"] = std::move(ranking);
  out.append(doc.dump());
}

namespace {

std::string Text(const Json& v) {
  if (v.is_null()) {
    return "-";
  }
  if (v.is_string()) {
    return v.get<std::string>();
  }
  return v.dump();
}

}  // namespace

StatusOr<std::string> FormatExplanationText(std::string_view json) {
  const Json doc = Json::parse(json, nullptr, false);
  if (doc.is_object() && doc.value("verb", "") == "preempt") {
    return FormatPreemptionText(json);
  }
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("nodes") ||
      !doc["nodes"].is_array() || !doc.contains("policies") || !doc["policies"].is_array()) {
    return InvalidArgumentError("explain: not an explain document");
  }
  std::string out;
  const Json& pod = doc["pod"];
  size_t passing = 0;
  for (const Json& n : doc["nodes"]) {
    passing += n.value("verdict", "") == "pass" ? 1 : 0;
  }
  out += "profile " + Text(doc["profile"]) + ", pod " + Text(pod["namespace"]) + "/" +
         Text(pod["name"]) + ": " + std::to_string(doc["nodes"].size()) + " node(s) (" +
         Text(doc["nodeMode"]) + "), " + std::to_string(passing) + " pass\n";
  if (!doc["filterError"].is_null()) {
    out += "filter would fail: " + Text(doc["filterError"]) + "\n";
  }
  if (!doc["prioritizeError"].is_null()) {
    out += "prioritize would fail: " + Text(doc["prioritizeError"]) + "\n";
  }
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"RANK", "NODE", "SCORE", "VERDICT"};
  for (const Json& p : doc["policies"]) {
    std::string name = Text(p["name"]);
    if (p["score"].get<bool>() && !p["weight"].is_null()) {
      name += " (w" + Text(p["weight"]) + ")";
    }
    header.push_back(name);
  }
  rows.push_back(header);
  std::vector<std::string> reasons;
  for (const Json& n : doc["nodes"]) {
    std::vector<std::string> row = {Text(n["rank"]), Text(n["name"]), Text(n["score"]),
                                    Text(n["verdict"])};
    for (const Json& p : doc["policies"]) {
      const std::string name = Text(p["name"]);
      std::string cell;
      for (const Json& f : n["filters"]) {
        if (Text(f["policy"]) == name) {
          cell = Text(f["verdict"]);
        }
      }
      if (n["scores"].is_array()) {
        for (const Json& s : n["scores"]) {
          if (Text(s["policy"]) == name) {
            // raw → normalized (× weight = weighted)
            cell += (cell.empty() ? "" : " ") + Text(s["raw"]) + "->" + Text(s["normalized"]);
            if (s["weight"].get<int64_t>() != 1) {
              cell += " (" + Text(s["weighted"]) + ")";
            }
          }
        }
      }
      row.push_back(cell.empty() ? "-" : cell);
    }
    rows.push_back(std::move(row));
    if (!n["reason"].is_null()) {
      reasons.push_back("  " + Text(n["name"]) + ": " +
                        (n["rejectedBy"].is_null() ? "" : Text(n["rejectedBy"]) + ": ") +
                        Text(n["reason"]) +
                        (n.value("detail", Json()).is_string() ? " (" + Text(n["detail"]) + ")"
                                                               : ""));
    }
  }
  out += TextTable(rows);
  if (!reasons.empty()) {
    out += "rejected:\n";
    for (const std::string& r : reasons) {
      out += r + "\n";
    }
  }
  std::string ranking;
  for (const Json& name : doc["ranking"]) {
    ranking += (ranking.empty() ? "" : " > ") + Text(name);
  }
  out += "ranking: " + (ranking.empty() ? std::string("(no node passes)") : ranking) + "\n";
  out += "score = round(sum of weighted / (10 x total weight " + Text(doc["totalWeight"]) +
         ")); kube-scheduler adds score x extender weight x 10 to its own scores\n";
  return out;
}

}  // namespace schedext::explain
