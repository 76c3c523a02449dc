// Profile::Explain (pipeline/explain.h): the verbs' hooks and combination,
// keeping every intermediate result.
#include "schedext/pipeline/explain.h"

#include <algorithm>
#include <span>
#include <string>

#include "schedext/pipeline/profile.h"

namespace schedext::pipeline {

void Profile::Explain(const model::PodInfo& pod, policy::NodeSpan nodes, ExplainScoring scoring,
                      Explanation& out) const {
  out = Explanation{};
  out.total_weight = total_weight_;
  for (const WeightedScorer& sc : scorers_) {
    out.scorers.push_back({sc.policy, sc.weight});
  }
  const size_t n = nodes.size();
  out.nodes.resize(n);

  // Filters, as RunFilters: every PreFilter once, then per node every filter;
  // the decision is the first non-success in configured order. A PreFilter
  // failure fails filter for every node, so no verdict exists then.
  policy::RequestState filter_state;
  bool prefiltered = true;
  for (const NamedFilter& f : filters_) {
    Status s = f.hook->PreFilter(filter_state, pod);
    if (!s.ok()) {
      out.filter_error = "policy " + std::string(f.policy) + ": prefilter: " + s.message();
      prefiltered = false;
      break;
    }
  }
  for (uint32_t i = 0; prefiltered && i < n; ++i) {
    ExplainedNode& node = out.nodes[i];
    node.filters.reserve(filters_.size());
    for (const NamedFilter& f : filters_) {
      const policy::Verdict verdict = f.hook->Filter(filter_state, pod, *nodes[i]);
      node.filters.push_back({f.policy, verdict.code, std::string(verdict.reason), {}});
      if (verdict.code == policy::Verdict::Code::kUnschedulable ||
          verdict.code == policy::Verdict::Code::kUnschedulableAndUnresolvable) {
        node.filters.back().detail = f.hook->Detail(filter_state, pod, *nodes[i]);
      }
      if (!verdict.ok() && node.decisive < 0) {
        node.decisive = static_cast<int>(node.filters.size()) - 1;
        node.code = verdict.code;
        if (verdict.code == policy::Verdict::Code::kError && out.filter_error.empty()) {
          out.filter_error = "policy " + std::string(f.policy) + ": node " +
                             std::string(nodes[i]->name) + ": " + std::string(verdict.reason);
        }
      }
    }
  }

  // Scorers, as RunScorers, on the chosen nodes.
  std::vector<uint32_t> chosen;
  for (uint32_t i = 0; i < n; ++i) {
    const bool passes = prefiltered && out.nodes[i].decisive < 0;
    if (scoring == ExplainScoring::kAll || passes) {
      chosen.push_back(i);
    }
  }
  std::vector<const model::NodeInfo*> scored_nodes;
  scored_nodes.reserve(chosen.size());
  for (uint32_t i : chosen) {
    scored_nodes.push_back(nodes[i]);
    out.nodes[i].scored = true;
    out.nodes[i].scores.resize(scorers_.size());
  }
  const policy::NodeSpan span(scored_nodes);
  policy::RequestState score_state;
  std::vector<int64_t> row(chosen.size());
  for (size_t p = 0; p < scorers_.size() && out.score_error.empty(); ++p) {
    const WeightedScorer& sc = scorers_[p];
    if (sc.needs_usage) {
      const auto without = std::find_if(span.begin(), span.end(), [](const model::NodeInfo* node) {
        return node->usage == nullptr;
      });
      if (without != span.end()) {
        out.score_error = MissingUsage(sc, **without).message();
        break;
      }
    }
    Status s = sc.hook->PreScore(score_state, pod, span);
    if (!s.ok()) {
      out.score_error = "policy " + std::string(sc.policy) + ": prescore: " + s.message();
      break;
    }
    for (size_t k = 0; k < chosen.size(); ++k) {
      row[k] = sc.hook->Score(score_state, pod, *span[k]);
      ExplainedScore& e = out.nodes[chosen[k]].scores[p];
      e.policy = sc.policy;
      e.weight = sc.weight;
      e.raw = row[k];
    }
    sc.hook->Normalize(score_state, std::span<int64_t>(row));
    for (size_t k = 0; k < chosen.size(); ++k) {
      ExplainedScore& e = out.nodes[chosen[k]].scores[p];
      e.normalized = row[k];
      e.weighted = sc.weight * row[k];
      if ((row[k] < 0 || row[k] > policy::kMaxNodeScore) && out.score_error.empty()) {
        out.score_error = "policy " + std::string(sc.policy) + ": normalized score " +
                          std::to_string(row[k]) + " for node " + std::string(span[k]->name) +
                          " is outside [0, 100]";
      }
    }
  }
  for (uint32_t i : chosen) {
    ExplainedNode& node = out.nodes[i];
    for (const ExplainedScore& e : node.scores) {
      node.weighted_total += e.weighted;
    }
    node.score = scorers_.empty() ? 0 : ExtenderScore(node.weighted_total, total_weight_);
  }
}

}  // namespace schedext::pipeline
