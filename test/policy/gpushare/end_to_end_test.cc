// GPU sharing end to end against the fake API server: a real HttpKubeClient
// over TLS, the node, pod and kube-system ConfigMap informers, the cluster
// cache with per-device accounting, the GpuShare profile and KubeBinder (the
// device annotations in the Binding), served by HttpServer on loopback — the way src/main.cc
// wires them. The API server's objects are the ground truth every check
// compares against.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "schedext/cluster/cache.h"
#include "schedext/cluster/client_config.h"
#include "schedext/cluster/http_kube_client.h"
#include "schedext/cluster/informer.h"
#include "schedext/cluster/resource_path.h"
#include "schedext/cluster/kube_binder.h"
#include "policy/builtin/gpushare/accounting.h"
#include "policy/builtin/gpushare/convention.h"
#include "schedext/config/config.h"
#include "schedext/policy/policy_host.h"
#include "schedext/policy/registry.h"
#include "schedext/server/http_server.h"
#include "schedext/server/service.h"
#include "testing/eventually.h"
#include "testing/fake_api_server.h"

namespace schedext {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using testing::FakeApiServer;
using testing::FakeResource;

constexpr int kGpusPerNode = 4;
constexpr int64_t kDeviceMemory = 16;  // GiB
constexpr std::string_view kNamespace = "gpu";

const policy::gpushare::GpuShareConvention kPlugin;

// GpuShare's usage of a node (the only accounting here: slot 0).
const policy::gpushare::GpuUsage& GpuOf(const model::NodeUsage& usage) {
  static const policy::gpushare::GpuUsage kNothing;
  const auto* state = static_cast<const policy::gpushare::GpuNodeState*>(usage.states.Get(0));
  return state != nullptr ? state->gpu : kNothing;
}

using testing::Eventually;

// 4 GPUs × 16 GiB, and CPU, memory and pod slots for far more than that.
std::string GpuNode(std::string_view name) {
  json node = json::parse(testing::FixtureNode(name));
  node["spec"].erase("taints");
  for (const char* field : {"capacity", "allocatable"}) {
    json& list = node["status"][field];
    list["cpu"] = "256";
    list["memory"] = "1Ti";
    list["pods"] = "5000";
    list[kPlugin.memory_resource] = std::to_string(kGpusPerNode * kDeviceMemory);
    list[kPlugin.count_resource] = std::to_string(kGpusPerNode);
  }
  return node.dump();
}

// A pending pod asking for `memory` GiB of GPU memory (limit and request, as
// the API server defaults an extended resource).
json GpuPod(std::string_view name, int64_t memory) {
  json pod = json::parse(testing::FixturePod(kNamespace, name));
  json& resources = pod["spec"]["containers"][0]["resources"];
  resources["limits"][kPlugin.memory_resource] = std::to_string(memory);
  resources["requests"][kPlugin.memory_resource] = std::to_string(memory);
  return pod;
}

std::string PodName(int i) {
  char name[16];
  std::snprintf(name, sizeof name, "gpu-%04d", i);
  return name;
}

std::string PodPath(std::string_view name) {
  return "/api/v1/namespaces/" + std::string(kNamespace) + "/pods/" + std::string(name);
}

constexpr std::string_view kConfig = R"(
profiles:
  - name: gpushare
    policies:
      - name: GpuShare
      - name: NodeResourcesFit
)";

std::unique_ptr<cluster::KubeClient> NewClient(FakeApiServer& api) {
  cluster::ClientConfig config;
  config.server = api.url();
  config.ca_pem = api.ca_pem();
  config.token = api.token();
  config.qps = 0;  // no client-side rate limit: the test measures schedext, not the bucket
  auto client = cluster::NewHttpKubeClient(config);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return client.ok() ? std::move(client).value() : nullptr;
}

// A cluster cache with what the policies registered on `host` (GpuShare's
// accounting and ConfigMap watch), fed by its own client's informers, as main
// wires them.
class WatchedCache {
 public:
  WatchedCache(FakeApiServer& api, policy::PolicyHost& host) : client_(NewClient(api)) {
    cluster::CacheOptions options;
    options.accountings = host.accountings();
    options.summaries = host.summaries();
    for (const auto& watch : host.watches()) {
      options.watches.push_back(watch.handler);
    }
    cache_ = std::make_unique<cluster::ClusterCache>(options);
    for (cluster::ResourceKind kind : {cluster::ResourceKind::kNodes, cluster::ResourceKind::kPods}) {
      cluster::InformerOptions options_for_kind;
      options_for_kind.kind = kind;
      informers_.push_back(
          std::make_unique<cluster::Informer>(*client_, *cache_, options_for_kind));
    }
    for (size_t i = 0; i < host.watches().size(); ++i) {
      informers_.push_back(std::make_unique<cluster::Informer>(
          *client_, cache_->WatchFeed(i),
          cluster::WatchInformerOptions(host.watches()[i].spec, {})));
    }
    const cluster::ClusterCache* cache = cache_.get();
    host.AttachCluster(
        [cache]() -> std::shared_ptr<const policy::ClusterView> { return cache->snapshot(); });
    for (auto& informer : informers_) {
      informer->Start();
    }
  }
  ~WatchedCache() {
    for (auto& informer : informers_) {
      informer->Stop();
    }
  }
  cluster::ClusterCache& cache() { return *cache_; }
  cluster::KubeClient& client() { return *client_; }

 private:
  std::unique_ptr<cluster::KubeClient> client_;
  std::unique_ptr<cluster::ClusterCache> cache_;
  std::vector<std::unique_ptr<cluster::Informer>> informers_;
};

// The GpuShare profile of kConfig, its registrations on `host`.
std::shared_ptr<const pipeline::Profile> BuildProfile(policy::PolicyHost& host) {
  auto config = config::LoadConfigText(kConfig, "test");
  EXPECT_TRUE(config.ok()) << config.status().ToString();
  policy::Registry registry;
  EXPECT_TRUE(policy::RegisterBuiltinPolicies(registry).ok());
  auto profile = pipeline::Profile::Build(config->profiles[0], registry, "profiles[0]", &host);
  EXPECT_TRUE(profile.ok()) << profile.status().ToString();
  return profile.ok() ? *profile : nullptr;
}

// schedext: the watched cache, the GpuShare profile and binder,
// served on 127.0.0.1:<free port> with the policy's routes (/gpushare/inspect).
class GpuExtender {
 public:
  explicit GpuExtender(FakeApiServer& api)
      : profile_(BuildProfile(host_)), watched_(api, host_) {
    binder_ = std::make_unique<cluster::KubeBinder>(watched_.client());
    EXPECT_TRUE(profile_->has_reservers());
    service_ = std::make_unique<server::ExtenderService>(
        std::vector<std::shared_ptr<const pipeline::Profile>>{profile_}, 0, &cache(),
        binder_.get(), nullptr);
    server::HttpServerOptions options;
    options.server.host = "127.0.0.1";
    options.server.port = 0;
    options.server.threads = 24;
    cluster::ClusterCache* c = &cache();
    options.ready = [c] { return c->Synced(); };
    for (const policy::PolicyHost::Route& route : host_.routes()) {
      options.get_routes.push_back({route.path, route.handler});
    }
    http_ = std::make_unique<server::HttpServer>(*service_, nullptr, options);
    EXPECT_TRUE(http_->Bind().ok());
    serve_ = std::thread([this] { EXPECT_TRUE(http_->Serve().ok()); });
  }
  ~GpuExtender() {
    http_->Stop();
    serve_.join();
  }

  cluster::ClusterCache& cache() { return watched_.cache(); }
  int port() const { return http_->port(); }

  // The Error of POST /gpushare/bind ("" when bound); "HTTP ..." when the
  // reply itself is wrong.
  std::string Bind(httplib::Client& client, std::string_view name, std::string_view uid,
                   std::string_view node) {
    const json args = {{"PodName", name}, {"PodNamespace", kNamespace}, {"PodUID", uid},
                       {"Node", node}};
    auto res = client.Post("/gpushare/bind", args.dump(), "application/json");
    if (!res || res->status != 200) {
      return "HTTP " + (res ? std::to_string(res->status) : std::string("failure"));
    }
    return json::parse(res->body)["Error"].get<std::string>();
  }

 private:
  policy::PolicyHost host_;  // first: it outlives everything its policies reach
  std::shared_ptr<const pipeline::Profile> profile_;
  WatchedCache watched_;
  std::unique_ptr<cluster::KubeBinder> binder_;
  std::unique_ptr<server::ExtenderService> service_;
  std::unique_ptr<server::HttpServer> http_;
  std::thread serve_;
};

// GPU memory per node and device, from the pods as the API server holds them.
using DeviceSums = std::map<std::string, std::array<int64_t, kGpusPerNode>>;

// The cache's per-device usage of `nodes`.
DeviceSums CacheSums(const cluster::ClusterCache& cache, const std::vector<std::string>& nodes) {
  DeviceSums sums;
  const auto snapshot = cache.snapshot();
  for (const std::string& node : nodes) {
    std::array<int64_t, kGpusPerNode>& row = sums[node];
    row.fill(0);
    if (const model::NodeUsage* usage = snapshot->FindUsage(node)) {
      for (int d = 0; d < kGpusPerNode; ++d) {
        row[static_cast<size_t>(d)] = GpuOf(*usage).UsedOn(d);
      }
    }
  }
  return sums;
}

TEST(GpuShareEndToEndTest, ConcurrentBindsNeverOverAllocateADevice) {
  const auto started = std::chrono::steady_clock::now();
  FakeApiServer api;
  ASSERT_TRUE(api.Start()) << api.error();
  const std::vector<std::string> nodes = {"gpu-node-0", "gpu-node-1", "gpu-node-2",
                                          "gpu-node-3"};
  for (const std::string& node : nodes) {
    ASSERT_FALSE(api.AddNode(GpuNode(node)).empty());
  }
  // 1,000 pending pods of 1–8 GiB (seeded): far more than the 256 GiB there
  // is, so most binds race for the last room on some device.
  constexpr int kPods = 1000;
  std::mt19937 rng(20261130);
  std::uniform_int_distribution<int> memory_of(1, 8);
  std::uniform_int_distribution<int> node_of(0, static_cast<int>(nodes.size()) - 1);
  std::vector<std::string> uids(kPods);
  std::vector<int64_t> memory(kPods);
  std::vector<std::string> target(kPods);
  // Injected failures, on pods taken first and asking 1 GiB so that they
  // surely fit: their Binding answers 500 (bind 500s), or 409 as for a pod
  // re-created under the same name (its uid precondition).
  const std::set<int> binding_500 = {1, 4, 9};
  const std::set<int> binding_409 = {2, 6, 11};
  for (int i = 0; i < kPods; ++i) {
    memory[static_cast<size_t>(i)] = memory_of(rng);
    target[static_cast<size_t>(i)] = nodes[static_cast<size_t>(node_of(rng))];
    if (binding_500.count(i) != 0 || binding_409.count(i) != 0) {
      memory[static_cast<size_t>(i)] = 1;
    }
    const json pod = GpuPod(PodName(i), memory[static_cast<size_t>(i)]);
    uids[static_cast<size_t>(i)] = pod["metadata"]["uid"];
    ASSERT_FALSE(api.AddPod(pod.dump()).empty());
  }
  for (int i : binding_500) {
    api.QueueResponse("POST", PodPath(PodName(i)) + "/binding", 500,
                      FakeApiServer::StatusJson(500, "InternalError", "injected: etcd is down"));
  }
  for (int i : binding_409) {
    api.QueueResponse(
        "POST", PodPath(PodName(i)) + "/binding", 409,
        FakeApiServer::StatusJson(409, "Conflict",
                                  "Precondition failed: UID in precondition: injected"));
  }

  GpuExtender extender(api);
  ASSERT_TRUE(Eventually([&] { return extender.cache().Synced(); }));
  ASSERT_EQ(extender.cache().Stats().pods, static_cast<size_t>(kPods));

  // 16 threads, one keep-alive connection each, bind every pod to its seeded
  // node while the watch delivers the binding events.
  enum class Outcome { kBound, kMisfit, kInjected500, kInjected409, kOther };
  std::vector<Outcome> outcome(kPods, Outcome::kOther);
  std::vector<std::string> errors(kPods);
  std::atomic<int> next{0};
  // Each injected pod is the first bind of its own thread, and the other
  // binds wait until it holds its reservation (or is done): with 2 CPUs a
  // thread may otherwise start after the cluster has filled up, and an
  // injected pod that no longer fits would test nothing. Its API calls (and
  // its rollback) still overlap the other binds.
  std::vector<int> injected(binding_500.begin(), binding_500.end());
  injected.insert(injected.end(), binding_409.begin(), binding_409.end());
  std::vector<std::atomic<bool>> finished(kPods);
  auto injected_started = [&] {
    const auto snapshot = extender.cache().snapshot();
    for (int i : injected) {
      const size_t k = static_cast<size_t>(i);
      if (!finished[k].load() && !snapshot->IsAssumed(uids[k])) {
        return false;
      }
    }
    return true;
  };
  std::vector<std::thread> threads;
  const auto binds_started = std::chrono::steady_clock::now();
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      httplib::Client client("127.0.0.1", extender.port());
      client.set_read_timeout(20, 0);
      client.set_keep_alive(true);
      auto bind = [&](int i) {
        const size_t k = static_cast<size_t>(i);
        std::string error = extender.Bind(client, PodName(i), uids[k], target[k]);
        if (error.empty()) {
          outcome[k] = Outcome::kBound;
        } else if (error.find("the node no longer fits the pod") != std::string::npos) {
          outcome[k] = Outcome::kMisfit;
        } else if (binding_500.count(i) != 0 && error.find("injected: etcd is down") !=
                                                     std::string::npos) {
          outcome[k] = Outcome::kInjected500;
        } else if (binding_409.count(i) != 0 &&
                   error.find("UID in precondition: injected") != std::string::npos) {
          outcome[k] = Outcome::kInjected409;
        }
        errors[k] = std::move(error);
        finished[k] = true;
      };
      if (static_cast<size_t>(t) < injected.size()) {
        bind(injected[static_cast<size_t>(t)]);
      } else {
        EXPECT_TRUE(Eventually(injected_started, milliseconds(10000)));
      }
      for (int i = next++; i < kPods; i = next++) {
        if (std::find(injected.begin(), injected.end(), i) == injected.end()) {
          bind(i);
        }
      }
    });
  }
  for (std::thread& t : threads) {
    t.join();
  }
  const double bind_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - binds_started).count();

  std::map<Outcome, int> counts;
  for (int i = 0; i < kPods; ++i) {
    const size_t k = static_cast<size_t>(i);
    ++counts[outcome[k]];
    EXPECT_NE(outcome[k], Outcome::kOther) << PodName(i) << ": " << errors[k];
  }
  for (int i : binding_500) {
    EXPECT_EQ(outcome[static_cast<size_t>(i)], Outcome::kInjected500)
        << PodName(i) << ": " << errors[static_cast<size_t>(i)];
  }
  for (int i : binding_409) {
    EXPECT_EQ(outcome[static_cast<size_t>(i)], Outcome::kInjected409)
        << PodName(i) << ": " << errors[static_cast<size_t>(i)];
  }
  EXPECT_EQ(counts[Outcome::kInjected500], static_cast<int>(binding_500.size()));
  EXPECT_EQ(counts[Outcome::kInjected409], static_cast<int>(binding_409.size()));
  EXPECT_GT(counts[Outcome::kBound], 0);
  EXPECT_GT(counts[Outcome::kMisfit], 0);

  // Every reservation ends: confirmed by the watch (bound pods) or forgotten.
  ASSERT_TRUE(Eventually([&] { return extender.cache().Stats().assumed == 0; }))
      << extender.cache().Stats().assumed << " reservation(s) left";

  // The API server's view.
  DeviceSums api_sums;
  for (const std::string& node : nodes) {
    api_sums[node].fill(0);
  }
  int bound_in_api = 0;
  for (int i = 0; i < kPods; ++i) {
    const size_t k = static_cast<size_t>(i);
    SCOPED_TRACE(PodName(i));
    const json pod = json::parse(api.Get(FakeResource::kPods, kNamespace, PodName(i)));
    const std::string node = pod["spec"].value("nodeName", "");
    const json annotations = pod["metadata"].value("annotations", json::object());
    if (outcome[k] != Outcome::kBound) {
      // Never bound, so never annotated: nothing the device plugin would act
      // on.
      EXPECT_EQ(node, "");
      EXPECT_FALSE(annotations.contains(kPlugin.index_annotation)) << annotations.dump();
      continue;
    }
    ++bound_in_api;
    EXPECT_EQ(node, target[k]);
    ASSERT_TRUE(annotations.contains(kPlugin.index_annotation)) << annotations.dump();
    const int device = std::stoi(annotations[kPlugin.index_annotation].get<std::string>());
    ASSERT_GE(device, 0);
    ASSERT_LT(device, kGpusPerNode);
    EXPECT_EQ(annotations.value(kPlugin.pod_memory_annotation, ""), std::to_string(memory[k]));
    EXPECT_EQ(annotations.value(kPlugin.device_memory_annotation, ""),
              std::to_string(kDeviceMemory));
    EXPECT_EQ(annotations.value(kPlugin.assigned_annotation, ""), "false");
    const std::string assume_time = annotations.value(kPlugin.assume_time_annotation, "");
    EXPECT_FALSE(assume_time.empty());
    EXPECT_TRUE(std::all_of(assume_time.begin(), assume_time.end(),
                            [](char c) { return c >= '0' && c <= '9'; }))
        << assume_time;
    if (!node.empty()) {
      api_sums[node][static_cast<size_t>(device)] += memory[k];
    }
  }
  EXPECT_EQ(bound_in_api, counts[Outcome::kBound]);
  int64_t allocated = 0;
  for (const auto& [node, row] : api_sums) {
    for (int d = 0; d < kGpusPerNode; ++d) {
      EXPECT_LE(row[static_cast<size_t>(d)], kDeviceMemory)
          << "over-allocated: " << node << " device " << d;
      allocated += row[static_cast<size_t>(d)];
    }
  }
  // schedext's view is the API's, and so is a fresh one built after a restart.
  EXPECT_EQ(CacheSums(extender.cache(), nodes), api_sums);
  {
    policy::PolicyHost restarted_host;
    const auto restarted_profile = BuildProfile(restarted_host);  // registers the accounting
    WatchedCache restarted(api, restarted_host);
    ASSERT_TRUE(Eventually([&] { return restarted.cache().Synced(); }));
    EXPECT_EQ(CacheSums(restarted.cache(), nodes), api_sums);
    EXPECT_EQ(restarted.cache().Stats().assumed, 0u);
  }

  const double total_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf(
      "gpushare e2e: %d binds in %.2f s (%d bound, %d misfit, %d injected 500, %d injected "
      "409); %lld of %lld GiB allocated; whole test %.2f s\n",
      kPods, bind_seconds, counts[Outcome::kBound], counts[Outcome::kMisfit],
      counts[Outcome::kInjected500], counts[Outcome::kInjected409],
      static_cast<long long>(allocated),
      static_cast<long long>(nodes.size() * kGpusPerNode * kDeviceMemory), total_seconds);
}

TEST(GpuShareEndToEndTest, UnhealthyDevicesTakeNoNewPods) {
  FakeApiServer api;
  ASSERT_TRUE(api.Start()) << api.error();
  for (const char* node : {"gpu-node-0", "gpu-node-1"}) {
    ASSERT_FALSE(api.AddNode(GpuNode(node)).empty());
  }
  constexpr int kPods = 16;
  std::vector<std::string> uids;
  for (int i = 0; i < kPods; ++i) {
    const json pod = GpuPod(PodName(i), 4);
    uids.push_back(pod["metadata"]["uid"]);
    ASSERT_FALSE(api.AddPod(pod.dump()).empty());
  }
  GpuExtender extender(api);
  ASSERT_TRUE(Eventually([&] { return extender.cache().Synced(); }));

  // The device plugin marks device 0 of gpu-node-0 unhealthy.
  ASSERT_FALSE(api.Apply(FakeResource::kConfigMaps,
                         testing::FixtureConfigMap(kPlugin.unhealthy_namespace,
                                                   kPlugin.unhealthy_prefix + "gpu-node-0",
                                                   {{kPlugin.unhealthy_key, "0"}}))
                   .empty());
  ASSERT_TRUE(Eventually([&] {
    const auto snapshot = extender.cache().snapshot();
    const model::NodeUsage* usage = snapshot->FindUsage("gpu-node-0");
    return usage != nullptr && GpuOf(*usage).Unhealthy(0);
  }));

  // 4 GiB each: devices 1–3 hold 12 of them; the 13th does not fit although
  // device 0 is empty.
  httplib::Client client("127.0.0.1", extender.port());
  client.set_read_timeout(10, 0);
  int bound = 0;
  for (int i = 0; i < 13; ++i) {
    const std::string error =
        extender.Bind(client, PodName(i), uids[static_cast<size_t>(i)], "gpu-node-0");
    if (i < 12) {
      EXPECT_EQ(error, "") << PodName(i);
      bound += error.empty() ? 1 : 0;
    } else {
      EXPECT_EQ(error,
                "bind gpu/gpu-0012 to gpu-node-0: the node no longer fits the pod "
                "(Insufficient aliyun.com/gpu-mem on any one GPU)");
    }
  }
  EXPECT_EQ(bound, 12);
  for (int i = 0; i < 12; ++i) {
    const json pod = json::parse(api.Get(FakeResource::kPods, kNamespace, PodName(i)));
    EXPECT_NE(pod["metadata"]["annotations"][kPlugin.index_annotation], "0") << PodName(i);
  }

  // The filter says so too; gpu-node-1 still passes.
  const json filter_pod = GpuPod("probe", 4);
  const json args = {{"Pod", filter_pod},
                     {"Nodes", nullptr},
                     {"NodeNames", {"gpu-node-0", "gpu-node-1"}}};
  auto res = client.Post("/gpushare/filter", args.dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  const json reply = json::parse(res->body);
  EXPECT_EQ(reply["NodeNames"], (json{"gpu-node-1"})) << res->body;
  ASSERT_TRUE(reply["FailedNodes"].contains("gpu-node-0")) << res->body;
  EXPECT_EQ(reply["FailedNodes"]["gpu-node-0"], "Insufficient aliyun.com/gpu-mem on any one GPU")
      << res->body;

  // And /gpushare/inspect shows it.
  res = client.Get("/gpushare/inspect/gpu-node-0");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  const json inspect = json::parse(res->body);
  ASSERT_EQ(inspect["devices"].size(), 4u);
  EXPECT_EQ(inspect["devices"][0]["healthy"], false);
  EXPECT_EQ(inspect["devices"][0]["usedMemory"], 0);
  EXPECT_EQ(inspect["usedMemory"], 48);

  // Repaired: the ConfigMap goes and device 0 takes pods again.
  ASSERT_FALSE(api.Delete(FakeResource::kConfigMaps, kPlugin.unhealthy_namespace,
                          kPlugin.unhealthy_prefix + "gpu-node-0")
                   .empty());
  ASSERT_TRUE(Eventually([&] {
    const auto snapshot = extender.cache().snapshot();
    const model::NodeUsage* usage = snapshot->FindUsage("gpu-node-0");
    return usage != nullptr && !GpuOf(*usage).Unhealthy(0);
  }));
  EXPECT_EQ(extender.Bind(client, PodName(12), uids[12], "gpu-node-0"), "");
  const json pod = json::parse(api.Get(FakeResource::kPods, kNamespace, PodName(12)));
  EXPECT_EQ(pod["metadata"]["annotations"][kPlugin.index_annotation], "0");
}

}  // namespace
}  // namespace schedext
