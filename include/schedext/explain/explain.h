// The explain report: one request's explanation (pipeline/explain.h) as the
// JSON document POST /<profile>/explain answers and `schedext explain
// --output json` prints, and the text table `schedext explain` prints for
// people.
//
// The document (keys always present, null where they do not apply):
//   {"profile": "default",
//    "pod": {"namespace": "ns", "name": "web-1", "uid": "..."},
//    "nodeMode": "Nodes" | "NodeNames" | "none" | "cache",
//    "scoring": "passing",          // scores are of the nodes that pass
//    "policies": [{"name": "NodeLabel", "weight": 2, "filter": true, "score": true}],
//    "totalWeight": 2,              // Σ weights of the scoring policies
//    "filterError": null,           // what filter would answer as Error
//    "prioritizeError": null,       // why prioritize would fail (HTTP 500)
//    "nodes": [                     // request order
//      {"name": "n1",
//       "verdict": "pass" | "unschedulable" | "unresolvable" | "error",
//       "reason": null | "...",     // the text filter answers for the node
//       "detail": null | "...",     // that policy's per-node detail (FilterHook::Detail)
//       "rejectedBy": null | "NodeLabel",
//       "filters": [{"policy": "NodeLabel", "verdict": "pass", "reason": null,
//                    "detail": null}],
//       "scores": null | [{"policy": "NodeLabel", "weight": 2, "raw": 5,
//                          "normalized": 100, "weighted": 200}],
//       "weightedTotal": null | 200,
//       "score": null | 10,         // the 0..10 score prioritize answers
//       "rank": null | 1}],         // 1 = best; equal scores share a rank
//    "ranking": ["n1", ...]}        // passing nodes, best first, ties in request order
// Every filter of the profile runs on every node (the verbs stop at the first
// rejection; `rejectedBy` is that one). Nodes a node-cache request names but
// the cache does not know are "unresolvable" with no filters.
//
// Thread-safety: pure functions.
#ifndef SCHEDEXT_EXPLAIN_EXPLAIN_H_
#define SCHEDEXT_EXPLAIN_EXPLAIN_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "schedext/cluster/cache.h"
#include "schedext/pipeline/explain.h"
#include "schedext/pipeline/profile.h"
#include "schedext/server/service.h"
#include "schedext/status.h"
#include "schedext/wire/messages.h"

namespace schedext::explain {

// POST /<profile>/explain (ExtenderService::SetExplain): the body is a filter
// or prioritize body, in either node mode; its nodes are resolved as the verbs
// resolve them (ExtenderService::ResolveNodes) and the profile explains them
// all (Profile::Explain). Answers the document above, 400 for a body that
// does not decode, 503 before the cache has synced. A preemption body (one
// with NodeNameToVictims or NodeNameToMetaVictims) is decided as the preempt
// verb decides it (ExtenderService::DecidePreemption) and answers
// preemption.h's document instead. Stateless: one instance serves every
// thread.
class ExplainVerb final : public server::VerbHandler {
 public:
  int Handle(const server::ExtenderService& service, const pipeline::Profile& profile,
             const wire::RequestBuffer& body, server::Scratch& s, std::string& out,
             server::RequestSummary& summary) const override;
};

// Appends the document for `args` explained by `profile`: `explanation.nodes[k]`
// is the request's node `node_index[k]`; request nodes not in `node_index` are
// unknown to schedext.
// `node_mode`, when not empty, replaces the request's node mode in
// "nodeMode".
void AppendExplanationJson(const pipeline::Profile& profile, const wire::ExtenderArgsView& args,
                           std::span<const uint32_t> node_index,
                           const pipeline::Explanation& explanation, std::string& out,
                           std::string_view node_mode = {});

// GET /explain/pod/<namespace>/<name>[/<profile>] on the main listener (node
// cache mode): the pod as the cluster cache holds it (pending, bound or
// reserved) explained by `profiles[default_profile]`, or by the profile the
// path names, against every node of the cache's latest snapshot, in name
// order. The document is AppendExplanationJson's with "nodeMode": "cache".
// Needs no request body: "why is this pending pod not placed, now?". Fills
// `body` and returns the HTTP status: 400 for a malformed path, 404 for an
// unknown pod or profile, 503 before the cache has synced. O(pods + nodes ×
// policies), allocating: for operators, never on the verbs' path. Called by
// the server's GET route from any request thread (reads one snapshot).
int ExplainCachedPod(const cluster::ClusterCache& cache,
                     std::span<const std::shared_ptr<const pipeline::Profile>> profiles,
                     size_t default_profile, std::string_view rest, std::string& body);

// The text table of a document AppendExplanationJson (or, for "verb":
// "preempt", AppendPreemptionJson) wrote. kInvalidArgument when `json` is not
// such a document.
StatusOr<std::string> FormatExplanationText(std::string_view json);

}  // namespace schedext::explain

#endif  // SCHEDEXT_EXPLAIN_EXPLAIN_H_
