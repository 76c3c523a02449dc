// OwnedNode / OwnedPod: the copy is deep. Each test decodes an object, copies
// it, then overwrites the source text and reuses the parser, and checks every
// field of the copy (run under ASan to catch any view left in the source).
#include "schedext/model/owned.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "schedext/wire/object_decoder.h"
#include "schedext/wire/request_buffer.h"
#include "testing/json_builders.h"

namespace schedext::model {
namespace {

using ::schedext::testing::ContainerJson;
using ::schedext::testing::NodeJson;
using ::schedext::testing::NodeSelectorTermJson;
using ::schedext::testing::PodJson;

std::string Event(std::string_view object) {
  return "{\"type\":\"ADDED\",\"object\":" + std::string(object) + "}";
}

// Overwrites the whole source buffer and decodes an unrelated document with the
// same decoder, so both the body and the parser's string buffer change.
void Clobber(wire::ObjectDecoder& decoder, wire::RequestBuffer& buffer) {
  std::memset(const_cast<char*>(buffer.data()), 'X', buffer.size());
  wire::WatchEvent event;
  wire::PodObject other;
  const std::string junk =
      Event(PodJson("zzzzzzzzzzzzzzzzzzzz").Label("qqqqqqqq", "wwwwwwww").Build());
  ASSERT_TRUE(decoder.DecodePodEvent(wire::RequestBuffer::CopyOf(junk), event, other).ok());
}

TEST(OwnedTest, NodeCopyIsDeep) {
  // Escaped text lands in the parser's buffer, plain text stays in the body:
  // both sources must be copied.
  const std::string json = NodeJson("node-a")
                               .Realistic()
                               .Label("topology.kubernetes.io/zone", "eu-1a")
                               .Label("quo\"ted", "<v>")
                               .Annotation("note", "hello")
                               .Taint("dedicated", "gpu", "NoSchedule")
                               .Condition("Ready", "True")
                               .Condition("DiskPressure", "False")
                               .Capacity("cpu", "8")
                               .Allocatable("cpu", "7500m")
                               .Allocatable("nvidia.com/gpu", "4")
                               .Allocatable("hugepages-2Mi", "1Gi")
                               .Build();
  wire::ObjectDecoder decoder;
  wire::RequestBuffer buffer = wire::RequestBuffer::CopyOf(Event(json));
  wire::WatchEvent event;
  wire::NodeObject decoded;
  ASSERT_TRUE(decoder.DecodeNodeEvent(buffer, event, decoded).ok());
  ASSERT_FALSE(decoded.info.raw_json.empty());
  auto owned = std::make_unique<OwnedNode>(decoded.info, decoded.resource_version, true);
  Clobber(decoder, buffer);

  const NodeInfo& n = owned->info();
  EXPECT_EQ(n.name, "node-a");
  EXPECT_EQ(n.uid, "uid-node-a");
  EXPECT_EQ(owned->resource_version(), "815");
  EXPECT_TRUE(owned->deleting());
  EXPECT_EQ(n.labels.Find("topology.kubernetes.io/zone"), "eu-1a");
  EXPECT_EQ(n.labels.Find("quo\"ted"), "<v>");
  EXPECT_EQ(n.annotations.Find("note"), "hello");
  ASSERT_EQ(n.taints.size(), 1u);
  EXPECT_EQ(n.taints[0].key, "dedicated");
  EXPECT_EQ(n.taints[0].value, "gpu");
  EXPECT_EQ(n.taints[0].effect, TaintEffect::kNoSchedule);
  EXPECT_EQ(n.ConditionStatus("Ready"), "True");
  EXPECT_EQ(n.ConditionStatus("DiskPressure"), "False");
  // Summarized by the informers' decoder, kept by the copy.
  EXPECT_EQ(decoded.info.condition_summary,
            (ConditionSummary{kConditionReady | kConditionDiskPressure, kConditionReady}));
  EXPECT_EQ(n.condition_summary, decoded.info.condition_summary);
  EXPECT_EQ(n.capacity.milli_cpu, 8000);
  EXPECT_EQ(n.allocatable.milli_cpu, 7500);
  EXPECT_EQ(n.allocatable.Get("nvidia.com/gpu"), 4);
  EXPECT_EQ(n.allocatable.Get("hugepages-2Mi"), 1LL << 30);
  EXPECT_TRUE(n.raw_json.empty());  // not kept, by contract
  EXPECT_EQ(n.usage, nullptr);
  EXPECT_GT(owned->arena_bytes(), 0u);
}

TEST(OwnedTest, PodCopyIsDeep) {
  const std::string json =
      PodJson("web-1")
          .Realistic()
          .Namespace("prod")
          .Uid("8f6c-uid")
          .Label("app", "web")
          .Annotation("owner", "team-a")
          .NodeName("node-a")
          .NominatedNodeName("node-b")
          .Phase("Running")
          .Priority(1000)
          .PriorityClassName("high")
          .PreemptionPolicy("Never")
          .NodeSelector("disk", "ssd")
          .RequiredTerm(NodeSelectorTermJson()
                            .MatchExpression("zone", "In", {"a", "b"})
                            .MatchField("metadata.name", "NotIn", {"node-x"}))
          .PreferredTerm(7, NodeSelectorTermJson().MatchExpression("gen", "Gt", {"3"}))
          .Toleration("dedicated", "Equal", "gpu", "NoSchedule")
          .Request("cpu", "500m")
          .Request("example.com/foo", "3")
          .Limit("memory", "1Gi")
          .InitContainer(
              ContainerJson("init").Request("memory", "2Gi").Request("example.com/bar", "1"))
          .Overhead("cpu", "100m")
          .Build();
  wire::ObjectDecoder decoder;
  wire::RequestBuffer buffer = wire::RequestBuffer::CopyOf(Event(json));
  wire::WatchEvent event;
  wire::PodObject decoded;
  ASSERT_TRUE(decoder.DecodePodEvent(buffer, event, decoded).ok());
  auto owned = std::make_unique<OwnedPod>(decoded.info, decoded.resource_version, false);
  Clobber(decoder, buffer);

  const PodInfo& p = owned->info();
  EXPECT_EQ(p.name, "web-1");
  EXPECT_EQ(p.namespace_name, "prod");
  EXPECT_EQ(p.uid, "8f6c-uid");
  EXPECT_EQ(owned->uid(), "8f6c-uid");
  EXPECT_EQ(owned->resource_version(), "4711");
  EXPECT_FALSE(owned->terminal());
  EXPECT_EQ(p.node_name, "node-a");
  EXPECT_EQ(p.nominated_node_name, "node-b");
  EXPECT_EQ(p.phase, "Running");
  EXPECT_EQ(p.priority, 1000);
  EXPECT_EQ(p.priority_class_name, "high");
  EXPECT_EQ(p.preemption_policy, "Never");
  EXPECT_EQ(p.labels.Find("app"), "web");
  EXPECT_EQ(p.annotations.Find("owner"), "team-a");
  EXPECT_EQ(p.node_selector.Find("disk"), "ssd");
  ASSERT_EQ(p.required_node_affinity.size(), 1u);
  const NodeSelectorTerm& term = p.required_node_affinity[0];
  ASSERT_EQ(term.match_expressions.size(), 1u);
  EXPECT_EQ(term.match_expressions[0].key, "zone");
  EXPECT_EQ(term.match_expressions[0].values, (std::vector<std::string_view>{"a", "b"}));
  ASSERT_EQ(term.match_fields.size(), 1u);
  EXPECT_EQ(term.match_fields[0].key, "metadata.name");
  EXPECT_EQ(term.match_fields[0].values, (std::vector<std::string_view>{"node-x"}));
  ASSERT_EQ(p.preferred_node_affinity.size(), 1u);
  EXPECT_EQ(p.preferred_node_affinity[0].weight, 7);
  EXPECT_EQ(p.preferred_node_affinity[0].preference.match_expressions[0].key, "gen");
  EXPECT_EQ(p.preferred_node_affinity[0].preference.match_expressions[0].values[0], "3");
  // Realistic() adds the two default NoExecute tolerations.
  ASSERT_EQ(p.tolerations.size(), 3u);
  EXPECT_EQ(p.tolerations[2].key, "dedicated");
  EXPECT_EQ(p.tolerations[2].value, "gpu");
  EXPECT_EQ(p.tolerations[0].key, "node.kubernetes.io/not-ready");
  ASSERT_EQ(p.containers.size(), 1u);
  EXPECT_EQ(p.containers[0].requests.Get("example.com/foo"), 3);
  EXPECT_EQ(p.containers[0].limits.memory, 1LL << 30);
  ASSERT_EQ(p.init_containers.size(), 1u);
  EXPECT_EQ(p.init_containers[0].requests.Get("example.com/bar"), 1);
  EXPECT_EQ(p.overhead.milli_cpu, 100);
  // Effective requests: max(500m, 0) + 100m overhead = 600m cpu; memory
  // max(0, 2Gi init) = 2Gi; foo 3 from the container, bar 1 from the init.
  EXPECT_EQ(p.requests.milli_cpu, 600);
  EXPECT_EQ(p.requests.memory, 2LL << 30);
  EXPECT_EQ(p.requests.Get("example.com/foo"), 3);
  EXPECT_EQ(p.requests.Get("example.com/bar"), 1);
  EXPECT_EQ(p.scoring_requests.Get("example.com/foo"), 3);
  EXPECT_EQ(p.limits.memory, 1LL << 30);
}

// Pod-level spec.resources name their resources in the body too: the cache's
// copy owns those names, and its derived requests keep the pod level.
TEST(OwnedTest, PodLevelResourcesAreCopiedDeep) {
  const std::string json =
      R"({"metadata":{"name":"agent","namespace":"d","uid":"u","resourceVersion":"1"},)"
      R"("spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"100m"}}}],)"
      R"("resources":{"requests":{"cpu":"200m","hugepages-2Mi":"4Mi"},)"
      R"("limits":{"hugepages-2Mi":"4Mi"}}}})";
  wire::ObjectDecoder decoder;
  wire::RequestBuffer buffer = wire::RequestBuffer::CopyOf(Event(json));
  wire::WatchEvent event;
  wire::PodObject decoded;
  ASSERT_TRUE(decoder.DecodePodEvent(buffer, event, decoded).ok());
  auto owned = std::make_unique<OwnedPod>(decoded.info, decoded.resource_version, false);
  Clobber(decoder, buffer);

  const PodInfo& p = owned->info();
  EXPECT_EQ(p.pod_level.requests.milli_cpu, 200);
  EXPECT_EQ(p.pod_level.requests.Get("hugepages-2Mi"), 4 << 20);
  EXPECT_EQ(p.pod_level.limits.Get("hugepages-2Mi"), 4 << 20);
  EXPECT_EQ(p.requests.milli_cpu, 200);
  EXPECT_EQ(p.requests.Get("hugepages-2Mi"), 4 << 20);
}

TEST(OwnedTest, EmptyObjectsAndTerminalPhase) {
  PodInfo pod;
  pod.phase = "Failed";
  OwnedPod owned_pod(pod);
  EXPECT_TRUE(owned_pod.terminal());
  EXPECT_EQ(owned_pod.arena_bytes(), 6u);
  NodeInfo node;
  OwnedNode owned_node(node);
  EXPECT_EQ(owned_node.name(), "");
  EXPECT_EQ(owned_node.arena_bytes(), 0u);
}

}  // namespace
}  // namespace schedext::model
