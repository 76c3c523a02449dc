// Profile: an ordered set of weighted policies and the per-node loops that run
// them for one request.
//
// Built once from configuration, immutable afterwards, shared across request
// threads as std::shared_ptr<const Profile>. The loops do not allocate once the
// caller's outcome objects have grown to the request size (they are reused).
#ifndef SCHEDEXT_PIPELINE_PROFILE_H_
#define SCHEDEXT_PIPELINE_PROFILE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "schedext/config/config.h"
#include "schedext/policy/policy.h"
#include "schedext/policy/policy_host.h"
#include "schedext/policy/registry.h"
#include "schedext/status.h"

namespace schedext::pipeline {

// Highest score of the extender protocol (MaxExtenderPriority).
inline constexpr int64_t kMaxExtenderScore = 10;

// The 0..10 score of one node from Σ w_p·s_p over the scorers and Σ w_p: the
// weighted mean of the normalized scores onto [0, kMaxExtenderScore], rounded
// half up. The one place this formula lives (RunScorers and Explain).
inline int64_t ExtenderScore(int64_t weighted_total, int64_t total_weight) {
  const int64_t denominator = policy::kMaxNodeScore * total_weight;
  return (weighted_total * kMaxExtenderScore * 2 + denominator) / (2 * denominator);
}

struct Explanation;         // explain.h
enum class ExplainScoring;  // explain.h

// Result of RunFilters: every input node in exactly one of the three lists,
// by index into the request's node list, in request order.
struct FilterOutcome {
  struct Rejection {
    uint32_t node;
    std::string_view reason;
  };
  std::vector<uint32_t> passed;
  std::vector<Rejection> failed;        // Unschedulable
  std::vector<Rejection> unresolvable;  // UnschedulableAndUnresolvable
  void Clear();
};

// Per-request scratch of RunScorers, reused across requests.
struct ScoreScratch {
  std::vector<int64_t> raw;  // one row of node scores per scorer
  policy::RequestState state;
};

// One candidate node of a preemption, as the service resolved it.
struct PreemptCandidate {
  const model::NodeInfo* node = nullptr;  // nullptr: not known to schedext
  std::span<const model::PodInfo> victims;
};

// What RunPreempt decided for one candidate, and why (for explain and the
// preemption event; the verb reads only `keep` and `needed`).
struct PreemptDecision {
  bool keep = false;
  std::vector<uint8_t> needed;  // per victim, when kept
  // Dropped: the policy that dropped the node (a filter eviction cannot help,
  // or a preempt hook) and its verdict's reason, copied. Empty when kept.
  std::string_view dropped_by;
  bool dropped_by_preempt = false;  // by a preempt hook (else by a filter)
  std::string reason;
  // Kept: per victim, bit p set when the profile's p-th preempt hook
  // (preempter_names()) needs it evicted. All zero with `needed` all set:
  // no hook needed any victim (or the profile has none), so the scheduler's
  // list went back unchanged.
  std::vector<uint64_t> needed_by;
};

class Profile {
 public:
  // Creates each policy through `registry`, checks weights (> 0), duplicate
  // policy names and that every policy has at least one hook. Errors name the
  // field: `profiles[0].policies[2]: unknown policy "NodeLable" (known: ...)`.
  // `path` is the profile's place in the configuration ("profiles[0]").
  // `handle` (may be null) is lent to the factories (PolicyContext::handle)
  // and must outlive the profile; null: the profile owns a private
  // PolicyHost, whose registrations reach nothing (for tests and
  // --check-config).
  // `names` (may be null: the profile owns a private one) is where the
  // policies intern the names they look up per node (PolicyContext::names);
  // give every profile the cache's table, then freeze it (model/name_table.h).
  static StatusOr<std::shared_ptr<const Profile>> Build(
      const config::ProfileConfig& config, const policy::Registry& registry,
      std::string_view path, policy::PolicyHandle* handle = nullptr,
      std::shared_ptr<model::NameTable> names = nullptr);

  const std::string& name() const { return name_; }
  std::span<const std::unique_ptr<policy::Policy>> policies() const { return policies_; }
  // The node blocks a full-mode request is decoded with for this profile:
  // those any of its policies reads (Policy::NodeFieldsRead).
  model::NodeFields node_fields() const { return node_fields_; }

  // Runs each PreFilter once, then every filter on each node in configured
  // order up to the first rejection. A kError verdict or PreFilter failure
  // aborts with kInternal naming the policy.
  Status RunFilters(const model::PodInfo& pod, policy::NodeSpan nodes, policy::RequestState& state,
                    FilterOutcome& out) const;

  // Scores every node: per scorer PreScore, raw scores, Normalize onto
  // [0, 100] (range-checked); then per node
  //   score = round(Σ w_p·s_p × 10 / (100 × Σ w_p))  ∈ [0, 10].
  // With no scorer every node scores 0. `out` gets one score per node.
  Status RunScorers(const model::PodInfo& pod, policy::NodeSpan nodes, ScoreScratch& scratch,
                    std::vector<int64_t>& out) const;

  // For each candidate: drops it when a filter that eviction cannot help
  // rejects the node, then lets each PreemptHook trim the victims or drop the
  // node; each hook starts from every victim needed and a victim stays when
  // any hook needs it (each hook's constraint holds for the union). A candidate whose node is unknown (nullptr) is kept unchanged: without
  // the node object nothing can be re-checked. A hook that clears every victim
  // leaves the scheduler's list unchanged (the protocol forbids empty lists).
  // `out` gets one decision per candidate.
  Status RunPreempt(const model::PodInfo& preemptor, std::span<const PreemptCandidate> candidates,
                    policy::RequestState& state, std::vector<PreemptDecision>& out) const;

  // The filters that eviction can help (resource fit), with their PreFilter, on
  // one node: nullopt when the pod fits, else the first rejection's reason.
  // bind uses it to re-check a node in the same critical section that
  // reserves it.
  std::optional<std::string> CheckFit(const model::PodInfo& pod,
                                      const model::NodeInfo& node) const;

  // bind, after CheckFit passed, in the same critical section: each policy's
  // ReserveHook in configured order; the first refusal is returned as
  // "<policy>: <message>" (nothing appended by later hooks). The annotations
  // of all hooks are appended to `out`. `*reserved` (may be null) gets how
  // many hooks' Reserve succeeded (all of them, or those before a refusal):
  // what Unreserve must undo.
  std::optional<std::string> Reserve(const model::PodInfo& pod, const model::NodeInfo& node,
                                     policy::PodAnnotations& out,
                                     size_t* reserved = nullptr) const;
  // The bind gave up: Unreserve of the first `reserved` ReserveHooks, last
  // first. Outside every lock.
  void Unreserve(const model::PodInfo& pod, std::string_view node, size_t reserved) const;

  // Explain mode (explain.h; in src/pipeline/explain.cc): the same hooks as
  // RunFilters and RunScorers on `nodes`, keeping every verdict and score.
  // Never fails: the verbs' errors are reported in `out`. Not for the verbs'
  // path (it allocates per node).
  void Explain(const model::PodInfo& pod, policy::NodeSpan nodes, ExplainScoring scoring,
               Explanation& out) const;

  // The policies with a preempt hook, in configured order (the bits of
  // PreemptDecision::needed_by).
  std::vector<std::string_view> preempter_names() const;

  bool has_filters() const { return !filters_.empty(); }
  // Some policy annotates pods at bind: bind must not happen without a
  // reservation in the cluster cache.
  bool has_reservers() const { return !reservers_.empty(); }
  // The node locks the ReserveHooks ask for (ReserveHook::NodeLock), in
  // configured order: the bind cycle takes them around the Binding.
  std::span<const policy::NodeLockSpec> node_locks() const { return node_locks_; }
  bool has_scorers() const { return !scorers_.empty(); }

 private:
  struct NamedFilter {
    std::string_view policy;
    const policy::FilterHook* hook;
  };
  struct WeightedScorer {
    std::string_view policy;
    const policy::ScoreHook* hook;
    int64_t weight;
    bool needs_usage;  // hook->NeedsNodeUsage()
  };
  // The prescore error of a scorer that needs node usage, for a node without.
  static Status MissingUsage(const WeightedScorer& scorer, const model::NodeInfo& node);
  struct NamedPreempter {
    std::string_view policy;
    const policy::PreemptHook* hook;
  };
  struct NamedReserver {
    std::string_view policy;
    const policy::ReserveHook* hook;
  };

  Profile() = default;

  std::string name_;
  // The handle when Build's caller gave none; declared before the policies,
  // so it outlives them.
  std::unique_ptr<policy::PolicyHost> own_host_;
  // The policies' interned names point into it: declared before them too.
  std::shared_ptr<model::NameTable> names_;
  std::vector<std::unique_ptr<policy::Policy>> policies_;
  std::vector<NamedFilter> filters_;
  std::vector<WeightedScorer> scorers_;
  std::vector<NamedPreempter> preempters_;
  std::vector<NamedReserver> reservers_;
  std::vector<policy::NodeLockSpec> node_locks_;
  int64_t total_weight_ = 0;
  model::NodeFields node_fields_ = model::NodeFields::kNone;
  // What the per-node loops prefetch of each NodeInfo: its first line (usage,
  // taints, conditions) and the lines of this profile's node summaries.
  std::array<uint16_t, 5> prefetch_offsets_{};
  size_t prefetch_count_ = 0;

  void PrefetchNode(policy::NodeSpan nodes, size_t i) const;
};

}  // namespace schedext::pipeline

#endif  // SCHEDEXT_PIPELINE_PROFILE_H_
