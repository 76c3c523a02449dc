// The recorded kube-scheduler v1.37.2 request bodies
// (test/testdata/kube-scheduler-1.37/README.md) decode with the right message
// type and everything the reference parser (nlohmann/json) sees in them:
// pods, nodes, victims; the fields 1.37 adds (pod generation, a condition's
// observedGeneration, spec.resourceClaims, a container's resources.claims,
// a node's runtimeHandlers and features) are skipped without loss, and the
// full-mode node spans echo back byte for byte.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schedext/wire/decoder.h"
#include "schedext/wire/encoder.h"
#include "wire/recorded_bodies.h"

namespace schedext::wire {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using recorded::Bodies;
using recorded::CheckCompactItemsTail;
using recorded::CheckFullModeEcho;
using recorded::ReadFile;
using recorded::VerbAndNumber;
using ::testing::ElementsAre;

const fs::path kRoot = fs::path(SCHEDEXT_TESTDATA_DIR) / "kube-scheduler-1.37";
const fs::path kFullDir = kRoot / "nodecache-false";
const fs::path kNamesDir = kRoot / "nodecache-true";
constexpr int64_t kKi = 1024;

// The pod of filter-n (the scenario's order; the same in both modes).
const std::vector<std::string> kFilterPods = {
    "",            "web-1",       "gated-1",     "gpu-infer-1", "node-agent-1", "claim-user-1",
    "batch-low-1", "batch-low-2", "batch-low-3", "batch-low-4", "batch-low-5",  "train-high"};

// The quantities of the scenario ("500m", "2", "512Mi", "80") in the
// model's units: milli-CPU for cpu, bytes or units otherwise.
int64_t Quantity(const std::string& name, const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  const int64_t value = std::stoll(text.substr(0, digits));
  const std::string suffix = text.substr(digits);
  if (name == "cpu") return suffix == "m" ? value : value * 1000;
  if (suffix == "Ki") return value * kKi;
  if (suffix == "Mi") return value * kKi * kKi;
  if (suffix == "Gi") return value * kKi * kKi * kKi;
  EXPECT_EQ(suffix, "") << text;
  return value;
}

int64_t Amount(const model::ResourceList& list, const std::string& name) {
  if (name == "cpu") return list.milli_cpu;
  if (name == "memory") return list.memory;
  if (name == "ephemeral-storage") return list.ephemeral_storage;
  if (name == "pods") return list.pods;
  return list.Get(name);
}

// Everything of `reference` (a v1.Pod) that PodInfo carries is there.
void ExpectPodAsParsed(const model::PodInfo& pod, const json& reference) {
  const json& metadata = reference["metadata"];
  const json& spec = reference["spec"];
  EXPECT_EQ(pod.name, metadata["name"].get<std::string>());
  EXPECT_EQ(pod.namespace_name, metadata["namespace"].get<std::string>());
  EXPECT_EQ(pod.uid, metadata["uid"].get<std::string>());
  EXPECT_EQ(pod.node_name, spec.value("nodeName", ""));
  EXPECT_EQ(pod.nominated_node_name, reference["status"].value("nominatedNodeName", ""));
  EXPECT_EQ(pod.phase, reference["status"].value("phase", ""));
  EXPECT_EQ(pod.priority, spec.value("priority", 0));
  EXPECT_EQ(pod.priority_class_name, spec.value("priorityClassName", ""));
  EXPECT_EQ(pod.preemption_policy, spec.value("preemptionPolicy", ""));
  const json labels = metadata.value("labels", json::object());
  EXPECT_EQ(pod.labels.size(), labels.size());
  for (const auto& [key, value] : labels.items()) {
    EXPECT_EQ(pod.labels.Find(key), value.get<std::string>()) << key;
  }
  EXPECT_EQ(pod.tolerations.size(), spec.value("tolerations", json::array()).size());
  const auto expect_containers = [](const std::vector<model::ContainerResources>& decoded,
                                    const json& containers) {
    ASSERT_EQ(decoded.size(), containers.size());
    for (size_t i = 0; i < decoded.size(); ++i) {
      const json& resources = containers[i]["resources"];
      const json requests = resources.value("requests", json::object());
      const json limits = resources.value("limits", json::object());
      for (const auto& [name, quantity] : requests.items()) {
        EXPECT_EQ(Amount(decoded[i].requests, name), Quantity(name, quantity)) << name;
      }
      for (const auto& [name, quantity] : limits.items()) {
        EXPECT_EQ(Amount(decoded[i].limits, name), Quantity(name, quantity)) << name;
      }
      EXPECT_EQ(decoded[i].restartable, containers[i].value("restartPolicy", "") == "Always");
    }
  };
  expect_containers(pod.containers, spec["containers"]);
  expect_containers(pod.init_containers, spec.value("initContainers", json::array()));
  const json node_selector = spec.value("nodeSelector", json::object());
  EXPECT_EQ(pod.node_selector.size(), node_selector.size());
  for (const auto& [key, value] : node_selector.items()) {
    EXPECT_EQ(pod.node_selector.Find(key), value.get<std::string>()) << key;
  }
  const json preferred = spec.value("affinity", json::object())
                             .value("nodeAffinity", json::object())
                             .value("preferredDuringSchedulingIgnoredDuringExecution", json::array());
  EXPECT_EQ(pod.preferred_node_affinity.size(), preferred.size());
}

// The same of a v1.Node: labels, taints, capacity, allocatable, conditions.
void ExpectNodeAsParsed(const model::NodeInfo& node, const json& reference) {
  EXPECT_EQ(node.name, reference["metadata"]["name"].get<std::string>());
  EXPECT_EQ(node.uid, reference["metadata"]["uid"].get<std::string>());
  const json& labels = reference["metadata"]["labels"];
  EXPECT_EQ(node.labels.size(), labels.size());
  for (const auto& [key, value] : labels.items()) {
    EXPECT_EQ(node.labels.Find(key), value.get<std::string>()) << key;
  }
  const json taints = reference["spec"].value("taints", json::array());
  ASSERT_EQ(node.taints.size(), taints.size());
  for (size_t i = 0; i < taints.size(); ++i) {
    EXPECT_EQ(node.taints[i].key, taints[i]["key"].get<std::string>());
    EXPECT_EQ(node.taints[i].value, taints[i].value("value", ""));
  }
  EXPECT_EQ(node.unschedulable, reference["spec"].value("unschedulable", false));
  for (const auto& [name, quantity] : reference["status"]["capacity"].items()) {
    EXPECT_EQ(Amount(node.capacity, name), Quantity(name, quantity)) << name;
  }
  for (const auto& [name, quantity] : reference["status"]["allocatable"].items()) {
    EXPECT_EQ(Amount(node.allocatable, name), Quantity(name, quantity)) << name;
  }
  ASSERT_EQ(node.conditions.size(), reference["status"]["conditions"].size());
  for (const json& c : reference["status"]["conditions"]) {
    EXPECT_EQ(node.ConditionStatus(c["type"].get<std::string>()), c["status"].get<std::string>());
  }
}

class Fixtures137Test : public recorded::BodyDecodingTest {};

TEST_F(Fixtures137Test, EveryBodyDecodesToWhatTheReferenceParserSees) {
  for (const fs::path& dir : {kFullDir, kNamesDir}) {
    const bool full = dir == kFullDir;
    std::map<std::string, int> verbs;
    for (const fs::path& path : Bodies(dir)) {
      SCOPED_TRACE(path.string());
      const auto [verb, number] = VerbAndNumber(path);
      ++verbs[verb];
      body_ = ReadFile(path);
      const json reference = json::parse(body_);
      buffer_ = RequestBuffer::CopyOf(body_);
      if (verb == "filter" || verb == "prioritize") {
        const Status status = decoder_.DecodeExtenderArgs(buffer_, args_);
        ASSERT_TRUE(status.ok()) << status.message();
        ASSERT_TRUE(args_.has_pod);
        if (verb == "filter") {
          EXPECT_EQ(args_.pod.name, kFilterPods.at(number));
        }
        ExpectPodAsParsed(args_.pod, reference["Pod"]);
        std::vector<std::string> reference_names;
        if (full) {
          ASSERT_EQ(args_.mode, NodeMode::kFullNodes);
          EXPECT_TRUE(reference["NodeNames"].is_null());
          const json& items = reference["Nodes"]["items"];
          ASSERT_EQ(args_.nodes.size(), items.size());
          for (size_t i = 0; i < items.size(); ++i) {
            reference_names.push_back(items[i]["metadata"]["name"].get<std::string>());
            ExpectNodeAsParsed(args_.nodes[i], items[i]);
          }
          CheckFullModeEcho(body_, args_);
          CheckCompactItemsTail(body_, args_);
        } else {
          ASSERT_EQ(args_.mode, NodeMode::kNodeNames);
          EXPECT_TRUE(reference["Nodes"].is_null());
          EXPECT_TRUE(args_.nodes.empty());
          reference_names = reference["NodeNames"].get<std::vector<std::string>>();
        }
        EXPECT_EQ(std::vector<std::string>(args_.node_names.begin(), args_.node_names.end()),
                  reference_names);
      } else if (verb == "bind") {
        const Status status = decoder_.DecodeBindingArgs(buffer_, binding_);
        ASSERT_TRUE(status.ok()) << status.message();
        EXPECT_EQ(binding_.pod_name, reference["PodName"].get<std::string>());
        EXPECT_EQ(binding_.pod_namespace, reference["PodNamespace"].get<std::string>());
        EXPECT_EQ(binding_.pod_uid, reference["PodUID"].get<std::string>());
        EXPECT_EQ(binding_.node, reference["Node"].get<std::string>());
        // Binds follow the filters one to one: every pod was placed at its
        // first feasible attempt, train-high after its preemption.
        EXPECT_EQ(binding_.pod_name, kFilterPods.at(number));
      } else if (verb == "preempt") {
        const Status status = decoder_.DecodePreemptionArgs(buffer_, preemption_);
        ASSERT_TRUE(status.ok()) << status.message();
        ASSERT_TRUE(preemption_.has_pod);
        ExpectPodAsParsed(preemption_.pod, reference["Pod"]);
        EXPECT_EQ(preemption_.full_pods, full);
        const json& victims = reference[full ? "NodeNameToVictims" : "NodeNameToMetaVictims"];
        EXPECT_TRUE(reference[full ? "NodeNameToMetaVictims" : "NodeNameToVictims"].is_null());
        ASSERT_EQ(preemption_.node_count, victims.size());
        for (const VictimsView& candidate : preemption_.candidates()) {
          const json& entry = victims[std::string(candidate.node)];
          EXPECT_EQ(candidate.num_pdb_violations, entry["NumPDBViolations"].get<int64_t>());
          ASSERT_EQ(candidate.pods.size(), entry["Pods"].size());
          for (size_t i = 0; i < candidate.pods.size(); ++i) {
            if (full) {
              ExpectPodAsParsed(candidate.pods[i], entry["Pods"][i]);
            } else {
              EXPECT_EQ(candidate.pods[i].uid, entry["Pods"][i]["UID"].get<std::string>());
            }
          }
        }
      } else {
        ADD_FAILURE() << "unexpected fixture " << path;
      }
    }
    EXPECT_EQ(verbs["filter"], 11) << dir;
    EXPECT_EQ(verbs["bind"], 11) << dir;
    EXPECT_EQ(verbs["preempt"], 1) << dir;
    EXPECT_GE(verbs["prioritize"], 7) << dir;
  }
}

// gated-1 was created with a scheduling gate; the first request naming it
// comes after the gate's removal and still carries the SchedulingGated
// condition of the wait.
TEST_F(Fixtures137Test, TheOnceGatedPodDecodes) {
  for (const fs::path& dir : {kFullDir, kNamesDir}) {
    SCOPED_TRACE(dir.string());
    ASSERT_TRUE(Args(dir / "filter-2.json").ok());
    const json reference = json::parse(body_);
    EXPECT_FALSE(reference["Pod"]["spec"].contains("schedulingGates"));
    EXPECT_EQ(reference["Pod"]["status"]["conditions"][0]["reason"], "SchedulingGated");
    EXPECT_EQ(reference["Pod"]["metadata"]["generation"], 2);
    EXPECT_EQ(args_.pod.name, "gated-1");
    EXPECT_EQ(args_.pod.phase, "Pending");
    EXPECT_EQ(args_.pod.requests.milli_cpu, 500);
    EXPECT_THAT(args_.node_names, ::testing::UnorderedElementsAre("lab-cpu-1", "lab-cpu-2"));
  }
}

// claim-user-1's device comes from a ResourceClaim: the pod's requests are
// its container's cpu and memory alone.
TEST_F(Fixtures137Test, AResourceClaimPodDecodes) {
  for (const fs::path& dir : {kFullDir, kNamesDir}) {
    SCOPED_TRACE(dir.string());
    ASSERT_TRUE(Args(dir / "filter-5.json").ok());
    const json reference = json::parse(body_);
    EXPECT_EQ(reference["Pod"]["spec"]["resourceClaims"][0]["resourceClaimName"], "claim-1");
    EXPECT_EQ(reference["Pod"]["spec"]["containers"][0]["resources"]["claims"][0]["name"], "gpu");
    EXPECT_EQ(args_.pod.name, "claim-user-1");
    ASSERT_EQ(args_.pod.containers.size(), 1u);
    EXPECT_EQ(args_.pod.requests.milli_cpu, 500);
    EXPECT_EQ(args_.pod.requests.memory, kKi * kKi * kKi);
    EXPECT_EQ(args_.pod.requests.Get("example.com/gpu-mem"), 0);
    EXPECT_THAT(args_.node_names, ::testing::UnorderedElementsAre("lab-gpu-1", "lab-gpu-2"));
  }
}

// gpu-infer-1 runs an init container, then a sidecar (restartPolicy Always)
// beside its GPU container: the sidecar counts with the containers, the init
// container only against them.
TEST_F(Fixtures137Test, InitContainerAndSidecarCountAsKubeSchedulerCountsThem) {
  for (const fs::path& dir : {kFullDir, kNamesDir}) {
    SCOPED_TRACE(dir.string());
    ASSERT_TRUE(Args(dir / "filter-3.json").ok());
    const model::PodInfo& pod = args_.pod;
    EXPECT_EQ(pod.name, "gpu-infer-1");
    ASSERT_EQ(pod.init_containers.size(), 2u);
    EXPECT_FALSE(pod.init_containers[0].restartable);
    EXPECT_TRUE(pod.init_containers[1].restartable);
    EXPECT_EQ(pod.requests.milli_cpu, 1100);
    EXPECT_EQ(pod.requests.memory, 4 * kKi * kKi * kKi + 128 * kKi * kKi);
    EXPECT_EQ(pod.requests.Get("example.com/gpu-mem"), 40);
  }
}

// web-1 carries what a Deployment's pod typically does: an annotation, a
// nodeSelector, env, a port, node affinity and pod anti-affinity.
TEST_F(Fixtures137Test, ATypicalDeploymentPodDecodes) {
  for (const fs::path& dir : {kFullDir, kNamesDir}) {
    SCOPED_TRACE(dir.string());
    ASSERT_TRUE(Args(dir / "filter-1.json").ok());
    const model::PodInfo& pod = args_.pod;
    EXPECT_EQ(pod.name, "web-1");
    EXPECT_EQ(pod.annotations.Find("lab.example.com/purpose"), "plain pod");
    EXPECT_EQ(pod.node_selector.Find("kubernetes.io/os"), "linux");
    ASSERT_EQ(pod.preferred_node_affinity.size(), 1u);
    EXPECT_EQ(pod.preferred_node_affinity[0].weight, 10);
    EXPECT_EQ(pod.requests.milli_cpu, 500);
    EXPECT_EQ(pod.requests.memory, 512 * kKi * kKi);
  }
}

// node-agent-1 sets pod-level spec.resources (requests 200m / 256Mi, limits
// 400m / 256Mi) above its one container's 100m / 64Mi: kube-scheduler counts
// the pod level, and so does schedext.
TEST_F(Fixtures137Test, PodLevelResourcesReplaceTheContainerSum) {
  for (const fs::path& dir : {kFullDir, kNamesDir}) {
    SCOPED_TRACE(dir.string());
    ASSERT_TRUE(Args(dir / "filter-4.json").ok());
    const model::PodInfo& pod = args_.pod;
    EXPECT_EQ(pod.name, "node-agent-1");
    ASSERT_EQ(pod.containers.size(), 1u);
    EXPECT_EQ(pod.containers[0].requests.milli_cpu, 100);
    EXPECT_EQ(pod.containers[0].requests.memory, 64 * kKi * kKi);
    EXPECT_EQ(pod.pod_level.requests.milli_cpu, 200);
    EXPECT_EQ(pod.pod_level.limits.milli_cpu, 400);
    EXPECT_EQ(pod.pod_level.limits.memory, 256 * kKi * kKi);
    EXPECT_EQ(pod.requests.milli_cpu, 200);
    EXPECT_EQ(pod.requests.memory, 256 * kKi * kKi);
    EXPECT_EQ(pod.placing_milli_cpu, 200);
    EXPECT_EQ(pod.placing_memory, 256 * kKi * kKi);
    EXPECT_EQ(pod.scoring_requests.milli_cpu, 200);
    EXPECT_EQ(pod.scoring_requests.memory, 256 * kKi * kKi);
  }
}

// A full node of 1.37 carries status fields 1.26 had not: skipped when
// decoding, kept in the span schedext echoes.
TEST_F(Fixtures137Test, NewNodeStatusFieldsAreKeptInTheEcho) {
  ASSERT_TRUE(Args(kFullDir / "filter-4.json").ok());
  EXPECT_EQ(args_.pod.name, "node-agent-1");
  ASSERT_EQ(args_.nodes.size(), 5u);
  for (const model::NodeInfo& node : args_.nodes) {
    SCOPED_TRACE(std::string(node.name));
    EXPECT_NE(node.raw_json.find("\"runtimeHandlers\":[{\"name\":\"runc\""), std::string_view::npos);
    EXPECT_NE(node.raw_json.find("\"features\":{\"supplementalGroupsPolicy\":true}"),
              std::string_view::npos);
    EXPECT_EQ(node.ConditionStatus("Ready"), "True");
  }
  const model::NodeInfo& gpu1 = args_.nodes[4];
  EXPECT_EQ(gpu1.name, "lab-gpu-1");
  EXPECT_EQ(gpu1.allocatable.Get("example.com/gpu-mem"), 320);
  EXPECT_EQ(gpu1.allocatable.milli_cpu, 15900);
  ASSERT_EQ(gpu1.taints.size(), 1u);
  EXPECT_EQ(gpu1.taints[0].key, "example.com/gpu");
  EXPECT_EQ(gpu1.taints[0].effect, model::TaintEffect::kNoSchedule);
}

TEST_F(Fixtures137Test, PreemptionCarriesTwoCandidatesWithTwoVictimsEach) {
  ASSERT_TRUE(Preemption(kFullDir / "preempt-1.json").ok());
  EXPECT_EQ(preemption_.pod.name, "train-high");
  EXPECT_EQ(preemption_.pod.priority, 1000000);
  EXPECT_EQ(preemption_.pod.requests.Get("example.com/gpu-mem"), 160);
  ASSERT_EQ(preemption_.node_count, 2u);
  auto candidates = preemption_.candidates();
  EXPECT_EQ(candidates[0].node, "lab-gpu-1");
  EXPECT_EQ(candidates[1].node, "lab-gpu-2");
  ASSERT_EQ(candidates[0].pods.size(), 2u);
  ASSERT_EQ(candidates[1].pods.size(), 2u);
  EXPECT_EQ(candidates[0].pods[0].name, "batch-low-4");
  EXPECT_EQ(candidates[0].pods[0].uid, "9d968505-d96a-44b5-abdc-c1167e4cba87");
  EXPECT_EQ(candidates[0].pods[0].priority, 1000);
  EXPECT_EQ(candidates[0].pods[0].node_name, "lab-gpu-1");
  EXPECT_EQ(candidates[0].pods[0].requests.Get("example.com/gpu-mem"), 80);
  // Bound pods carry their node's zone label (the API server copies it).
  EXPECT_EQ(candidates[0].pods[0].labels.Find("topology.kubernetes.io/zone"), "zone-a");
  EXPECT_EQ(candidates[1].pods[1].name, "gpu-infer-1");
  EXPECT_EQ(candidates[1].pods[1].priority, 0);
  EXPECT_EQ(candidates[1].pods[1].requests.Get("example.com/gpu-mem"), 40);

  ASSERT_TRUE(Preemption(kNamesDir / "preempt-1.json").ok());
  EXPECT_FALSE(preemption_.full_pods);
  ASSERT_EQ(preemption_.node_count, 2u);
  candidates = preemption_.candidates();
  EXPECT_EQ(candidates[0].node, "lab-gpu-1");
  ASSERT_EQ(candidates[0].pods.size(), 2u);
  EXPECT_EQ(candidates[0].pods[0].uid, "a82dc7fd-b5d9-4ed4-8219-cd29254bef40");
  EXPECT_EQ(candidates[0].pods[0].name, "");
  EXPECT_EQ(candidates[1].node, "lab-gpu-2");
  ASSERT_EQ(candidates[1].pods.size(), 2u);
  EXPECT_EQ(candidates[1].pods[1].uid, "f825a9e7-8d8c-48a4-9924-38ce63231b76");
}

TEST_F(Fixtures137Test, ThePreemptorRetriesOnItsNominatedNode) {
  for (const fs::path& dir : {kFullDir, kNamesDir}) {
    SCOPED_TRACE(dir.string());
    ASSERT_TRUE(Args(dir / "filter-11.json").ok());
    EXPECT_EQ(args_.pod.name, "train-high");
    EXPECT_EQ(args_.pod.priority_class_name, "lab-high");
    EXPECT_EQ(args_.pod.nominated_node_name, "lab-gpu-2");
    EXPECT_THAT(args_.node_names, ElementsAre("lab-gpu-2"));
  }
}

}  // namespace
}  // namespace schedext::wire
