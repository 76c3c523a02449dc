// Explain mode of a Profile: every policy's verdict and score on every node of
// one request, and the decisions the verbs would take from them.
//
// Profile::Explain runs the same hooks, in the same order, with the same
// combination (ExtenderScore, profile.h) as RunFilters and RunScorers, but
// keeps what those loops throw away: the verdict of every filter (not only up
// to the first rejection), every raw and normalized score. It allocates freely
// and is not on the verbs' path: the verbs call RunFilters / RunScorers, which
// this header does not touch.
//
// Thread-safety: results are plain values; Explain is const like the verbs.
#ifndef SCHEDEXT_PIPELINE_EXPLAIN_H_
#define SCHEDEXT_PIPELINE_EXPLAIN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schedext/policy/verdict.h"

namespace schedext::pipeline {

// Which nodes get scored.
enum class ExplainScoring {
  // The nodes that pass the filters: what kube-scheduler would send to
  // prioritize after this filter (when no other filter rejects them).
  kPassing,
  // Every node, whatever the filters say: what prioritize answers for this
  // body (the scheduler calls prioritize with nodes that passed filter).
  kAll,
};

// One filter policy on one node.
struct ExplainedVerdict {
  std::string_view policy;  // the policy's registered name (owned by the profile)
  policy::Verdict::Code code = policy::Verdict::Code::kSuccess;
  std::string reason;  // copied: a reason may point into the request's state
  std::string detail;  // FilterHook::Detail for a rejection; empty otherwise
};

// One scoring policy on one node.
struct ExplainedScore {
  std::string_view policy;
  int64_t weight = 0;      // the policy's weight in the profile
  int64_t raw = 0;         // ScoreHook::Score
  int64_t normalized = 0;  // after ScoreHook::Normalize, in [0, 100]
  int64_t weighted = 0;    // weight × normalized
};

struct ExplainedNode {
  // Every filter of the profile, in configured order.
  std::vector<ExplainedVerdict> filters;
  // The filter decision, as RunFilters takes it: the first non-success verdict
  // in configured order (-1: every filter passed).
  int decisive = -1;
  policy::Verdict::Code code = policy::Verdict::Code::kSuccess;
  std::string_view reason() const {
    return decisive < 0 ? std::string_view() : std::string_view(filters[decisive].reason);
  }
  std::string_view detail() const {
    return decisive < 0 ? std::string_view() : std::string_view(filters[decisive].detail);
  }
  // Set when the node was scored (see ExplainScoring).
  bool scored = false;
  std::vector<ExplainedScore> scores;  // every scorer, in configured order
  int64_t weighted_total = 0;          // Σ weighted
  int64_t score = 0;                   // the 0..10 score prioritize answers
};

struct Explanation {
  std::vector<ExplainedNode> nodes;  // request order, as given to Explain
  int64_t total_weight = 0;          // Σ weights of the scorers
  struct Scorer {
    std::string_view policy;
    int64_t weight = 0;
  };
  std::vector<Scorer> scorers;  // the profile's scorers, in configured order
  // The verbs' error for this request, if they would fail it: filter's (a
  // PreFilter failure or a kError verdict reached before any rejection) and
  // prioritize's (a PreScore failure or an out-of-range normalized score),
  // with the same text RunFilters / RunScorers return.
  std::string filter_error;
  std::string score_error;
};

}  // namespace schedext::pipeline

#endif  // SCHEDEXT_PIPELINE_EXPLAIN_H_
