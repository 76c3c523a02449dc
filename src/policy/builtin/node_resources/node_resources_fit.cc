#include "policy/builtin/node_resources/node_resources_fit.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policy/args.h"
#include "policy/builtin/node_resources/resource_args.h"
#include "policy/builtin/node_resources/resource_summary.h"
#include "schedext/model/quantity.h"
#include "schedext/model/resources.h"

namespace schedext::policy {
namespace {

using model::Int128;

constexpr std::string_view kName = "NodeResourcesFit";

// kube-scheduler's reasons, verbatim: they land in FailedScheduling events
// next to the ones kube-scheduler's own NodeResourcesFit writes.
constexpr std::string_view kTooManyPods = "Too many pods";
constexpr std::string_view kInsufficientCpu = "Insufficient cpu";
constexpr std::string_view kInsufficientMemory = "Insufficient memory";
constexpr std::string_view kInsufficientEphemeralStorage = "Insufficient ephemeral-storage";
// preempt without a PreFilter has no per-request text for scalar resources.
constexpr std::string_view kInsufficientScalar =
    "Insufficient hugepages or extended resources, even after preemption";
constexpr std::string_view kNeedsClusterCache =
    "NodeResourcesFit needs the cluster cache (no Kubernetes API connection)";
constexpr std::string_view kNoPreFilterState = "NodeResourcesFit: Filter ran without PreFilter";
constexpr std::string_view kVictimsMismatch =
    "NodeResourcesFit: victims and needed differ in length";

enum class Kind : uint8_t { kCpu, kMemory, kEphemeralStorage, kScalar };

// One resource the pod requests a positive amount of.
struct Demand {
  Kind kind = Kind::kScalar;
  // kScalar: the pod's resource name, with its id when some policy interned
  // it (the per-node lookups then compare ids).
  model::InternedName name;
  int64_t amount = 0;
  std::string_view reason;
};

int64_t AmountOf(const model::ResourceList& list, const Demand& demand) {
  switch (demand.kind) {
    case Kind::kCpu:
      return list.milli_cpu;
    case Kind::kMemory:
      return list.memory;
    case Kind::kEphemeralStorage:
      return list.ephemeral_storage;
    case Kind::kScalar:
      break;
  }
  return list.Get(demand.name);
}

// What PreFilter computes once per request: the demands to check on every
// node, in kube-scheduler's order, with their reasons.
class FitState final : public StateData {
 public:
  std::vector<Demand> demands;
  // "Insufficient <name>" for the scalar demands. Reserved before the first
  // push, so the views in `demands` stay valid. Lives until the request state
  // is cleared, which happens after the reply has been encoded.
  std::vector<std::string> scalar_reasons;
};

// Fills `out` with the pod's positive requests (fitsRequest skips zero ones)
// other than ignored extended resources. Scalar reasons are built into
// `out.scalar_reasons` when `own_reasons`, else they are kInsufficientScalar.
// `names` (may be null) gives the scalar demands their ids.
void CollectDemands(const model::PodInfo& pod, const IgnoredResources& ignored, bool own_reasons,
                    const model::NameTable* names, FitState& out) {
  const model::ResourceList& requests = pod.requests;
  if (requests.milli_cpu > 0) {
    out.demands.push_back(
        {Kind::kCpu, {model::kResourceCpu}, requests.milli_cpu, kInsufficientCpu});
  }
  if (requests.memory > 0) {
    out.demands.push_back(
        {Kind::kMemory, {model::kResourceMemory}, requests.memory, kInsufficientMemory});
  }
  if (requests.ephemeral_storage > 0) {
    out.demands.push_back({Kind::kEphemeralStorage, {model::kResourceEphemeralStorage},
                           requests.ephemeral_storage, kInsufficientEphemeralStorage});
  }
  // The pod's own "pods" request is not a demand: kube-scheduler checks only
  // the node's pod count.
  auto counts = [&ignored](const model::ScalarResource& scalar) {
    return scalar.amount > 0 && !ignored.Ignores(scalar.name);
  };
  if (own_reasons) {
    size_t n = 0;
    for (const model::ScalarResource& scalar : requests.scalars) {
      n += counts(scalar) ? 1 : 0;
    }
    out.scalar_reasons.reserve(n);
  }
  for (const model::ScalarResource& scalar : requests.scalars) {
    if (!counts(scalar)) {
      continue;
    }
    std::string_view reason = kInsufficientScalar;
    if (own_reasons) {
      reason = out.scalar_reasons.emplace_back("Insufficient " + std::string(scalar.name));
    }
    const model::InternedName name{scalar.name,
                                   names != nullptr ? names->Find(scalar.name) : model::kNoNameId,
                                   names};
    out.demands.push_back({Kind::kScalar, name, scalar.amount, reason});
  }
}

// What `node` has of `demand` and what its pods request of it: cpu, memory
// and ephemeral-storage from the node's summary, the rest from the node.
struct NodeAmounts {
  int64_t allocatable = 0;
  int64_t requested = 0;
};
NodeAmounts AmountsOf(const ResourceSummary& summary, const model::NodeInfo& node,
                      const Demand& demand) {
  switch (demand.kind) {
    case Kind::kCpu:
      return {summary.allocatable_cpu, summary.requested_cpu};
    case Kind::kMemory:
      return {summary.allocatable_memory, summary.requested_memory};
    case Kind::kEphemeralStorage:
      return {summary.allocatable_ephemeral_storage, summary.requested_ephemeral_storage};
    case Kind::kScalar:
      break;
  }
  return {node.allocatable.Get(demand.name), node.usage->requested.Get(demand.name)};
}

// The reason for the first resource the pod lacks on `node` (whose resource
// summary is `summary`) once the victims marked in `evicted` are gone, or
// nullopt when it fits. kube-scheduler's fitsRequest: pod count first, then
// `request > allocatable - requested` per demand. Sums are taken in 128 bits
// so that absurd amounts cannot overflow. Allocation-free; O(demands ×
// victims).
std::optional<std::string_view> Shortfall(std::span<const Demand> demands,
                                          const ResourceSummary& summary,
                                          const model::NodeInfo& node,
                                          std::span<const model::PodInfo> victims,
                                          std::span<const uint8_t> evicted) {
  int64_t evicted_pods = 0;
  for (uint8_t e : evicted) {
    evicted_pods += e != 0 ? 1 : 0;
  }
  if (Int128(summary.pods) - evicted_pods + 1 > summary.allocatable_pods) {
    return kTooManyPods;
  }
  for (const Demand& demand : demands) {
    Int128 freed = 0;
    for (size_t j = 0; j < victims.size(); ++j) {
      if (evicted[j] != 0) {
        freed += AmountOf(victims[j].requests, demand);
      }
    }
    const NodeAmounts node_amounts = AmountsOf(summary, node, demand);
    const Int128 available = Int128(node_amounts.allocatable) - node_amounts.requested + freed;
    if (demand.amount > available) {
      return demand.reason;
    }
  }
  return std::nullopt;
}

class NodeResourcesFit final : public Policy, public FilterHook, public PreemptHook {
 public:
  NodeResourcesFit(IgnoredResources ignored, const PolicyContext& context)
      : ignored_(std::move(ignored)),
        names_(context.names),
        summaries_(ResourceSummaries::For(context.handle)) {}

  std::string_view Name() const override { return kName; }
  model::NodeFields NodeFieldsRead() const override { return model::NodeFields::kResources; }
  const FilterHook* AsFilter() const override { return this; }
  const PreemptHook* AsPreempter() const override { return this; }

  // FilterHook
  Status PreFilter(RequestState& state, const model::PodInfo& pod) const override {
    auto fit = std::make_unique<FitState>();
    CollectDemands(pod, ignored_, /*own_reasons=*/true, names_, *fit);
    state.Set(this, std::move(fit));
    return OkStatus();
  }
  Verdict Filter(const RequestState& state, const model::PodInfo& /*pod*/,
                 const model::NodeInfo& node) const override {
    if (node.usage == nullptr) {
      return Verdict::Error(kNeedsClusterCache);
    }
    const FitState* fit = state.GetAs<FitState>(this);
    if (fit == nullptr) {
      return Verdict::Error(kNoPreFilterState);
    }
    if (std::optional<std::string_view> reason =
            Shortfall(fit->demands, summaries_.Of(node), node, {}, {})) {
      return Verdict::Unschedulable(*reason);
    }
    return Verdict::Success();
  }
  bool EvictionCanHelp() const override { return true; }

  // The first shortfall Filter found, with the node's amounts (cpu in
  // millicores, the others in the resource's base unit), ending in "short by
  // <amount>" for the nearest-node ranking of the SchedextUnschedulable event.
  std::string Detail(const RequestState& state, const model::PodInfo& /*pod*/,
                     const model::NodeInfo& node) const override {
    const FitState* fit = state.GetAs<FitState>(this);
    if (fit == nullptr || node.usage == nullptr) {
      return {};
    }
    const ResourceSummary& summary = summaries_.Of(node);
    if (Int128(summary.pods) + 1 > summary.allocatable_pods) {
      return "pods: " + std::to_string(summary.pods) + " of " +
             std::to_string(summary.allocatable_pods) + " allowed";
    }
    for (const Demand& demand : fit->demands) {
      const NodeAmounts amounts = AmountsOf(summary, node, demand);
      const Int128 free = Int128(amounts.allocatable) - amounts.requested;
      if (demand.amount > free) {
        const std::string_view unit = demand.kind == Kind::kCpu ? "m" : "";
        auto text = [unit](Int128 v) {
          return std::to_string(static_cast<long long>(v)) + std::string(unit);
        };
        return std::string(demand.name.text) + ": requested " + text(demand.amount) + ", free " +
               text(free) + " of " + text(amounts.allocatable) + " allocatable, short by " +
               text(demand.amount - free);
      }
    }
    return {};
  }

  // PreemptHook
  // kube-scheduler's SelectVictimsOnNode for this one filter: evict every
  // candidate victim and re-check; if the pod still does not fit, drop the
  // node. Otherwise reprieve victims from the most important down, keeping one
  // on the node whenever the pod still fits with it there, so the victims left
  // to evict are the least important ones that are needed.
  Verdict SelectVictims(const RequestState& state, const model::PodInfo& preemptor,
                        const model::NodeInfo& node, std::span<const model::PodInfo> victims,
                        std::span<uint8_t> needed) const override {
    if (node.usage == nullptr) {
      return Verdict::Error(kNeedsClusterCache);
    }
    if (needed.size() != victims.size()) {
      return Verdict::Error(kVictimsMismatch);
    }
    // The pipeline skips PreFilter for filters that eviction can help, so the
    // demands are usually collected here, with a generic scalar reason (text
    // built now would not outlive this call).
    FitState local;
    const FitState* fit = state.GetAs<FitState>(this);
    if (fit == nullptr) {
      CollectDemands(preemptor, ignored_, /*own_reasons=*/false, names_, local);
      fit = &local;
    }
    const ResourceSummary summary = summaries_.Of(node);
    // Victims an earlier hook already cleared stay on the node.
    if (std::optional<std::string_view> reason =
            Shortfall(fit->demands, summary, node, victims, needed)) {
      return Verdict::Unschedulable(*reason);
    }
    for (size_t i = 0; i < victims.size(); ++i) {
      if (needed[i] == 0) {
        continue;
      }
      needed[i] = 0;
      if (Shortfall(fit->demands, summary, node, victims, needed).has_value()) {
        needed[i] = 1;
      }
    }
    return Verdict::Success();
  }

 private:
  const IgnoredResources ignored_;
  // Frozen by the time requests run: Find from any thread (name_table.h).
  const model::NameTable* const names_;
  // Shared with the profile's allocation scorers (resource_summary.h).
  const ResourceSummaries summaries_;
};

}  // namespace

StatusOr<std::unique_ptr<Policy>> NewNodeResourcesFit(const nlohmann::json& args,
                                                      const PolicyContext& context) {
  SCHEDEXT_ASSIGN_OR_RETURN(
      ArgsReader reader,
      ArgsReader::Make(args, context.args_path, {"ignoredResources", "ignoredResourceGroups"}));
  SCHEDEXT_ASSIGN_OR_RETURN(IgnoredResources ignored, ReadIgnoredResources(reader));
  return std::unique_ptr<Policy>(std::make_unique<NodeResourcesFit>(std::move(ignored), context));
}

}  // namespace schedext::policy
