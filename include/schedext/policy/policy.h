// Policy: a named scheduling rule with optional filter, score and preempt hooks.
//
// Policies are built once from configuration by a factory (registry.h) and are
// immutable afterwards: every hook method is const and must be safe to call
// from many request threads at once. Per-request data goes in RequestState.
// Per-node methods (Filter, Score) run in the hot loop: no allocation, no
// locks, no logging, no exceptions.
#ifndef SCHEDEXT_POLICY_POLICY_H_
#define SCHEDEXT_POLICY_POLICY_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedext/model/node_fields.h"
#include "schedext/model/node_info.h"
#include "schedext/model/pod_info.h"
#include "schedext/policy/request_state.h"
#include "schedext/policy/verdict.h"
#include "schedext/status.h"

namespace schedext::policy {

// The nodes of one request, in request order. Never null entries.
using NodeSpan = std::span<const model::NodeInfo* const>;

// Highest normalized score a ScoreHook may produce (kube-scheduler MaxNodeScore).
inline constexpr int64_t kMaxNodeScore = 100;

class FilterHook {
 public:
  virtual ~FilterHook() = default;
  // Once per request, before any Filter call. A non-OK status fails the request.
  virtual Status PreFilter(RequestState& /*state*/, const model::PodInfo& /*pod*/) const {
    return OkStatus();
  }
  // Once per node.
  virtual Verdict Filter(const RequestState& state, const model::PodInfo& pod,
                         const model::NodeInfo& node) const = 0;
  // Whether evicting pods from a node can change this filter's verdict (resource
  // filters). preempt re-checks candidate nodes with the filters for which it
  // cannot; the others answer through their PreemptHook.
  virtual bool EvictionCanHelp() const { return false; }
  // Explain only (pipeline/explain.h), never on the verbs' path: for a node
  // this filter rejected, after the same PreFilter, what the reason leaves
  // out — the node's own numbers, the taint, how far it is from fitting
  // ("no GPU with 8 GiB free (largest free 6 GiB)"). Reasons must stay a
  // small fixed set (kube-scheduler counts nodes per distinct reason in the
  // pod's FailedScheduling event), so per-node text belongs here. May
  // allocate. Empty: nothing beyond the reason.
  virtual std::string Detail(const RequestState& /*state*/, const model::PodInfo& /*pod*/,
                             const model::NodeInfo& /*node*/) const {
    return {};
  }
};

class ScoreHook {
 public:
  virtual ~ScoreHook() = default;
  // Once per request, before any Score call. A non-OK status fails the request.
  virtual Status PreScore(RequestState& /*state*/, const model::PodInfo& /*pod*/,
                          NodeSpan /*nodes*/) const {
    return OkStatus();
  }
  // Raw score of one node; any int64.
  virtual int64_t Score(const RequestState& state, const model::PodInfo& pod,
                        const model::NodeInfo& node) const = 0;
  // Raw scores of a block of nodes: out[i] = Score(state, pod, *nodes[i]),
  // out.size() == nodes.size(). The pipeline scores through this, a block of
  // a few dozen nodes at a time; the default calls Score per node. Override
  // it when the per-request part of Score (state lookup, dispatch on the
  // configuration) costs as much as the per-node arithmetic; the answers
  // must stay Score's, which explain still asks node by node.
  virtual void ScoreNodes(const RequestState& state, const model::PodInfo& pod, NodeSpan nodes,
                          std::span<int64_t> out) const;
  // True when Score reads node.usage, which nodes have only with the cluster
  // cache (not in full mode without a Kubernetes API connection). The
  // pipeline then fails the request as if this PreScore had failed, with
  // "needs the cluster cache ...: node "<name>" has no pod usage", before
  // Score sees such a node. It checks in its per-node loop, where the node's
  // first line is loaded anyway, so the hook need not walk the nodes itself.
  virtual bool NeedsNodeUsage() const { return false; }
  // Maps the raw scores of all nodes (request order) onto [0, kMaxNodeScore] in
  // place. The default clamps. A value left outside the range fails the request.
  virtual void Normalize(const RequestState& state, std::span<int64_t> scores) const;
};

class PreemptHook {
 public:
  virtual ~PreemptHook() = default;
  // One candidate node of a preemption: `victims` are the pods the scheduler
  // proposes to evict from `node`, most important first; `needed[i]` starts at
  // 1 for each. The hook clears the entries of victims it does not need and
  // answers kSuccess to keep the node, or an Unschedulable verdict to drop it
  // (the preemptor could not run there even after the evictions).
  virtual Verdict SelectVictims(const RequestState& state, const model::PodInfo& preemptor,
                                const model::NodeInfo& node,
                                std::span<const model::PodInfo> victims,
                                std::span<uint8_t> needed) const = 0;
};

// Annotations a ReserveHook wants on the pod, key → value (owned text).
using PodAnnotations = std::vector<std::pair<std::string, std::string>>;

// A node-wide lock that a device plugin expects the binder to hold from
// before the Binding until it has allocated the pod (HAMi's
// hami.io/mutex.lock): an annotation on the Node naming the pod; one older
// than `expiry` no longer counts. cluster::PodBinder::LockNode takes it.
struct NodeLockSpec {
  std::string annotation;
  std::chrono::seconds expiry{0};
};

class ReserveHook {
 public:
  virtual ~ReserveHook() = default;
  // bind: called once the node passed the profile's resource re-check, inside
  // the cluster cache's critical section, with the node as the latest
  // snapshot shows it (usage includes every reservation). Either refuses
  // (a non-OK status whose message says why; bind then answers it as the
  // Error) or appends to `out` the annotations to reserve the pod with. The
  // server sends them in the Binding, which sets them on the pod in the same
  // write as its node; a failed bind writes nothing. Not on the hot path
  // (one call per bind), but under the cache's mutex: be quick, no I/O.
  virtual Status Reserve(const model::PodInfo& pod, const model::NodeInfo& node,
                         PodAnnotations& out) const = 0;
  // The bind cycle gave up after this hook's Reserve succeeded (a later
  // ReserveHook refused, or the Binding was refused or not sent). Undo what
  // Reserve did outside the cluster cache; the cache's reservation itself
  // (and every NodeAccounting state derived from it) is dropped by the bind
  // cycle, and no annotation was written. Called without any lock held, at most once per successful
  // Reserve. Default: nothing to undo.
  virtual void Unreserve(const model::PodInfo& /*pod*/, std::string_view /*node*/) const {}
  // The node lock this policy's pods need at bind, if any. The bind cycle
  // takes it after every Reserve succeeded and before the Binding, fails the
  // bind (the scheduler retries the pod) while another pod holds it, and
  // releases it if the Binding fails; once bound, the device plugin releases
  // it. Default: none.
  virtual std::optional<NodeLockSpec> NodeLock() const { return std::nullopt; }
};

class Policy {
 public:
  virtual ~Policy() = default;
  Policy(const Policy&) = delete;
  Policy& operator=(const Policy&) = delete;

  // The registered name ("NodeLabel").
  virtual std::string_view Name() const = 0;
  virtual const FilterHook* AsFilter() const { return nullptr; }
  virtual const ScoreHook* AsScorer() const { return nullptr; }
  virtual const PreemptHook* AsPreempter() const { return nullptr; }
  virtual const ReserveHook* AsReserver() const { return nullptr; }
  // The optional node blocks its hooks read (node_fields.h). Nodes that come
  // whole in a full-mode request are decoded with only the blocks its
  // profile's policies name; the others are left empty. The default names
  // them all: override it only with every block any hook of the policy reads.
  virtual model::NodeFields NodeFieldsRead() const { return model::NodeFields::kAll; }

 protected:
  Policy() = default;
};

// Kubernetes' DefaultNormalizeScore: scales scores so that the largest becomes
// kMaxNodeScore (all zero stays zero), then, if `reverse`, maps s to
// kMaxNodeScore - s (all zero then becomes kMaxNodeScore). Negative raw scores
// are treated as 0.
void NormalizeToMax(std::span<int64_t> scores, bool reverse);

// Min-max scaling onto [0, kMaxNodeScore]; the smallest raw score maps to 0 and
// the largest to kMaxNodeScore (or the reverse). All equal ⇒ all kMaxNodeScore.
void NormalizeMinMax(std::span<int64_t> scores, bool reverse);

}  // namespace schedext::policy

#endif  // SCHEDEXT_POLICY_POLICY_H_
