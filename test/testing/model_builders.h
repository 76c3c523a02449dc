// Builders of model::PodInfo and model::NodeInfo for tests.
//
// The model types hold std::string_views, so every string a builder receives
// is copied into a TestArena, which must outlive the objects built from it:
//
//   TestArena arena;
//   model::NodeInfo node = NodeBuilder(arena).Name("n1").Label("zone", "a")
//       .Taint("k", "v", model::TaintEffect::kNoSchedule).Condition("Ready", "True")
//       .Unschedulable().Build();
//   model::PodInfo pod = PodBuilder(arena).Name("p")
//       .Toleration("k", "v", model::TaintEffect::kNoSchedule).Build();
//   model::NodeInfo busy = NodeBuilder(arena).Name("n2")
//       .Allocatable({{"cpu", 4000}, {"memory", 1 << 30}, {"pods", 110}})
//       .Usage(/*pods=*/3, {{"cpu", 1500}, {"memory", 1 << 29}}).Build();
//
// Builders are cheap values; Build() may be called more than once. Header-only
// and test-only. Thread-safety: none (one test thread).
#ifndef SCHEDEXT_TEST_TESTING_MODEL_BUILDERS_H_
#define SCHEDEXT_TEST_TESTING_MODEL_BUILDERS_H_

#include <cstdint>
#include <deque>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedext/model/node_info.h"
#include "schedext/model/pod_info.h"
#include "schedext/model/resources.h"
#include "schedext/model/selectors.h"

namespace schedext::test {

// Owns the strings that built model objects view. Addresses are stable: a
// deque never moves its elements when it grows.
class TestArena {
 public:
  TestArena() = default;
  TestArena(const TestArena&) = delete;
  TestArena& operator=(const TestArena&) = delete;

  // A stable copy of `text`.
  std::string_view Intern(std::string_view text) { return strings_.emplace_back(text); }

  // `requirement` with its key and values re-pointed at arena copies.
  model::SelectorRequirement Intern(const model::SelectorRequirement& requirement) {
    model::SelectorRequirement out;
    out.key = Intern(requirement.key);
    out.op = requirement.op;
    for (std::string_view value : requirement.values) {
      out.values.push_back(Intern(value));
    }
    return out;
  }

  // A stable copy of `usage` (for NodeInfo::usage), its resource names
  // re-pointed at arena copies.
  const model::NodeUsage* Keep(const model::NodeUsage& usage) {
    model::NodeUsage& out = usages_.emplace_back(usage);
    for (model::ScalarResource& scalar : out.requested.scalars) {
      scalar.name = Intern(scalar.name);
    }
    for (model::ScalarResource& scalar : out.scoring_requested.scalars) {
      scalar.name = Intern(scalar.name);
    }
    return &out;
  }

  model::NodeSelectorTerm Intern(const model::NodeSelectorTerm& term) {
    model::NodeSelectorTerm out;
    for (const model::SelectorRequirement& r : term.match_expressions) {
      out.match_expressions.push_back(Intern(r));
    }
    for (const model::SelectorRequirement& r : term.match_fields) {
      out.match_fields.push_back(Intern(r));
    }
    return out;
  }

 private:
  std::deque<std::string> strings_;
  std::deque<model::NodeUsage> usages_;
};

// Resource amounts by name, CPU in milli-cores: {{"cpu", 500}, {"memory", 1 << 30}}.
using ResourceAmounts = std::initializer_list<std::pair<std::string_view, int64_t>>;

// A requirement for NodeSelectorTerm / PodBuilder affinity helpers. Its views
// must stay valid until it is passed to a builder (literals are fine).
inline model::SelectorRequirement Requirement(std::string_view key, model::SelectorOperator op,
                                              std::initializer_list<std::string_view> values = {}) {
  model::SelectorRequirement out;
  out.key = key;
  out.op = op;
  out.values.assign(values.begin(), values.end());
  return out;
}

class NodeBuilder {
 public:
  explicit NodeBuilder(TestArena& arena) : arena_(&arena) {}

  NodeBuilder& Name(std::string_view name) {
    node_.name = arena_->Intern(name);
    return *this;
  }
  NodeBuilder& Uid(std::string_view uid) {
    node_.uid = arena_->Intern(uid);
    return *this;
  }
  NodeBuilder& Label(std::string_view key, std::string_view value) {
    node_.labels.Set(arena_->Intern(key), arena_->Intern(value));
    return *this;
  }
  NodeBuilder& Annotation(std::string_view key, std::string_view value) {
    node_.annotations.Set(arena_->Intern(key), arena_->Intern(value));
    return *this;
  }
  NodeBuilder& Taint(std::string_view key, std::string_view value, model::TaintEffect effect) {
    node_.taints.push_back({arena_->Intern(key), arena_->Intern(value), effect});
    return *this;
  }
  NodeBuilder& Condition(std::string_view type, std::string_view status) {
    node_.conditions.push_back({arena_->Intern(type), arena_->Intern(status)});
    node_.UpdateConditionSummary();
    return *this;
  }
  // Condition("Ready", "True").
  NodeBuilder& Ready() { return Condition("Ready", "True"); }
  NodeBuilder& Unschedulable(bool unschedulable = true) {
    node_.unschedulable = unschedulable;
    return *this;
  }
  // Sets allocatable `resource` (CPU in milli-cores, others in units).
  NodeBuilder& Allocatable(std::string_view resource, int64_t amount) {
    node_.allocatable.Set(arena_->Intern(resource), amount);
    return *this;
  }
  // Sets every allocatable resource of `amounts`.
  NodeBuilder& Allocatable(ResourceAmounts amounts) {
    for (const auto& [resource, amount] : amounts) {
      Allocatable(resource, amount);
    }
    return *this;
  }
  // The cluster cache's usage of the node: `pods` pods whose requests sum to
  // `requested`; their scoring requests equal `requested`.
  NodeBuilder& Usage(int64_t pods, ResourceAmounts requested) {
    return Usage(pods, requested, requested);
  }
  // The same with scoring requests (100m / 200Mi defaults) of their own.
  NodeBuilder& Usage(int64_t pods, ResourceAmounts requested, ResourceAmounts scoring_requested) {
    model::NodeUsage usage;
    usage.pods = pods;
    for (const auto& [resource, amount] : requested) {
      usage.requested.Set(resource, amount);
    }
    for (const auto& [resource, amount] : scoring_requested) {
      usage.scoring_requested.Set(resource, amount);
    }
    node_.usage = arena_->Keep(usage);
    return *this;
  }
  // The usage the cluster cache counts for `pods` bound to the node.
  NodeBuilder& UsageOf(std::span<const model::PodInfo> pods) {
    model::NodeUsage usage;
    usage.pods = static_cast<int64_t>(pods.size());
    for (const model::PodInfo& pod : pods) {
      usage.requested.AddAll(pod.requests);
      usage.scoring_requested.AddAll(pod.scoring_requests);
    }
    node_.usage = arena_->Keep(usage);
    return *this;
  }
  // Back to no usage at all (schedext without a cluster connection).
  NodeBuilder& NoUsage() {
    node_.usage = nullptr;
    return *this;
  }
  NodeBuilder& Capacity(std::string_view resource, int64_t amount) {
    node_.capacity.Set(arena_->Intern(resource), amount);
    return *this;
  }
  NodeBuilder& RawJson(std::string_view raw_json) {
    node_.raw_json = arena_->Intern(raw_json);
    return *this;
  }

  model::NodeInfo Build() const { return node_; }

 private:
  TestArena* arena_;  // retained, not owned
  model::NodeInfo node_;
};

class PodBuilder {
 public:
  explicit PodBuilder(TestArena& arena) : arena_(&arena) {}

  PodBuilder& Name(std::string_view name) {
    pod_.name = arena_->Intern(name);
    return *this;
  }
  PodBuilder& Namespace(std::string_view namespace_name) {
    pod_.namespace_name = arena_->Intern(namespace_name);
    return *this;
  }
  PodBuilder& Uid(std::string_view uid) {
    pod_.uid = arena_->Intern(uid);
    return *this;
  }
  PodBuilder& NodeName(std::string_view node_name) {
    pod_.node_name = arena_->Intern(node_name);
    return *this;
  }
  PodBuilder& NominatedNodeName(std::string_view node_name) {
    pod_.nominated_node_name = arena_->Intern(node_name);
    return *this;
  }
  PodBuilder& Phase(std::string_view phase) {
    pod_.phase = arena_->Intern(phase);
    return *this;
  }
  PodBuilder& Priority(int32_t priority) {
    pod_.priority = priority;
    return *this;
  }
  PodBuilder& PriorityClassName(std::string_view name) {
    pod_.priority_class_name = arena_->Intern(name);
    return *this;
  }
  PodBuilder& PreemptionPolicy(std::string_view policy) {
    pod_.preemption_policy = arena_->Intern(policy);
    return *this;
  }
  PodBuilder& Label(std::string_view key, std::string_view value) {
    pod_.labels.Set(arena_->Intern(key), arena_->Intern(value));
    return *this;
  }
  PodBuilder& Annotation(std::string_view key, std::string_view value) {
    pod_.annotations.Set(arena_->Intern(key), arena_->Intern(value));
    return *this;
  }
  PodBuilder& NodeSelector(std::string_view key, std::string_view value) {
    pod_.node_selector.Set(arena_->Intern(key), arena_->Intern(value));
    return *this;
  }

  // An Equal toleration; `effect` nullopt tolerates every effect.
  PodBuilder& Toleration(std::string_view key, std::string_view value,
                         std::optional<model::TaintEffect> effect) {
    return AddToleration(key, model::TolerationOperator::kEqual, value, effect);
  }
  // An Exists toleration; an empty `key` tolerates every key.
  PodBuilder& TolerationExists(std::string_view key, std::optional<model::TaintEffect> effect) {
    return AddToleration(key, model::TolerationOperator::kExists, "", effect);
  }
  PodBuilder& AddToleration(std::string_view key, model::TolerationOperator op,
                            std::string_view value, std::optional<model::TaintEffect> effect) {
    model::Toleration toleration;
    toleration.key = arena_->Intern(key);
    toleration.op = op;
    toleration.value = arena_->Intern(value);
    toleration.effect = effect;
    pod_.tolerations.push_back(toleration);
    return *this;
  }

  // Adds one required node-affinity term (terms are ORed).
  PodBuilder& RequiredAffinityTerm(const model::NodeSelectorTerm& term) {
    pod_.has_required_node_affinity = true;
    pod_.required_node_affinity.push_back(arena_->Intern(term));
    return *this;
  }
  // Marks required node affinity present without adding a term (matches nothing).
  PodBuilder& EmptyRequiredAffinity() {
    pod_.has_required_node_affinity = true;
    return *this;
  }
  PodBuilder& PreferredAffinityTerm(int32_t weight, const model::NodeSelectorTerm& term) {
    pod_.preferred_node_affinity.push_back({weight, arena_->Intern(term)});
    return *this;
  }

  // Appends a container requesting `requests` ({{"cpu", 500}, {"memory", 1 << 30}};
  // CPU in milli-cores). Each named resource counts as requested.
  PodBuilder& Container(std::initializer_list<std::pair<std::string_view, int64_t>> requests,
                        std::initializer_list<std::pair<std::string_view, int64_t>> limits = {}) {
    pod_.containers.push_back(MakeContainer(requests, limits, /*restartable=*/false));
    return *this;
  }
  // Appends an init container; `restartable` makes it a sidecar.
  PodBuilder& InitContainer(std::initializer_list<std::pair<std::string_view, int64_t>> requests,
                            bool restartable = false) {
    pod_.init_containers.push_back(MakeContainer(requests, {}, restartable));
    return *this;
  }
  // Sets pod-level spec.resources; each named request counts as requested.
  PodBuilder& PodLevel(std::initializer_list<std::pair<std::string_view, int64_t>> requests,
                       std::initializer_list<std::pair<std::string_view, int64_t>> limits = {}) {
    pod_.pod_level = MakeContainer(requests, limits, /*restartable=*/false);
    return *this;
  }
  PodBuilder& Overhead(std::string_view resource, int64_t amount) {
    pod_.overhead.Set(arena_->Intern(resource), amount);
    return *this;
  }

  // The pod, with FinalizeRequests() applied.
  model::PodInfo Build() const {
    model::PodInfo pod = pod_;
    pod.FinalizeRequests();
    return pod;
  }

 private:
  model::ContainerResources MakeContainer(
      std::initializer_list<std::pair<std::string_view, int64_t>> requests,
      std::initializer_list<std::pair<std::string_view, int64_t>> limits, bool restartable) {
    model::ContainerResources container;
    for (const auto& [resource, amount] : requests) {
      container.requests.Set(arena_->Intern(resource), amount);
      container.has_cpu_request |= resource == model::kResourceCpu;
      container.has_memory_request |= resource == model::kResourceMemory;
    }
    for (const auto& [resource, amount] : limits) {
      container.limits.Set(arena_->Intern(resource), amount);
    }
    container.restartable = restartable;
    return container;
  }

  TestArena* arena_;  // retained, not owned
  model::PodInfo pod_;
};

// Pointers to `nodes`, in order, for a policy::NodeSpan.
inline std::vector<const model::NodeInfo*> NodePointers(const std::vector<model::NodeInfo>& nodes) {
  std::vector<const model::NodeInfo*> out;
  out.reserve(nodes.size());
  for (const model::NodeInfo& node : nodes) {
    out.push_back(&node);
  }
  return out;
}

}  // namespace schedext::test

#endif  // SCHEDEXT_TEST_TESTING_MODEL_BUILDERS_H_
