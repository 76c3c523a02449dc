// Shared by the explain, record and replay tests: a small cluster (four nodes,
// one bound pod), a configuration whose profiles use the built-in policies,
// and a cluster cache fed with the nodes and pods as the informers would.
#ifndef SCHEDEXT_TEST_EXPLAIN_EXPLAIN_FIXTURE_H_
#define SCHEDEXT_TEST_EXPLAIN_EXPLAIN_FIXTURE_H_

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedext/cluster/cache.h"
#include "schedext/config/config.h"
#include "schedext/model/owned.h"
#include "schedext/pipeline/profile.h"
#include "schedext/policy/registry.h"
#include "schedext/wire/object_decoder.h"
#include "schedext/wire/request_buffer.h"
#include "testing/json_builders.h"
#include "testing/raw_objects.h"

namespace schedext::explain_testing {

using schedext::testing::NodeJson;
using schedext::testing::PodJson;

// n1: zone a, load 20. n2: zone b, load 60, a PreferNoSchedule taint, one bound
// pod (1 cpu, 2Gi). n3: zone a, load 90, half the size, a NoSchedule taint.
// n4: not ready, load 50, labelled spot.
inline std::vector<NodeJson> Nodes() {
  auto base = [](std::string name, std::string cpu, std::string memory) {
    NodeJson n(std::move(name));
    n.Allocatable("cpu", cpu).Allocatable("memory", memory).Allocatable("pods", "110");
    n.Capacity("cpu", cpu).Capacity("memory", memory).Capacity("pods", "110");
    return n;
  };
  std::vector<NodeJson> nodes;
  nodes.push_back(
      base("n1", "4", "8Gi").Ready().Label("zone", "a").Label("example.com/load", "20"));
  nodes.push_back(base("n2", "4", "8Gi")
                      .Ready()
                      .Label("zone", "b")
                      .Label("example.com/load", "60")
                      .Taint("soft", "x", "PreferNoSchedule"));
  nodes.push_back(base("n3", "2", "4Gi")
                      .Ready()
                      .Label("zone", "a")
                      .Label("example.com/load", "90")
                      .Taint("dedicated", "gpu", "NoSchedule"));
  nodes.push_back(base("n4", "4", "8Gi")
                      .Ready(false)
                      .Label("zone", "a")
                      .Label("example.com/load", "50")
                      .Label("example.com/spot", "true"));
  return nodes;
}

// The pod being scheduled: 1 cpu, 2Gi.
inline PodJson Pod() {
  PodJson pod("web-1");
  pod.Namespace("shop").Request("cpu", "1").Request("memory", "2Gi");
  return pod;
}

// The pod already bound to n2 (as the API serves it: spec.nodeName, Running).
inline PodJson BoundPod() {
  PodJson pod("db-1");
  pod.Namespace("shop")
      .Request("cpu", "1")
      .Request("memory", "2Gi")
      .NodeName("n2")
      .Phase("Running");
  return pod;
}

// Profile "all": every built-in filter and scorer that needs no GPU
// conventions. Profile "packing": the packing scorers, no filter.
inline constexpr std::string_view kConfig = R"(
profiles:
  - name: all
    policies:
      - name: NodeHealth
      - name: TaintToleration
      - name: NodeLabel
        weight: 2
        args:
          forbidden:
            - matchLabels:
                example.com/spot: "true"
          preferred:
            - weight: 3
              matchLabels:
                zone: a
      - name: NodeNumeric
        args:
          key: example.com/load
          prefer: lower
          max: 80
      - name: NodeResourcesFit
      - name: LeastAllocated
        weight: 2
      - name: BalancedAllocation
  - name: packing
    policies:
      - name: MostAllocated
      - name: RequestedToCapacityRatio
        args:
          shape:
            - utilization: 0
              score: 0
            - utilization: 100
              score: 10
)";

inline std::vector<std::shared_ptr<const pipeline::Profile>> BuildProfiles(std::string_view yaml) {
  std::vector<std::shared_ptr<const pipeline::Profile>> out;
  auto config = config::LoadConfigText(yaml, "test");
  EXPECT_TRUE(config.ok()) << config.status().ToString();
  if (!config.ok()) {
    return out;
  }
  policy::Registry registry;
  EXPECT_TRUE(policy::RegisterBuiltinPolicies(registry).ok());
  for (size_t i = 0; i < config->profiles.size(); ++i) {
    auto p = pipeline::Profile::Build(config->profiles[i], registry,
                                      "profiles[" + std::to_string(i) + "]");
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    if (p.ok()) {
      out.push_back(*p);
    }
  }
  return out;
}

// `nodes` and `pods` into `cache` (a relist of each), through the real
// object decoder.
inline void FeedCache(cluster::ClusterCache& cache, const std::vector<NodeJson>& nodes,
                      const std::vector<PodJson>& pods) {
  wire::ObjectDecoder decoder;
  wire::ListMeta meta;
  std::vector<std::string> items;
  for (const NodeJson& n : nodes) {
    items.push_back(n.Build());
  }
  std::vector<cluster::InformerObject> node_objects;
  wire::RequestBuffer buffer = wire::RequestBuffer::CopyOf(
      R"({"metadata":{"resourceVersion":"1"},"items":)" + testing::JsonArray(items) + "}");
  Status s = decoder.DecodeNodeList(buffer, meta, [&](const wire::NodeObject& o) {
    node_objects.push_back(
        {std::make_shared<const model::OwnedNode>(o.info, o.resource_version), {}, {}});
    return true;
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  items.clear();
  for (const PodJson& p : pods) {
    items.push_back(p.Build());
  }
  std::vector<cluster::InformerObject> pod_objects;
  buffer = wire::RequestBuffer::CopyOf(R"({"metadata":{"resourceVersion":"1"},"items":)" +
                                       testing::JsonArray(items) + "}");
  s = decoder.DecodePodList(buffer, meta, [&](const wire::PodObject& o) {
    pod_objects.push_back(
        {{}, std::make_shared<const model::OwnedPod>(o.info, o.resource_version), {}});
    return true;
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  cache.OnReplace(cluster::ResourceKind::kNodes, std::move(node_objects));
  cache.OnReplace(cluster::ResourceKind::kPods, std::move(pod_objects));
}

// A synced cache with `nodes` and `pods`, fed through the real object decoder.
inline std::unique_ptr<cluster::ClusterCache> CacheWith(const std::vector<NodeJson>& nodes,
                                                        const std::vector<PodJson>& pods) {
  auto cache = std::make_unique<cluster::ClusterCache>();
  FeedCache(*cache, nodes, pods);
  return cache;
}

// ---- A GpuShare cluster (explain_stateful_test, replay_state_test) -----------

// A node with the device plugin's defaults: GPU memory in GiB, the devices
// from gpu-count.
inline NodeJson GpuNode(std::string name, std::string memory, std::string count) {
  NodeJson n(std::move(name));
  n.Ready().Allocatable("cpu", "8").Allocatable("memory", "32Gi").Allocatable("pods", "110");
  n.Capacity("cpu", "8").Capacity("memory", "32Gi").Capacity("pods", "110");
  if (!memory.empty()) {
    n.Capacity("aliyun.com/gpu-mem", memory).Allocatable("aliyun.com/gpu-mem", memory);
    n.Capacity("aliyun.com/gpu-count", count).Allocatable("aliyun.com/gpu-count", count);
  }
  return n;
}

// g1: 4 devices of 32 / 4 = 8 GiB; g2: 2 of 8 GiB, device 1 unhealthy (see
// FeedGpuCluster); g3: 1 of 4 GiB; g4: 2 of 8 GiB; cpu: no GPU.
inline std::vector<NodeJson> GpuNodes() {
  return {GpuNode("g1", "32", "4"), GpuNode("g2", "16", "2"), GpuNode("g3", "4", "1"),
          GpuNode("g4", "16", "2"), GpuNode("cpu", "", "")};
}

// A pod bound to `node` using `memory` GiB on device `device`.
inline PodJson GpuPodOn(std::string name, std::string node, std::string memory,
                        std::string device) {
  PodJson pod(std::move(name));
  pod.Namespace("ml")
      .Request("cpu", "100m")
      .Limit("aliyun.com/gpu-mem", memory)
      .Annotation("ALIYUN_COM_GPU_MEM_IDX", device)
      .NodeName(node)
      .Phase("Running");
  return pod;
}

inline constexpr std::string_view kGpuConfig = R"(
profiles:
  - name: binpack
    policies:
      - name: GpuShare
  - name: spread
    policies:
      - name: GpuShare
        args:
          scoring: spread
)";

// GpuNodes() and `pods` into `cache`, and the ConfigMap marking g2's device 1
// unhealthy through the cache's first watch (GpuShare's).
inline void FeedGpuCluster(cluster::ClusterCache& cache, const std::vector<PodJson>& pods) {
  FeedCache(cache, GpuNodes(), pods);
  cache.WatchFeed(0).OnReplace(
      cluster::ResourceKind::kObjects,
      {testing::RawInformerObject(
          R"({"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"unhealthy-gpu-g2",)"
          R"("namespace":"kube-system","resourceVersion":"3"},"data":{"gpus":"1"}})")});
}

}  // namespace schedext::explain_testing

#endif  // SCHEDEXT_TEST_EXPLAIN_EXPLAIN_FIXTURE_H_
