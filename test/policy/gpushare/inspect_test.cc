// GET /gpushare/inspect: the exact reply for a small cache fed as the
// informers feed it, the node filter, 404 and 503, the GPU gauges, and one
// round trip through HttpServer on loopback, with the route and the gauges
// that the GpuShare policy registers on its handle.
#include "policy/builtin/gpushare/inspect.h"

#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "schedext/cluster/cache.h"
#include "schedext/config/config.h"
#include "policy/builtin/gpushare/accounting.h"
#include "schedext/pipeline/profile.h"
#include "schedext/policy/policy_host.h"
#include "schedext/policy/registry.h"
#include "schedext/server/http_server.h"
#include "schedext/server/metrics.h"
#include "schedext/server/service.h"
#include "testing/model_builders.h"
#include "testing/raw_objects.h"

namespace schedext::server {
namespace {

using nlohmann::json;
// The reply's member order is part of its contract: compared in order.
using OrderedJson = nlohmann::ordered_json;
using test::NodeBuilder;
using test::PodBuilder;
using test::TestArena;

using policy::gpushare::AppendGpuShareMetrics;
using policy::gpushare::GpuShareInspect;

const policy::gpushare::GpuShareConvention kPlugin;

cluster::InformerObject GpuNode(std::string_view name, int64_t memory, int64_t count) {
  TestArena arena;
  NodeBuilder node(arena);
  node.Name(name).Ready().Allocatable({{"cpu", 8000}, {"pods", 110}});
  if (count > 0) {
    node.Capacity("aliyun.com/gpu-mem", memory).Capacity("aliyun.com/gpu-count", count);
  }
  model::NodeInfo info = node.Build();
  info.usage = nullptr;
  return {std::make_shared<const model::OwnedNode>(info), nullptr, nullptr};
}

// A pod asking for `memory` GiB of GPU memory over two containers, on
// `device` of `node` ("" / -1: none).
std::shared_ptr<const model::OwnedPod> GpuPod(std::string_view ns, std::string_view name,
                                              std::string_view node, int device,
                                              int64_t memory) {
  TestArena arena;
  PodBuilder pod(arena);
  pod.Name(name).Namespace(ns).Uid("uid-" + std::string(name)).Phase("Running");
  if (!node.empty()) {
    pod.NodeName(node);
  }
  if (device >= 0) {
    pod.Annotation(kPlugin.index_annotation, std::to_string(device));
  }
  pod.Container({{"cpu", 100}}, {{"aliyun.com/gpu-mem", memory - 1}});
  pod.Container({{"cpu", 100}}, {{"aliyun.com/gpu-mem", 1}});
  return std::make_shared<const model::OwnedPod>(pod.Build());
}

// GpuShare's accounting and ConfigMap watch: those `host`'s policies
// registered, or (null) one of the test's own, in slot 0 either way.
cluster::CacheOptions GpuOptions(const policy::PolicyHost* host = nullptr) {
  cluster::CacheOptions options;
  if (host != nullptr) {
    options.accountings = host->accountings();
    options.summaries = host->summaries();
    for (const auto& watch : host->watches()) {
      options.watches.push_back(watch.handler);
    }
  } else {
    auto accounting = std::make_shared<policy::gpushare::GpuAccounting>(kPlugin);
    options.accountings.push_back(accounting);
    options.watches.push_back(accounting);
  }
  return options;
}

// g1: 2 × 16 GiB; g2: 4 × 8 GiB with device 1 unhealthy; cpu-1: no GPUs.
std::unique_ptr<cluster::ClusterCache> SmallCluster(const policy::PolicyHost* host = nullptr) {
  auto cache = std::make_unique<cluster::ClusterCache>(GpuOptions(host));
  std::vector<cluster::InformerObject> nodes;
  nodes.push_back(GpuNode("g2", 32, 4));
  nodes.push_back(GpuNode("cpu-1", 0, 0));
  nodes.push_back(GpuNode("g1", 32, 2));
  std::vector<cluster::InformerObject> pods;
  for (auto pod : {GpuPod("default", "b", "g1", 0, 4), GpuPod("default", "a", "g1", 0, 8),
                   GpuPod("default", "c", "g1", 1, 2), GpuPod("kube", "z", "g1", -1, 3),
                   GpuPod("default", "d", "g2", 3, 8), GpuPod("default", "e", "", 0, 5)}) {
    pods.push_back({nullptr, std::move(pod), nullptr});
  }
  cache->OnReplace(cluster::ResourceKind::kNodes, std::move(nodes));
  cache->OnReplace(cluster::ResourceKind::kPods, std::move(pods));
  cache->WatchFeed(0).OnReplace(
      cluster::ResourceKind::kObjects,
      {testing::RawInformerObject(
          R"({"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"unhealthy-gpu-g2",)"
          R"("namespace":"kube-system","resourceVersion":"3"},"data":{"gpus":"1"}})")});
  // A bind in flight: reserved on g1's device 1, not yet seen by the watch.
  const auto assumed = GpuPod("team", "f", "g1", 1, 6);
  const Status s = cache->Assume({assumed->info().uid, assumed->info().namespace_name,
                                  assumed->info().name, "g1", &assumed->info()});
  EXPECT_TRUE(s.ok()) << s.ToString();
  return cache;
}

const OrderedJson kG1 = OrderedJson::parse(R"({"name":"g1","gpuCount":2,"totalMemory":32,"usedMemory":20,
  "freeMemory":12,"unassignedMemory":3,"devices":[
  {"index":0,"healthy":true,"totalMemory":16,"usedMemory":12,"freeMemory":4,"pods":[
    {"namespace":"default","name":"a","uid":"uid-a","memory":8,"assumed":false},
    {"namespace":"default","name":"b","uid":"uid-b","memory":4,"assumed":false}]},
  {"index":1,"healthy":true,"totalMemory":16,"usedMemory":8,"freeMemory":8,"pods":[
    {"namespace":"default","name":"c","uid":"uid-c","memory":2,"assumed":false},
    {"namespace":"team","name":"f","uid":"uid-f","memory":6,"assumed":true}]}]})");
const OrderedJson kG2 = OrderedJson::parse(R"({"name":"g2","gpuCount":4,"totalMemory":32,"usedMemory":8,
  "freeMemory":24,"unassignedMemory":0,"devices":[
  {"index":0,"healthy":true,"totalMemory":8,"usedMemory":0,"freeMemory":8,"pods":[]},
  {"index":1,"healthy":false,"totalMemory":8,"usedMemory":0,"freeMemory":8,"pods":[]},
  {"index":2,"healthy":true,"totalMemory":8,"usedMemory":0,"freeMemory":8,"pods":[]},
  {"index":3,"healthy":true,"totalMemory":8,"usedMemory":8,"freeMemory":0,"pods":[
    {"namespace":"default","name":"d","uid":"uid-d","memory":8,"assumed":false}]}]})");

TEST(GpuShareInspectTest, ListsEveryGpuNodeWithItsDevicesAndPods) {
  auto cache = SmallCluster();
  ASSERT_TRUE(cache->Synced());
  std::string body;
  ASSERT_EQ(GpuShareInspect(cache->snapshot().get(), kPlugin, 0, "", body), 200) << body;
  // Exact bytes: the documented member order, nodes by name, compact.
  EXPECT_EQ(body, R"({"unit":"GiB","nodes":[)" + kG1.dump() + "," + kG2.dump() + "]}\n");
}

TEST(GpuShareInspectTest, OneNode) {
  auto cache = SmallCluster();
  std::string body;
  ASSERT_EQ(GpuShareInspect(cache->snapshot().get(), kPlugin, 0, "g2", body), 200) << body;
  EXPECT_EQ(body, kG2.dump() + "\n");
}

TEST(GpuShareInspectTest, UnknownNodesAndNodesWithoutGpusAre404) {
  auto cache = SmallCluster();
  std::string body;
  EXPECT_EQ(GpuShareInspect(cache->snapshot().get(), kPlugin, 0, "nope", body), 404);
  EXPECT_EQ(json::parse(body),
            (json{{"Error", "gpushare inspect: node \"nope\" is unknown to schedext"}}));
  EXPECT_EQ(GpuShareInspect(cache->snapshot().get(), kPlugin, 0, "cpu-1", body), 404);
  EXPECT_EQ(json::parse(body),
            (json{{"Error",
                   "gpushare inspect: node \"cpu-1\" has no shared GPUs (capacity "
                   "aliyun.com/gpu-mem / aliyun.com/gpu-count)"}}));
}

TEST(GpuShareInspectTest, NotSyncedIs503) {
  cluster::ClusterCache cache(GpuOptions());
  std::vector<cluster::InformerObject> nodes;
  nodes.push_back(GpuNode("g1", 32, 2));
  cache.OnReplace(cluster::ResourceKind::kNodes, std::move(nodes));
  cache.OnReplace(cluster::ResourceKind::kPods, {});
  // The ConfigMap informer has not listed yet.
  std::string body;
  EXPECT_EQ(GpuShareInspect(cache.snapshot().get(), kPlugin, 0, "", body), 503);
  EXPECT_EQ(json::parse(body),
            (json{{"Error", "gpushare inspect: the cluster cache has not synced yet"}}));
  EXPECT_EQ(GpuShareInspect(cache.snapshot().get(), kPlugin, 0, "g1", body), 503);
}

TEST(GpuShareInspectTest, GaugesSumTheDevices) {
  auto cache = SmallCluster();
  std::string out;
  AppendGpuShareMetrics(cache->snapshot().get(), kPlugin, 0, out);
  // total 2×16 + 4×8; used 12+8+8; free: g1 4+8, g2 8+8+0 (device 1 is unhealthy).
  EXPECT_NE(out.find("\nschedext_gpushare_memory{state=\"total\"} 64\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find("\nschedext_gpushare_memory{state=\"used\"} 28\n"), std::string::npos);
  EXPECT_NE(out.find("\nschedext_gpushare_memory{state=\"free\"} 28\n"), std::string::npos);
  EXPECT_NE(out.find("\nschedext_gpushare_devices{health=\"healthy\"} 5\n"), std::string::npos);
  EXPECT_NE(out.find("\nschedext_gpushare_devices{health=\"unhealthy\"} 1\n"), std::string::npos);
  EXPECT_NE(out.find("\nschedext_gpushare_unassigned_memory 3\n"), std::string::npos);

  // Through Metrics::Render, after the request series.
  Metrics metrics({"default"});
  const cluster::ClusterCache* c = cache.get();
  metrics.SetExtra(
      [c](std::string& text) { AppendGpuShareMetrics(c->snapshot().get(), kPlugin, 0, text); });
  std::string rendered;
  metrics.Render(rendered);
  EXPECT_NE(rendered.find("schedext_requests_total"), std::string::npos);
  EXPECT_NE(rendered.find("schedext_gpushare_memory{state=\"used\"} 28\n"), std::string::npos);
}

TEST(GpuShareInspectTest, ServedOverHttp) {
  // As main wires it: the profile's GpuShare registers its accounting, watch,
  // route and gauges on the host; the cache and the server take them from it.
  policy::PolicyHost host;
  policy::Registry registry;
  ASSERT_TRUE(policy::RegisterBuiltinPolicies(registry).ok());
  const config::ProfileConfig config{
      "default",
      {{"NodeHealth", 1, std::make_shared<const json>(json::object())},
       {"GpuShare", 1, std::make_shared<const json>(json::object())}}};
  auto profile = pipeline::Profile::Build(config, registry, "profiles[0]", &host);
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  ASSERT_EQ(host.accountings().size(), 1u);
  ASSERT_EQ(host.watches().size(), 1u);
  EXPECT_EQ(host.watches()[0].spec.namespace_name, "kube-system");
  ASSERT_EQ(host.routes().size(), 1u);
  EXPECT_FALSE(host.cluster_requirements().empty());
  auto cache = SmallCluster(&host);
  const cluster::ClusterCache* c = cache.get();
  host.AttachCluster(
      [c]() -> std::shared_ptr<const policy::ClusterView> { return c->snapshot(); });
  ExtenderService service({*profile}, 0, cache.get(), nullptr, nullptr);
  HttpServerOptions options;
  options.server.host = "127.0.0.1";
  options.server.port = 0;
  options.server.threads = 4;
  for (const policy::PolicyHost::Route& route : host.routes()) {
    options.get_routes.push_back({route.path, route.handler});
  }
  // The gauges through Metrics::Render, as main sets them.
  Metrics metrics({"default"});
  metrics.SetExtra([&host](std::string& text) { host.WriteMetrics(text); });
  std::string rendered;
  metrics.Render(rendered);
  EXPECT_NE(rendered.find("schedext_gpushare_memory{state=\"used\"} 28\n"), std::string::npos)
      << rendered;
  HttpServer server(service, nullptr, options);
  ASSERT_TRUE(server.Bind().ok());
  std::thread serve([&] { EXPECT_TRUE(server.Serve().ok()); });

  httplib::Client client("127.0.0.1", server.port());
  client.set_read_timeout(5, 0);
  auto res = client.Get("/gpushare/inspect");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(res->body, R"({"unit":"GiB","nodes":[)" + kG1.dump() + "," + kG2.dump() + "]}\n");
  res = client.Get("/gpushare/inspect/g1");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, kG1.dump() + "\n");
  res = client.Get("/gpushare/inspect/cpu-1");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  // Only GET; a path that merely starts with the route's is not it.
  res = client.Post("/gpushare/inspect", "{}", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 405);
  EXPECT_EQ(res->get_header_value("Allow"), "GET");
  res = client.Get("/gpushare/inspector");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_NE(res->body.find("/gpushare/inspect[/...]"), std::string::npos) << res->body;
  // The built-in routes are unaffected.
  res = client.Get("/healthz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);

  server.Stop();
  serve.join();
}

}  // namespace
}  // namespace schedext::server
