// GET /hami/inspect: the exact reply for a small cache fed as the informers
// feed it (HamiVgpu's accounting in slot 0), one node, 404 and 503.
#include "policy/builtin/hami_vgpu/inspect.h"

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "policy/builtin/hami_vgpu/accounting.h"
#include "policy/builtin/hami_vgpu/protocol.h"
#include "schedext/cluster/cache.h"
#include "testing/model_builders.h"

namespace schedext::policy::hami {
namespace {

using OrderedJson = nlohmann::ordered_json;
using test::NodeBuilder;
using test::PodBuilder;
using test::TestArena;

// 2024-01-23 04:31:04 UTC: a minute after the stale handshake below.
constexpr int64_t kNow = 1705984264;

cluster::InformerObject Node(std::string_view name, std::string_view devices,
                             std::string_view handshake = "") {
  TestArena arena;
  NodeBuilder node(arena);
  node.Name(name).Ready();
  if (!devices.empty()) {
    node.Annotation(kRegisterAnnotation, devices);
  }
  if (!handshake.empty()) {
    node.Annotation(kHandshakeAnnotation, handshake);
  }
  model::NodeInfo info = node.Build();
  info.usage = nullptr;
  return {std::make_shared<const model::OwnedNode>(info), nullptr, nullptr};
}

std::shared_ptr<const model::OwnedPod> Pod(std::string_view ns, std::string_view name,
                                           std::string_view node, std::string_view allocated,
                                           std::string_view assigned = "") {
  TestArena arena;
  PodBuilder pod(arena);
  pod.Name(name).Namespace(ns).Uid("uid-" + std::string(name)).Phase("Running");
  pod.Container({{"cpu", 100}}, {{"nvidia.com/gpu", 1}});
  if (!node.empty()) {
    pod.NodeName(node);
  }
  pod.Annotation(kAllocatedAnnotation, allocated);
  if (!assigned.empty()) {
    pod.Annotation(kAssignedNodeAnnotation, assigned);
  }
  return std::make_shared<const model::OwnedPod>(pod.Build());
}

std::unique_ptr<cluster::ClusterCache> SmallCluster() {
  cluster::CacheOptions options;
  options.accountings.push_back(std::make_shared<VgpuAccounting>());
  auto cache = std::make_unique<cluster::ClusterCache>(options);
  std::vector<cluster::InformerObject> nodes;
  nodes.push_back(Node("n2", R"([{"id":"GPU-c","count":2,"devmem":16384,"devcore":100,)"
                             R"("type":"NVIDIA-T4","numa":1,"mode":"hami-core","health":true}])",
                       "Requesting_2024-01-23 04:30:04"));
  nodes.push_back(Node("cpu", ""));
  nodes.push_back(Node("n1",
                       "GPU-a,10,81920,100,NVIDIA-A100,0,true,0,hami-core:"
                       "GPU-b,10,81920,100,NVIDIA-A100,0,false,1,hami-core:"));
  std::vector<cluster::InformerObject> pods;
  for (auto pod : {Pod("default", "y", "n1", "GPU-a,NVIDIA,1000,10:;"),
                   Pod("default", "x", "n1", "GPU-a,NVIDIA,2000,0:GPU-b,NVIDIA,2000,0:;GPU-a,NVIDIA,500,5:;"),
                   Pod("other", "z", "n2", "GPU-c,NVIDIA,4096,50:;")}) {
    pods.push_back({nullptr, std::move(pod), nullptr});
  }
  cache->OnReplace(cluster::ResourceKind::kNodes, std::move(nodes));
  cache->OnReplace(cluster::ResourceKind::kPods, std::move(pods));
  // A bind in flight on n1, known by its annotations alone.
  const auto assumed = Pod("team", "w", "", "GPU-b,NVIDIA,3000,30:;", "n1");
  const Status s = cache->Assume({assumed->info().uid, assumed->info().namespace_name,
                                  assumed->info().name, "n1", &assumed->info()});
  EXPECT_TRUE(s.ok()) << s.ToString();
  return cache;
}

const OrderedJson kN1 = OrderedJson::parse(R"({"name":"n1","usable":true,"devices":[
  {"uuid":"GPU-a","index":0,"type":"NVIDIA-A100","numa":0,"mode":"hami-core","healthy":true,
   "vgpus":10,"usedVgpus":3,"memory":81920,"usedMemory":3500,"cores":100,"usedCores":15,"pods":[
     {"namespace":"default","name":"x","uid":"uid-x","vgpus":2,"memory":2500,"cores":5,"assumed":false},
     {"namespace":"default","name":"y","uid":"uid-y","vgpus":1,"memory":1000,"cores":10,"assumed":false}]},
  {"uuid":"GPU-b","index":1,"type":"NVIDIA-A100","numa":0,"mode":"hami-core","healthy":false,
   "vgpus":10,"usedVgpus":2,"memory":81920,"usedMemory":5000,"cores":100,"usedCores":30,"pods":[
     {"namespace":"default","name":"x","uid":"uid-x","vgpus":1,"memory":2000,"cores":0,"assumed":false},
     {"namespace":"team","name":"w","uid":"uid-w","vgpus":1,"memory":3000,"cores":30,"assumed":true}]}]})");
const OrderedJson kN2 = OrderedJson::parse(R"({"name":"n2","usable":false,"devices":[
  {"uuid":"GPU-c","index":0,"type":"NVIDIA-T4","numa":1,"mode":"hami-core","healthy":true,
   "vgpus":2,"usedVgpus":1,"memory":16384,"usedMemory":4096,"cores":100,"usedCores":50,"pods":[
     {"namespace":"other","name":"z","uid":"uid-z","vgpus":1,"memory":4096,"cores":50,"assumed":false}]}]})");

TEST(HamiInspectTest, ListsEveryVgpuNodeWithItsDevicesAndPods) {
  auto cache = SmallCluster();
  ASSERT_TRUE(cache->Synced());
  std::string body;
  ASSERT_EQ(HamiInspect(cache->snapshot().get(), 0, "nvidia.com/gpu", kNow, "", body), 200)
      << body;
  EXPECT_EQ(body, R"({"nodes":[)" + kN1.dump() + "," + kN2.dump() + "]}\n");
}

TEST(HamiInspectTest, OneNodeAndTheErrors) {
  auto cache = SmallCluster();
  std::string body;
  ASSERT_EQ(HamiInspect(cache->snapshot().get(), 0, "nvidia.com/gpu", kNow, "n2", body), 200);
  EXPECT_EQ(body, kN2.dump() + "\n");
  EXPECT_EQ(HamiInspect(cache->snapshot().get(), 0, "nvidia.com/gpu", kNow, "cpu", body), 404);
  EXPECT_EQ(body, R"({"Error":"hami inspect: no node \"cpu\" with vGPUs"})" "\n");
  EXPECT_EQ(HamiInspect(cache->snapshot().get(), 0, "nvidia.com/gpu", kNow, "nope", body), 404);
  EXPECT_EQ(HamiInspect(nullptr, 0, "nvidia.com/gpu", kNow, "", body), 503);
  cluster::ClusterCache unsynced(cluster::CacheOptions{});
  EXPECT_EQ(HamiInspect(unsynced.snapshot().get(), 0, "nvidia.com/gpu", kNow, "", body), 503);
}

// n1: two A100s (one unhealthy), 5 of 20 vGPUs, 8500 MiB, 45 cores used;
// n2: a T4 on a node whose handshake is stale.
TEST(HamiInspectTest, Gauges) {
  auto cache = SmallCluster();
  std::string out;
  AppendHamiMetrics(cache->snapshot().get(), 0, "nvidia.com/gpu", kNow, out);
  EXPECT_EQ(out,
            "# HELP schedext_hami_vgpus vGPUs (split counts) of the registered HAMi devices.\n"
            "# TYPE schedext_hami_vgpus gauge\n"
            "schedext_hami_vgpus{state=\"total\"} 22\n"
            "schedext_hami_vgpus{state=\"used\"} 6\n"
            "# HELP schedext_hami_memory_mib Memory of the registered HAMi devices, in MiB.\n"
            "# TYPE schedext_hami_memory_mib gauge\n"
            "schedext_hami_memory_mib{state=\"total\"} 180224\n"
            "schedext_hami_memory_mib{state=\"used\"} 12596\n"
            "# HELP schedext_hami_cores Compute of the registered HAMi devices (100 per device).\n"
            "# TYPE schedext_hami_cores gauge\n"
            "schedext_hami_cores{state=\"total\"} 300\n"
            "schedext_hami_cores{state=\"used\"} 95\n"
            "# HELP schedext_hami_devices Registered HAMi devices: usable, unhealthy, or on a node "
            "whose handshake is stale.\n"
            "# TYPE schedext_hami_devices gauge\n"
            "schedext_hami_devices{state=\"usable\"} 1\n"
            "schedext_hami_devices{state=\"unhealthy\"} 1\n"
            "schedext_hami_devices{state=\"stale\"} 1\n");
  std::string empty;
  AppendHamiMetrics(nullptr, 0, "nvidia.com/gpu", kNow, empty);
  EXPECT_NE(empty.find("schedext_hami_vgpus{state=\"total\"} 0\n"), std::string::npos) << empty;
}

}  // namespace
}  // namespace schedext::policy::hami
