#include "schedext/model/pod_info.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedext/model/node_info.h"

namespace schedext::model {
namespace {

constexpr int64_t kMi = 1024 * 1024;
constexpr int64_t kGi = 1024 * kMi;

using Amounts = std::initializer_list<std::pair<std::string_view, int64_t>>;

ResourceList List(Amounts amounts) {
  ResourceList list;
  for (const auto& [name, amount] : amounts) {
    list.Set(name, amount);
  }
  return list;
}

// A container whose request map names exactly `requests` (zeros included).
ContainerResources Container(Amounts requests, Amounts limits = {}) {
  ContainerResources c;
  c.requests = List(requests);
  c.limits = List(limits);
  for (const auto& [name, amount] : requests) {
    c.has_cpu_request = c.has_cpu_request || name == kResourceCpu;
    c.has_memory_request = c.has_memory_request || name == kResourceMemory;
  }
  return c;
}

ContainerResources Sidecar(Amounts requests) {
  ContainerResources c = Container(requests);
  c.restartable = true;
  return c;
}

struct RequestsCase {
  std::string name;
  std::vector<ContainerResources> containers;
  std::vector<ContainerResources> init_containers;
  ResourceList overhead;
  ResourceList want;
};

// The non-zero amounts of `list` by name: the scalars' order depends on which
// container named them first, which the arithmetic does not promise.
std::map<std::string_view, int64_t> NonZero(const ResourceList& list) {
  std::map<std::string_view, int64_t> amounts;
  list.ForEach([&amounts](std::string_view name, int64_t amount) { amounts[name] = amount; });
  return amounts;
}

void ExpectRequests(const std::vector<RequestsCase>& cases, bool scoring) {
  for (const RequestsCase& c : cases) {
    SCOPED_TRACE(c.name);
    const ContainerResources no_pod_level;
    const ResourceList got =
        scoring ? ScoringRequests(c.containers, c.init_containers, no_pod_level, c.overhead)
                : EffectiveRequests(c.containers, c.init_containers, no_pod_level, c.overhead);
    EXPECT_EQ(NonZero(got), NonZero(c.want));
  }
}

TEST(EffectiveRequestsTest, FollowsPodRequestsArithmetic) {
  const std::vector<RequestsCase> cases = {
      {"empty pod", {}, {}, {}, {}},
      {"containers are summed",
       {Container({{"cpu", 100}, {"memory", 200 * kMi}}),
        Container({{"cpu", 300}, {"memory", kMi}})},
       {},
       {},
       // cpu 100 + 300, memory 200Mi + 1Mi
       List({{"cpu", 400}, {"memory", 201 * kMi}})},
      {"container without requests adds nothing",
       {Container({}), Container({{"cpu", 250}})},
       {},
       {},
       List({{"cpu", 250}})},
      {"largest init container wins per resource",
       {Container({{"cpu", 100}, {"memory", kGi}}), Container({{"cpu", 200}})},
       {Container({{"cpu", 500}, {"memory", 512 * kMi}}), Container({{"cpu", 400}})},
       {},
       // cpu max(100 + 200, 500, 400) = 500; memory max(1Gi, 512Mi) = 1Gi
       List({{"cpu", 500}, {"memory", kGi}})},
      {"init containers run one at a time",
       {Container({{"cpu", 100}})},
       {Container({{"cpu", 300}}), Container({{"cpu", 300}})},
       {},
       // max(100, 300, 300) = 300, not 600
       List({{"cpu", 300}})},
      {"sidecars add to the sum and to later init containers",
       {Container({{"cpu", 100}})},
       {Sidecar({{"cpu", 50}}), Container({{"cpu", 400}}), Sidecar({{"cpu", 30}})},
       {},
       // sum = 100 + 50 + 30 = 180; init needs: 50, 400 + 50 = 450, 50 + 30 = 80
       // max(180, 450) = 450
       List({{"cpu", 450}})},
      {"sidecars can dominate",
       {Container({{"cpu", 100}})},
       {Sidecar({{"cpu", 200}}), Container({{"cpu", 50}})},
       {},
       // sum = 100 + 200 = 300; init needs: 200, 50 + 200 = 250; max(300, 250) = 300
       List({{"cpu", 300}})},
      {"a sidecar after an init container does not raise its need",
       {Container({{"cpu", 100}})},
       {Container({{"cpu", 500}}), Sidecar({{"cpu", 100}})},
       {},
       // sum = 100 + 100 = 200; init needs: 500, 100; max(200, 500) = 500
       List({{"cpu", 500}})},
      {"sidecar need is cumulative",
       {},
       {Sidecar({{"memory", 100 * kMi}}), Sidecar({{"memory", 200 * kMi}}),
        Container({{"memory", 50 * kMi}})},
       {},
       // sum = 100Mi + 200Mi = 300Mi; needs: 100Mi, 300Mi, 50Mi + 300Mi = 350Mi
       List({{"memory", 350 * kMi}})},
      {"overhead is added after the max",
       {Container({{"cpu", 100}})},
       {Container({{"cpu", 400}})},
       List({{"cpu", 250}, {"memory", 64 * kMi}}),
       // max(100, 400) + 250 = 650; memory 0 + 64Mi
       List({{"cpu", 650}, {"memory", 64 * kMi}})},
      {"scalar and well-known resources follow the same rules",
       {Container(
           {{"example.com/gpu", 1}, {"ephemeral-storage", kGi}, {"hugepages-2Mi", 4 * kMi}})},
       {Container({{"example.com/gpu", 2}}), Sidecar({{"hugepages-2Mi", 2 * kMi}})},
       List({{"pods", 1}}),
       // gpu max(1, 2) = 2; hugepages 4Mi + 2Mi = 6Mi; storage 1Gi; pods 0 + 1
       List({{"example.com/gpu", 2},
             {"ephemeral-storage", kGi},
             {"hugepages-2Mi", 6 * kMi},
             {"pods", 1}})},
      {"no defaults for missing requests",
       {Container({{"example.com/gpu", 1}})},
       {Container({})},
       {},
       List({{"example.com/gpu", 1}})},
  };
  ExpectRequests(cases, /*scoring=*/false);
}

TEST(ScoringRequestsTest, SubstitutesDefaultsForMissingCpuAndMemory) {
  constexpr int64_t kCpu = kDefaultMilliCpuRequest;  // 100m
  constexpr int64_t kMem = kDefaultMemoryRequest;    // 200Mi
  static_assert(kMem == 200 * kMi);
  const std::vector<RequestsCase> cases = {
      {"empty pod has no containers to default", {}, {}, {}, {}},
      {"container without requests",
       {Container({})},
       {},
       {},
       List({{"cpu", kCpu}, {"memory", kMem}})},
      {"explicit zero is kept",
       {Container({{"cpu", 0}, {"memory", 0}})},
       {},
       {},
       List({})},
      {"only the missing resource is defaulted",
       {Container({{"cpu", 250}}), Container({{"memory", kGi}})},
       {},
       {},
       // cpu 250 + 100 (default); memory 200Mi (default) + 1Gi
       List({{"cpu", 250 + kCpu}, {"memory", kMem + kGi}})},
      {"other resources do not count as naming cpu",
       {Container({{"example.com/gpu", 1}})},
       {},
       {},
       List({{"cpu", kCpu}, {"memory", kMem}, {"example.com/gpu", 1}})},
      {"init containers are defaulted too",
       {Container({{"cpu", 50}, {"memory", 10 * kMi}})},
       {Container({})},
       {},
       // max(50, 100) = 100 cpu; max(10Mi, 200Mi) = 200Mi
       List({{"cpu", kCpu}, {"memory", kMem}})},
      {"sidecars are defaulted and summed",
       {Container({})},
       {Sidecar({}), Container({{"cpu", 150}, {"memory", kMi}})},
       {},
       // sum = 100 + 100 = 200 cpu, 400Mi; init needs: (100, 200Mi),
       // (150 + 100 = 250, 1Mi + 200Mi = 201Mi) → cpu max(200, 250) = 250,
       // memory max(400Mi, 201Mi) = 400Mi
       List({{"cpu", 250}, {"memory", 2 * kMem}})},
      {"overhead is not defaulted",
       {Container({{"cpu", 500}, {"memory", kGi}})},
       {},
       List({{"cpu", 10}}),
       // 500 + 10; memory 1Gi, no overhead memory
       List({{"cpu", 510}, {"memory", kGi}})},
  };
  ExpectRequests(cases, /*scoring=*/true);
}

// Pod-level spec.resources (PodLevelResources), as kube-scheduler 1.37 counts
// it: PodRequests (requests), calculatePodResourceRequest with the scoring
// defaults (placing_*) and PodInfo.CalculateResource's Non0CPU / Non0Mem
// (scoring_requests, what the pod counts on its node).
struct PodLevelCase {
  std::string name;
  std::vector<ContainerResources> containers;
  std::vector<ContainerResources> init_containers;
  ContainerResources pod_level;
  ResourceList overhead;
  ResourceList want_requests;
  std::pair<int64_t, int64_t> want_placing;  // cpu, memory
  std::pair<int64_t, int64_t> want_counted;  // cpu, memory
};

TEST(PodInfoTest, PodLevelRequestsReplaceTheContainersAggregate) {
  constexpr int64_t kCpu = kDefaultMilliCpuRequest;
  constexpr int64_t kMem = kDefaultMemoryRequest;
  const std::vector<PodLevelCase> cases = {
      {"pod-level cpu only",
       {Container({{"cpu", 100}, {"memory", 64 * kMi}})},
       {},
       Container({{"cpu", 200}}),
       {},
       List({{"cpu", 200}, {"memory", 64 * kMi}}),
       {200, 64 * kMi},
       {200, 64 * kMi}},
      {"pod-level memory only, no container names cpu",
       {Container({{"memory", 64 * kMi}}), Container({})},
       {},
       Container({{"memory", 256 * kMi}}),
       {},
       List({{"memory", 256 * kMi}}),
       {2 * kCpu, 256 * kMi},
       // no one names cpu: the defaults stand in on the node too
       {2 * kCpu, 256 * kMi}},
      {"pod-level memory only, one container names cpu",
       {Container({{"cpu", 300}}), Container({})},
       {},
       Container({{"memory", kGi}}),
       {},
       List({{"cpu", 300}, {"memory", kGi}}),
       // placing defaults the second container; on the node, cpu is named
       {300 + kCpu, kGi},
       {300, kGi}},
      {"both, with limits",
       {Container({{"cpu", 100}, {"memory", 64 * kMi}})},
       {},
       Container({{"cpu", 200}, {"memory", 256 * kMi}}, {{"cpu", 400}, {"memory", 256 * kMi}}),
       {},
       List({{"cpu", 200}, {"memory", 256 * kMi}}),
       {200, 256 * kMi},
       {200, 256 * kMi}},
      {"hugepages replace the containers' hugepages",
       {Container({{"cpu", 100}, {"hugepages-2Mi", 4 * kMi}})},
       {},
       Container({{"hugepages-2Mi", 8 * kMi}}),
       {},
       List({{"cpu", 100}, {"hugepages-2Mi", 8 * kMi}}),
       {100, kMem},
       {100, kMem}},
      {"hugepages alone make pod-level requests set",
       {Container({{"cpu", 100}}), Container({})},
       {},
       Container({{"hugepages-1Gi", kGi}}),
       {},
       List({{"cpu", 100}, {"hugepages-1Gi", kGi}}),
       {100 + kCpu, 2 * kMem},
       // cpu is named by a container, memory by no one
       {100, 2 * kMem}},
      {"init containers and sidecars: the pod level replaces their max too",
       {Container({{"cpu", 100}, {"memory", 100 * kMi}})},
       {Container({{"cpu", 2000}, {"memory", kGi}}), Sidecar({{"cpu", 50}, {"memory", 32 * kMi}})},
       Container({{"cpu", 500}}),
       {},
       // cpu: the init container's 2000 gives way to 500; memory: max(132Mi, 1Gi)
       List({{"cpu", 500}, {"memory", kGi}}),
       {500, kGi},
       {500, kGi}},
      {"overhead is added after the pod level",
       {Container({{"cpu", 100}})},
       {},
       Container({{"cpu", 200}, {"memory", 256 * kMi}}),
       List({{"cpu", 50}, {"memory", 10 * kMi}}),
       List({{"cpu", 250}, {"memory", 266 * kMi}}),
       {250, 266 * kMi},
       {250, 266 * kMi}},
      {"overhead naming cpu stops the node's cpu default",
       {Container({})},
       {},
       Container({{"memory", 128 * kMi}}),
       List({{"cpu", 250}}),
       List({{"cpu", 250}, {"memory", 128 * kMi}}),
       {kCpu + 250, 128 * kMi},
       {250, 128 * kMi}},
      {"limits only change no request",
       {Container({{"cpu", 100}})},
       {},
       Container({}, {{"cpu", 1000}, {"memory", kGi}}),
       {},
       List({{"cpu", 100}}),
       {100, kMem},
       {100, kMem}},
      {"an explicit zero replaces too",
       {Container({{"cpu", 500}, {"memory", kGi}})},
       {},
       Container({{"cpu", 0}}),
       {},
       List({{"memory", kGi}}),
       {0, kGi},
       {0, kGi}},
      {"other resources at the pod level are ignored",
       {Container({{"cpu", 100}})},
       {},
       Container({{"ephemeral-storage", kGi}, {"example.com/gpu", 1}}),
       {},
       List({{"cpu", 100}}),
       {100, kMem},
       {100, kMem}},
  };
  for (const PodLevelCase& c : cases) {
    SCOPED_TRACE(c.name);
    PodInfo pod;
    pod.containers = c.containers;
    pod.init_containers = c.init_containers;
    pod.pod_level = c.pod_level;
    pod.overhead = c.overhead;
    pod.FinalizeRequests();
    EXPECT_EQ(NonZero(pod.requests), NonZero(c.want_requests));
    EXPECT_EQ(NonZero(pod.requests),
              NonZero(EffectiveRequests(c.containers, c.init_containers, c.pod_level, c.overhead)));
    EXPECT_EQ(std::make_pair(pod.placing_milli_cpu, pod.placing_memory), c.want_placing);
    EXPECT_EQ(std::make_pair(pod.scoring_requests.milli_cpu, pod.scoring_requests.memory),
              c.want_counted);
  }
}

TEST(PodInfoTest, FinalizeRequestsFillsDerivedLists) {
  PodInfo pod;
  pod.containers.push_back(Container({{"cpu", 100}}, {{"cpu", 200}, {"memory", kGi}}));
  pod.containers.push_back(Container({{"memory", kMi}}, {{"cpu", 300}}));
  pod.init_containers.push_back(Container({{"cpu", 1000}}, {{"cpu", 5000}}));
  pod.overhead = List({{"cpu", 10}});
  pod.FinalizeRequests();
  // cpu max(100, 1000) + 10 = 1010; memory 1Mi
  EXPECT_EQ(pod.requests, List({{"cpu", 1010}, {"memory", kMi}}));
  // cpu max(100 + 100 default, 1000) + 10 = 1010;
  // memory max(200Mi default + 1Mi, 200Mi default for the init container) = 201Mi
  EXPECT_EQ(pod.scoring_requests.milli_cpu, 1010);
  EXPECT_EQ(pod.scoring_requests.memory, kDefaultMemoryRequest + kMi);
  // Regular containers only: cpu 200 + 300, memory 1Gi; init limits ignored.
  EXPECT_EQ(pod.limits, List({{"cpu", 500}, {"memory", kGi}}));

  // Running it again recomputes rather than accumulates.
  pod.FinalizeRequests();
  EXPECT_EQ(pod.requests, List({{"cpu", 1010}, {"memory", kMi}}));
  EXPECT_EQ(pod.limits, List({{"cpu", 500}, {"memory", kGi}}));
}

TEST(PodInfoTest, ClearResetsEverythingAndKeepsCapacity) {
  PodInfo pod;
  pod.name = "p";
  pod.namespace_name = "ns";
  pod.uid = "u";
  pod.node_name = "n";
  pod.nominated_node_name = "m";
  pod.phase = "Pending";
  pod.priority_class_name = "high";
  pod.preemption_policy = "Never";
  pod.priority = 7;
  pod.labels.Set("a", "b");
  pod.annotations.Set("c", "d");
  pod.node_selector.Set("e", "f");
  pod.has_required_node_affinity = true;
  pod.required_node_affinity.resize(2);
  pod.preferred_node_affinity.resize(3);
  pod.tolerations.resize(4);
  pod.containers.resize(5);
  pod.init_containers.resize(2);
  pod.pod_level = Container({{"cpu", 1}}, {{"memory", 1}});
  pod.overhead.Set("cpu", 1);
  pod.requests.Set("cpu", 1);
  pod.scoring_requests.Set("cpu", 1);
  pod.placing_milli_cpu = 1;
  pod.placing_memory = 1;
  pod.limits.Set("cpu", 1);
  const size_t containers_capacity = pod.containers.capacity();
  const size_t tolerations_capacity = pod.tolerations.capacity();

  pod.Clear();
  EXPECT_TRUE(pod.name.empty());
  EXPECT_TRUE(pod.namespace_name.empty());
  EXPECT_TRUE(pod.uid.empty());
  EXPECT_TRUE(pod.node_name.empty());
  EXPECT_TRUE(pod.nominated_node_name.empty());
  EXPECT_TRUE(pod.phase.empty());
  EXPECT_TRUE(pod.priority_class_name.empty());
  EXPECT_TRUE(pod.preemption_policy.empty());
  EXPECT_EQ(pod.priority, 0);
  EXPECT_TRUE(pod.labels.empty());
  EXPECT_TRUE(pod.annotations.empty());
  EXPECT_TRUE(pod.node_selector.empty());
  EXPECT_FALSE(pod.has_required_node_affinity);
  EXPECT_TRUE(pod.required_node_affinity.empty());
  EXPECT_TRUE(pod.preferred_node_affinity.empty());
  EXPECT_TRUE(pod.tolerations.empty());
  EXPECT_TRUE(pod.containers.empty());
  EXPECT_TRUE(pod.init_containers.empty());
  EXPECT_EQ(pod.pod_level.requests, ResourceList{});
  EXPECT_EQ(pod.pod_level.limits, ResourceList{});
  EXPECT_FALSE(pod.pod_level.has_cpu_request);
  EXPECT_EQ(pod.overhead, ResourceList{});
  EXPECT_EQ(pod.requests, ResourceList{});
  EXPECT_EQ(pod.scoring_requests, ResourceList{});
  EXPECT_EQ(pod.placing_milli_cpu, 0);
  EXPECT_EQ(pod.placing_memory, 0);
  EXPECT_EQ(pod.limits, ResourceList{});
  EXPECT_EQ(pod.containers.capacity(), containers_capacity);
  EXPECT_EQ(pod.tolerations.capacity(), tolerations_capacity);
}

struct AffinityCase {
  std::string name;
  PodInfo pod;
  bool want;
};

TEST(PodMatchesNodeSelectorAndAffinityTest, AppliesSelectorAndRequiredAffinity) {
  StringMap node_labels;
  node_labels.Set("zone", "a");
  node_labels.Set("disk", "ssd");
  node_labels.Set("blank", "");
  const std::string_view node_name = "n1";

  auto selector = [](std::initializer_list<std::pair<std::string_view, std::string_view>> pairs) {
    PodInfo pod;
    for (const auto& [key, value] : pairs) {
      pod.node_selector.Set(key, value);
    }
    return pod;
  };
  auto affinity = [](std::vector<NodeSelectorTerm> terms, PodInfo pod = {}) {
    pod.has_required_node_affinity = true;
    pod.required_node_affinity = std::move(terms);
    return pod;
  };
  using Op = SelectorOperator;
  const NodeSelectorTerm zone_a{{{"zone", Op::kIn, {"a"}}}, {}};
  const NodeSelectorTerm zone_b{{{"zone", Op::kIn, {"b"}}}, {}};
  const NodeSelectorTerm named_n1{{}, {{"metadata.name", Op::kIn, {"n1"}}}};

  std::vector<AffinityCase> cases;
  cases.push_back({"no constraints", PodInfo{}, true});
  cases.push_back({"selector all equal", selector({{"zone", "a"}, {"disk", "ssd"}}), true});
  cases.push_back({"selector one differs", selector({{"zone", "a"}, {"disk", "hdd"}}), false});
  cases.push_back({"selector label absent", selector({{"gpu", "true"}}), false});
  cases.push_back({"selector empty value needs the label", selector({{"gpu", ""}}), false});
  cases.push_back({"selector empty value present", selector({{"blank", ""}}), true});
  cases.push_back({"affinity term matches", affinity({zone_b, zone_a}), true});
  cases.push_back({"affinity no term matches", affinity({zone_b}), false});
  cases.push_back({"affinity by node name", affinity({named_n1}), true});
  // Kubernetes: a required affinity with no terms matches no node.
  cases.push_back({"affinity with no terms", affinity({}), false});
  cases.push_back({"affinity with only an empty term", affinity({NodeSelectorTerm{}}), false});
  cases.push_back({"selector holds, affinity fails", affinity({zone_b}, selector({{"zone", "a"}})),
                   false});
  cases.push_back({"affinity holds, selector fails", affinity({zone_a}, selector({{"zone", "b"}})),
                   false});
  cases.push_back({"both hold", affinity({zone_a}, selector({{"disk", "ssd"}})), true});
  PodInfo ignored;
  ignored.required_node_affinity = {zone_b};  // not flagged as present: ignored
  cases.push_back({"terms without the flag are ignored", ignored, true});

  for (const AffinityCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(PodMatchesNodeSelectorAndAffinity(c.pod, node_labels, node_name), c.want);
  }
}

TEST(NodeInfoTest, ConditionStatusFindsTheType) {
  NodeInfo node;
  node.conditions = {{"MemoryPressure", "False"}, {"Ready", "True"}, {"Ready", "False"}};
  EXPECT_EQ(node.ConditionStatus("Ready"), std::optional<std::string_view>("True"));
  EXPECT_EQ(node.ConditionStatus("MemoryPressure"), std::optional<std::string_view>("False"));
  EXPECT_EQ(node.ConditionStatus("DiskPressure"), std::nullopt);
  EXPECT_EQ(node.ConditionStatus("ready"), std::nullopt);
}

TEST(NodeInfoTest, SummarizeConditionsMatchesConditionStatus) {
  EXPECT_EQ(SummarizeConditions({}), ConditionSummary{});
  const std::vector<NodeCondition> conditions = {
      {"MemoryPressure", "False"}, {"Ready", "True"},       {"Ready", "False"},
      {"DiskPressure", "Unknown"}, {"PIDPressure", "true"}, {"NetworkUnavailable", "True"},
      {"DiskPressure", "True"},    {"Other", "True"}};
  EXPECT_EQ(SummarizeConditions(conditions),
            (ConditionSummary{kConditionReady | kConditionMemoryPressure | kConditionDiskPressure |
                                  kConditionPidPressure | kConditionNetworkUnavailable,
                              kConditionReady | kConditionNetworkUnavailable}));
  NodeInfo node;
  node.conditions = {{"Ready", "Unknown"}, {"PIDPressure", "True"}};
  node.UpdateConditionSummary();
  EXPECT_EQ(node.condition_summary,
            (ConditionSummary{kConditionReady | kConditionPidPressure, kConditionPidPressure}));
}

TEST(NodeInfoTest, ClearResetsEverythingAndKeepsCapacity) {
  NodeInfo node;
  node.name = "n1";
  node.uid = "u";
  node.labels.Set("zone", "a");
  node.annotations.Set("k", "v");
  node.taints.resize(3);
  node.unschedulable = true;
  node.conditions.resize(4);
  node.condition_summary = {kConditionReady, kConditionReady};
  node.capacity.Set("cpu", 4000);
  node.allocatable.Set("example.com/gpu", 2);
  node.raw_json = "{}";
  const size_t taints_capacity = node.taints.capacity();
  node.Clear();
  EXPECT_TRUE(node.name.empty());
  EXPECT_TRUE(node.uid.empty());
  EXPECT_TRUE(node.labels.empty());
  EXPECT_TRUE(node.annotations.empty());
  EXPECT_TRUE(node.taints.empty());
  EXPECT_FALSE(node.unschedulable);
  EXPECT_TRUE(node.conditions.empty());
  EXPECT_EQ(node.condition_summary, ConditionSummary{});
  EXPECT_EQ(node.capacity, ResourceList{});
  EXPECT_EQ(node.allocatable, ResourceList{});
  EXPECT_TRUE(node.raw_json.empty());
  EXPECT_EQ(node.taints.capacity(), taints_capacity);
}

}  // namespace
}  // namespace schedext::model
