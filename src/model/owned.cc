// Deep copies of NodeInfo / PodInfo into one arena.
//
// Two passes over the same visitor: the first sums the bytes of every
// string_view, the second appends each string to the arena (reserved to the
// exact size, so it never reallocates and earlier views stay valid) and points
// the view at its copy. Every string field is visited by ForEachString* below;
// a new string field in the model must be added there (owned_test checks every
// field against an overwritten source).
#include "schedext/model/owned.h"

#include <utility>
#include <vector>

namespace schedext::model {
namespace {

// Counts in the first pass, copies and rebases in the second.
class Rebaser {
 public:
  explicit Rebaser(std::string& arena) : arena_(arena) {}

  void StartCopying() {
    arena_.clear();
    arena_.reserve(total_);
    copying_ = true;
  }

  void operator()(std::string_view& text) {
    if (!copying_) {
      total_ += text.size();
      return;
    }
    if (text.empty()) {
      text = {};
      return;
    }
    const size_t offset = arena_.size();
    arena_.append(text);
    text = std::string_view(arena_.data() + offset, text.size());
  }

 private:
  std::string& arena_;
  size_t total_ = 0;
  bool copying_ = false;
};

template <typename Fn>
void ForEachStringOfMap(StringMap& map, Fn& fn) {
  // StringMap exposes its entries read-only; rebuild it with rebased copies
  // (keys are already unique, so the order and contents are unchanged).
  std::vector<StringMap::Entry> entries(map.entries().begin(), map.entries().end());
  for (StringMap::Entry& entry : entries) {
    fn(entry.first);
    fn(entry.second);
  }
  map.Clear();
  for (const StringMap::Entry& entry : entries) {
    map.Set(entry.first, entry.second);
  }
}

template <typename Fn>
void ForEachStringOfResources(ResourceList& list, Fn& fn) {
  for (ScalarResource& scalar : list.scalars) {
    fn(scalar.name);
  }
}

template <typename Fn>
void ForEachStringOfRequirement(SelectorRequirement& requirement, Fn& fn) {
  fn(requirement.key);
  for (std::string_view& value : requirement.values) {
    fn(value);
  }
}

template <typename Fn>
void ForEachStringOfTerm(NodeSelectorTerm& term, Fn& fn) {
  for (SelectorRequirement& r : term.match_expressions) {
    ForEachStringOfRequirement(r, fn);
  }
  for (SelectorRequirement& r : term.match_fields) {
    ForEachStringOfRequirement(r, fn);
  }
}

template <typename Fn>
void ForEachStringOfNode(NodeInfo& node, Fn& fn) {
  fn(node.name);
  fn(node.uid);
  ForEachStringOfMap(node.labels, fn);
  ForEachStringOfMap(node.annotations, fn);
  for (Taint& taint : node.taints) {
    fn(taint.key);
    fn(taint.value);
  }
  for (NodeCondition& condition : node.conditions) {
    fn(condition.type);
    fn(condition.status);
  }
  ForEachStringOfResources(node.capacity, fn);
  ForEachStringOfResources(node.allocatable, fn);
}

template <typename Fn>
void ForEachStringOfContainers(std::vector<ContainerResources>& containers, Fn& fn) {
  for (ContainerResources& container : containers) {
    ForEachStringOfResources(container.requests, fn);
    ForEachStringOfResources(container.limits, fn);
  }
}

template <typename Fn>
void ForEachStringOfPod(PodInfo& pod, Fn& fn) {
  fn(pod.name);
  fn(pod.namespace_name);
  fn(pod.uid);
  fn(pod.node_name);
  fn(pod.nominated_node_name);
  fn(pod.phase);
  fn(pod.priority_class_name);
  fn(pod.preemption_policy);
  ForEachStringOfMap(pod.labels, fn);
  ForEachStringOfMap(pod.annotations, fn);
  ForEachStringOfMap(pod.node_selector, fn);
  for (NodeSelectorTerm& term : pod.required_node_affinity) {
    ForEachStringOfTerm(term, fn);
  }
  for (PreferredSchedulingTerm& term : pod.preferred_node_affinity) {
    ForEachStringOfTerm(term.preference, fn);
  }
  for (Toleration& toleration : pod.tolerations) {
    fn(toleration.key);
    fn(toleration.value);
  }
  ForEachStringOfContainers(pod.containers, fn);
  ForEachStringOfContainers(pod.init_containers, fn);
  ForEachStringOfResources(pod.pod_level.requests, fn);
  ForEachStringOfResources(pod.pod_level.limits, fn);
  ForEachStringOfResources(pod.overhead, fn);
  ForEachStringOfResources(pod.requests, fn);
  ForEachStringOfResources(pod.scoring_requests, fn);
  ForEachStringOfResources(pod.limits, fn);
}

}  // namespace

OwnedNode::OwnedNode(const NodeInfo& view, std::string_view resource_version, bool deleting)
    : info_(view), resource_version_(resource_version), deleting_(deleting) {
  info_.raw_json = {};
  info_.usage = nullptr;
  Rebaser rebase(arena_);
  ForEachStringOfNode(info_, rebase);
  rebase(resource_version_);
  rebase.StartCopying();
  ForEachStringOfNode(info_, rebase);
  rebase(resource_version_);
}

OwnedPod::OwnedPod(const PodInfo& view, std::string_view resource_version, bool deleting)
    : info_(view), resource_version_(resource_version), deleting_(deleting) {
  Rebaser rebase(arena_);
  ForEachStringOfPod(info_, rebase);
  rebase(resource_version_);
  rebase.StartCopying();
  ForEachStringOfPod(info_, rebase);
  rebase(resource_version_);
}

}  // namespace schedext::model
