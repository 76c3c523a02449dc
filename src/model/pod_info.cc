#include "schedext/model/pod_info.h"

#include <span>
#include <string_view>

namespace schedext::model {
namespace {

// Adds one container's requests to `list`. With `scoring`, a container whose
// request map does not name cpu (or memory) counts the kube-scheduler default
// instead: NonMissingContainerRequests keys on presence, so an explicit "0"
// stays 0.
void AddContainerRequests(ResourceList& list, const ContainerResources& container,
                          bool scoring) {
  const ResourceList& requests = container.requests;
  const bool default_cpu = scoring && !container.has_cpu_request;
  const bool default_memory = scoring && !container.has_memory_request;
  list.Add(kResourceCpu, default_cpu ? kDefaultMilliCpuRequest : requests.milli_cpu);
  list.Add(kResourceMemory, default_memory ? kDefaultMemoryRequest : requests.memory);
  list.Add(kResourceEphemeralStorage, requests.ephemeral_storage);
  list.Add(kResourcePods, requests.pods);
  for (const ScalarResource& scalar : requests.scalars) {
    list.Add(scalar.name, scalar.amount);
  }
}

constexpr std::string_view kHugePagesPrefix = "hugepages-";

// applyPodLevelResources: each pod-level resource `pod_level` requests
// replaces the containers' aggregate, zero included.
void ApplyPodLevelRequests(ResourceList& total, const ContainerResources& pod_level) {
  if (pod_level.has_cpu_request) {
    total.milli_cpu = pod_level.requests.milli_cpu;
  }
  if (pod_level.has_memory_request) {
    total.memory = pod_level.requests.memory;
  }
  for (const ScalarResource& scalar : pod_level.requests.scalars) {
    if (scalar.name.starts_with(kHugePagesPrefix)) {
      total.Set(scalar.name, scalar.amount);
    }
  }
}

// component-helpers PodRequests (spec requests only): per resource,
// max(regular containers + sidecars, the largest init-phase need), the
// pod-level requests instead where set, + overhead. Protocol doc §5.4.
ResourceList AggregateRequests(std::span<const ContainerResources> containers,
                               std::span<const ContainerResources> init_containers,
                               const ContainerResources& pod_level, const ResourceList& overhead,
                               bool scoring) {
  ResourceList total;
  for (const ContainerResources& container : containers) {
    AddContainerRequests(total, container, scoring);
  }
  // Sidecars start in order and keep running, so every later init container
  // runs next to all the sidecars declared before it.
  ResourceList sidecars;
  ResourceList init_max;
  ResourceList need;
  for (const ContainerResources& init : init_containers) {
    if (init.restartable) {
      AddContainerRequests(total, init, scoring);
      AddContainerRequests(sidecars, init, scoring);
      init_max.MaxWith(sidecars);
    } else {
      need.Clear();
      need.AddAll(sidecars);
      AddContainerRequests(need, init, scoring);
      init_max.MaxWith(need);
    }
  }
  total.MaxWith(init_max);
  ApplyPodLevelRequests(total, pod_level);
  // Overhead is added as it is, without defaults, in either mode.
  total.AddAll(overhead);
  return total;
}

// Whether PodRequests' map holds cpu (names = has_cpu_request, `overhead` its
// cpu) or memory at all, a key even at zero: a container or the pod level
// names it, or the overhead does. An overhead of exactly zero reads as
// absent, since the decoded list does not keep it.
bool RequestsName(const PodInfo& pod, bool ContainerResources::*names, int64_t overhead) {
  if (pod.pod_level.*names || overhead != 0) {
    return true;
  }
  for (const auto* list : {&pod.containers, &pod.init_containers}) {
    for (const ContainerResources& container : *list) {
      if (container.*names) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace

bool HasPodLevelRequests(const ContainerResources& pod_level) {
  if (pod_level.has_cpu_request || pod_level.has_memory_request) {
    return true;
  }
  for (const ScalarResource& scalar : pod_level.requests.scalars) {
    if (scalar.name.starts_with(kHugePagesPrefix)) {
      return true;
    }
  }
  return false;
}

ResourceList EffectiveRequests(std::span<const ContainerResources> containers,
                               std::span<const ContainerResources> init_containers,
                               const ContainerResources& pod_level, const ResourceList& overhead) {
  return AggregateRequests(containers, init_containers, pod_level, overhead, /*scoring=*/false);
}

// Version notes. Since 1.28 the scorers call PodRequests with
// NonMissingContainerRequests {cpu: 100m, memory: 200Mi}, which substitutes
// the defaults for regular, init and sidecar containers alike, and then
// applies the sidecar arithmetic above. Up to 1.27 (GetNonzeroRequestForResource)
// the defaults were the same and also keyed on presence, but init containers
// only counted as max(sum of containers, largest init container), with no
// sidecars. NodeResourcesFit's scorers use these defaults; BalancedAllocation
// uses the plain requests (useRequested), i.e. EffectiveRequests. Pod-level
// requests exist from 1.32 (on by default from 1.34); an API server without
// the feature drops spec.resources, so a pod that carries it is counted as
// the scheduler that sent it counts it.
ResourceList ScoringRequests(std::span<const ContainerResources> containers,
                             std::span<const ContainerResources> init_containers,
                             const ContainerResources& pod_level, const ResourceList& overhead) {
  return AggregateRequests(containers, init_containers, pod_level, overhead, /*scoring=*/true);
}

void PodInfo::FinalizeRequests() {
  requests = EffectiveRequests(containers, init_containers, pod_level, overhead);
  scoring_requests = ScoringRequests(containers, init_containers, pod_level, overhead);
  placing_milli_cpu = scoring_requests.milli_cpu;
  placing_memory = scoring_requests.memory;
  // CalculateResource (getNonMissingContainerRequests): with pod-level
  // requests, the defaults stand in only for a resource no one names.
  if (HasPodLevelRequests(pod_level)) {
    if (RequestsName(*this, &ContainerResources::has_cpu_request, overhead.milli_cpu)) {
      scoring_requests.milli_cpu = requests.milli_cpu;
    }
    if (RequestsName(*this, &ContainerResources::has_memory_request, overhead.memory)) {
      scoring_requests.memory = requests.memory;
    }
  }
  limits.Clear();
  for (const ContainerResources& container : containers) {
    limits.AddAll(container.limits);
  }
}

void PodInfo::Clear() {
  name = {};
  namespace_name = {};
  uid = {};
  node_name = {};
  nominated_node_name = {};
  phase = {};
  priority_class_name = {};
  preemption_policy = {};
  priority = 0;
  labels.Clear();
  annotations.Clear();
  node_selector.Clear();
  has_required_node_affinity = false;
  required_node_affinity.clear();
  preferred_node_affinity.clear();
  tolerations.clear();
  containers.clear();
  init_containers.clear();
  pod_level.requests.Clear();
  pod_level.limits.Clear();
  pod_level.has_cpu_request = false;
  pod_level.has_memory_request = false;
  overhead.Clear();
  requests.Clear();
  scoring_requests.Clear();
  placing_milli_cpu = 0;
  placing_memory = 0;
  limits.Clear();
}

bool PodMatchesNodeSelectorAndAffinity(const PodInfo& pod, const StringMap& node_labels,
                                       std::string_view node_name) {
  for (const StringMap::Entry& entry : pod.node_selector.entries()) {
    // An absent label never equals, not even an empty wanted value.
    if (node_labels.Find(entry.first) != entry.second) {
      return false;
    }
  }
  // A present required affinity with no terms matches no node at all.
  return !pod.has_required_node_affinity ||
         MatchesAny(pod.required_node_affinity, node_labels, node_name);
}

}  // namespace schedext::model
