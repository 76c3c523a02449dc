// Preemption explained: why schedext's preempt verb kept or dropped each
// candidate node kube-scheduler proposed, and which victims it keeps evicting
// for which policy (docs/pending-pods.md).
//
// ExplainPreemption turns one preempt request's decisions
// (ExtenderService::DecidePreemption: Profile::RunPreempt's PreemptDecision
// with dropped_by / reason / needed_by) into a plain value. Three readers:
//   * POST /<profile>/explain with a preemption body (ExplainVerb) answers
//     AppendPreemptionJson's document; `schedext explain` prints it as
//     FormatExplanationText's table;
//   * the pending-pod event writer (pending_events.h) puts PreemptionNote on
//     the preemptor as a SchedextPreemption Event when schedext changed the
//     scheduler's proposal (dropped a node or spared a victim).
//
// The document:
//   {"profile": "all", "verb": "preempt",
//    "pod": {"namespace": "shop", "name": "big-1", "uid": "..."},
//    "victimsMode": "NodeNameToMetaVictims" | "NodeNameToVictims",
//    "policies": [{"name": "NodeResourcesFit", "filter": true,
//                  "evictionCanHelp": true, "preempt": true}],
//    "candidates": [                // request order
//      {"name": "n2",
//       "verdict": "keep" | "drop" | "unchecked",   // unchecked: unknown to
//                                   // schedext's cache (or no cache): kept as proposed
//       "droppedBy": null | "TaintToleration",
//       "droppedByPreempt": false,  // true: a preempt hook dropped it (even
//                                   // the evictions would not make room)
//       "reason": null | "...",     // that policy's verdict
//       "victims": [{"uid": "...", "namespace": "shop", "name": "log-1",
//                    "evict": true, "neededBy": ["NodeResourcesFit"]}],
//       "why": "..."}],             // CandidateWhy, one sentence
//    "kept": 3, "dropped": 1, "evicted": 2, "spared": 1}
//
// Thread-safety: pure functions over values.
#ifndef SCHEDEXT_EXPLAIN_PREEMPTION_H_
#define SCHEDEXT_EXPLAIN_PREEMPTION_H_

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "schedext/pipeline/profile.h"
#include "schedext/status.h"
#include "schedext/wire/messages.h"

namespace schedext::explain {

struct ExplainedVictim {
  std::string uid;
  std::string namespace_name;  // empty: a MetaVictims UID the cache does not know
  std::string name;
  bool evict = true;  // the reply names it (never on a dropped node)
  std::vector<std::string> needed_by;  // the preempt hooks that need it evicted
};

struct ExplainedCandidate {
  enum class Verdict { kKeep, kDrop, kUnchecked };
  std::string node;
  Verdict verdict = Verdict::kKeep;
  std::string dropped_by;         // kDrop: the policy
  bool dropped_by_preempt = false;  // kDrop: by a preempt hook, not a filter
  std::string reason;             // kDrop: its verdict
  std::vector<ExplainedVictim> victims;
  // The profile has a preempt hook (else victims stay as proposed).
  bool has_preempters = false;
};

struct PreemptionExplanation {
  std::string profile;
  std::string pod_namespace;
  std::string pod_name;
  std::string pod_uid;
  bool full_pods = false;  // NodeNameToVictims (else NodeNameToMetaVictims)
  std::vector<ExplainedCandidate> candidates;

  // Whether schedext's answer differs from the scheduler's proposal: some
  // candidate dropped or some victim spared.
  bool Changed() const;
};

// `decisions[i]` is what `profile` decided for `args.candidates()[i]`, whose
// node `candidates[i].node` resolved to (nullptr: unknown or no cache).
PreemptionExplanation ExplainPreemption(const pipeline::Profile& profile,
                                        const wire::PreemptionArgsView& args,
                                        std::span<const pipeline::PreemptCandidate> candidates,
                                        std::span<const pipeline::PreemptDecision> decisions);

// One sentence on one candidate, e.g.
//   "evict shop/log-1 (NodeResourcesFit); spare shop/db-1 (no policy needs it evicted)"
//   "dropped: TaintToleration: node(s) had untolerated taint (eviction cannot change that)"
std::string CandidateWhy(const ExplainedCandidate& candidate);

// Appends the document above.
void AppendPreemptionJson(const pipeline::Profile& profile,
                          const PreemptionExplanation& explanation, std::string& out);

// The SchedextPreemption Event's note: the kept/proposed count, then the
// candidates schedext changed (dropped first, then trimmed; request order),
// at most `max_listed`, then the rest counted by the policy that dropped
// them. Empty when nothing changed. At most cluster::kEventNoteLimit bytes.
//   Preemption by profile all: kept 1 of 3 candidate nodes. n3: dropped:
//   TaintToleration: ... n2: evict shop/log-1 (NodeResourcesFit); spare
//   shop/db-1 (...). 1 more node dropped: NodeHealth 1.
std::string PreemptionNote(const PreemptionExplanation& explanation, size_t max_listed = 3);

// The text table of a preemption document (FormatExplanationText calls it
// for "verb": "preempt"). kInvalidArgument when `json` is not one.
StatusOr<std::string> FormatPreemptionText(std::string_view json);

}  // namespace schedext::explain

#endif  // SCHEDEXT_EXPLAIN_PREEMPTION_H_
