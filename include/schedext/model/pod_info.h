// PodInfo: the compact view of a v1.Pod that policies read, and the effective
// requests arithmetic of kube-scheduler (component-helpers PodRequests).
//
// Strings are views into storage kept alive by whoever built the PodInfo (the
// request body or the decoder's parser for a request). Thread-safety: an
// immutable value once built; safe to read from many threads.
#ifndef SCHEDEXT_MODEL_POD_INFO_H_
#define SCHEDEXT_MODEL_POD_INFO_H_

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "schedext/model/resources.h"
#include "schedext/model/selectors.h"

namespace schedext::model {

// What scoring substitutes for a container that sets no request at all
// (kube-scheduler's DefaultMilliCPURequest / DefaultMemoryRequest).
inline constexpr int64_t kDefaultMilliCpuRequest = 100;
inline constexpr int64_t kDefaultMemoryRequest = 200 * 1024 * 1024;

// The resources of one container, or of the whole pod (PodInfo::pod_level).
struct ContainerResources {
  ResourceList requests;
  ResourceList limits;
  // The request map names cpu / memory (even with a zero amount).
  bool has_cpu_request = false;
  bool has_memory_request = false;
  // An init container with restartPolicy: Always (a sidecar).
  bool restartable = false;
};

// spec.resources.requests names a resource the pod level may set, even at
// zero: cpu, memory or hugepages-* (IsPodLevelRequestsSet). The API server
// rejects other names there; kube-scheduler ignores them if it gets them.
// Pod-level limits alone change no request: the API server defaults the
// pod-level requests from them before anyone schedules.
bool HasPodLevelRequests(const ContainerResources& pod_level);

// Effective requests as NodeResourcesFit computes them (component-helpers
// PodRequests; protocol doc §5.4): per resource, max(sum of containers incl.
// sidecars, max over init containers of their init-phase need); then each
// resource `pod_level` requests replaces that aggregate; then + overhead.
ResourceList EffectiveRequests(std::span<const ContainerResources> containers,
                               std::span<const ContainerResources> init_containers,
                               const ContainerResources& pod_level, const ResourceList& overhead);

// The same with the scoring defaults: a container (regular or init) that names
// no cpu request counts kDefaultMilliCpuRequest, no memory request
// kDefaultMemoryRequest, before the pod-level requests replace the aggregate.
// What the allocation scorers add for the pod being scheduled
// (calculatePodResourceRequest).
ResourceList ScoringRequests(std::span<const ContainerResources> containers,
                             std::span<const ContainerResources> init_containers,
                             const ContainerResources& pod_level, const ResourceList& overhead);

struct PodInfo {
  std::string_view name;
  std::string_view namespace_name;
  std::string_view uid;
  std::string_view node_name;            // spec.nodeName
  std::string_view nominated_node_name;  // status.nominatedNodeName
  std::string_view phase;                // status.phase
  std::string_view priority_class_name;
  std::string_view preemption_policy;  // "" when absent
  int32_t priority = 0;                // spec.priority; absent ⇒ 0

  StringMap labels;
  StringMap annotations;
  StringMap node_selector;
  // spec.affinity.nodeAffinity
  bool has_required_node_affinity = false;
  std::vector<NodeSelectorTerm> required_node_affinity;
  std::vector<PreferredSchedulingTerm> preferred_node_affinity;
  std::vector<Toleration> tolerations;

  std::vector<ContainerResources> containers;
  std::vector<ContainerResources> init_containers;
  ContainerResources pod_level;  // spec.resources (restartable unused)
  ResourceList overhead;

  // Derived by FinalizeRequests().
  ResourceList requests;  // EffectiveRequests
  // The pod's cpu and memory as kube-scheduler counts them on its node for
  // the scorers (NodeInfo.NonZeroRequested, from PodInfo.CalculateResource):
  // ScoringRequests, except that with pod-level requests a resource
  // `requests` names (a container, the pod level or the overhead names it)
  // takes no default. Other resources as in `requests`.
  ResourceList scoring_requests;
  // ScoringRequests' cpu and memory: what the allocation scorers add for this
  // pod when it is the one being placed. Differ from scoring_requests' only
  // when pod-level requests are set.
  int64_t placing_milli_cpu = 0;
  int64_t placing_memory = 0;
  // Sum of the regular containers' limits (pod-level limits, which only
  // cover cpu, memory and hugepages-*, are not folded in: no reader needs them).
  ResourceList limits;

  // Computes the derived fields above from the containers, pod_level and overhead.
  void FinalizeRequests();
  // Resets every field, keeping vector capacity for reuse.
  void Clear();
};

// spec.nodeSelector and required node affinity both satisfied by the node
// (kube-scheduler's NodeAffinity filter, without its configured addedAffinity).
bool PodMatchesNodeSelectorAndAffinity(const PodInfo& pod, const StringMap& node_labels,
                                       std::string_view node_name);

}  // namespace schedext::model

#endif  // SCHEDEXT_MODEL_POD_INFO_H_
