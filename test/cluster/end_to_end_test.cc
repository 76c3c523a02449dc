// schedext end to end against the fake API server: a real HttpKubeClient over
// TLS, both informers, the cluster cache, the binder, the service and the HTTP
// server, in one process, on loopback.
#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
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
#include "schedext/cluster/kube_binder.h"
#include "schedext/config/config.h"
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

std::string Fixture(std::string_view mode, std::string_view name) {
  std::ifstream in(std::string(SCHEDEXT_TESTDATA_DIR) + "/kube-scheduler-1.26/" +
                       std::string(mode) + "/" + std::string(name) + ".json",
                   std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

using testing::Eventually;

constexpr std::string_view kConfig = R"(
profiles:
  - name: default
    policies:
      - name: NodeHealth
      - name: TaintToleration
      - name: NodeResourcesFit
      - name: LeastAllocated
)";

// The whole of schedext wired as src/main.cc wires it, against `api`.
class Extender {
 public:
  explicit Extender(FakeApiServer& api) {
    cluster::ClientConfig client_config;
    client_config.server = api.url();
    client_config.ca_pem = api.ca_pem();
    client_config.token = api.token();
    auto client = cluster::NewHttpKubeClient(client_config);
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(client).value();
    cache_ = std::make_unique<cluster::ClusterCache>();
    cluster::InformerOptions nodes;
    nodes.kind = cluster::ResourceKind::kNodes;
    cluster::InformerOptions pods;
    pods.kind = cluster::ResourceKind::kPods;
    node_informer_ = std::make_unique<cluster::Informer>(*client_, *cache_, nodes);
    pod_informer_ = std::make_unique<cluster::Informer>(*client_, *cache_, pods);
    binder_ = std::make_unique<cluster::KubeBinder>(*client_);

    auto config = config::LoadConfigText(kConfig, "test");
    EXPECT_TRUE(config.ok()) << config.status().ToString();
    policy::Registry registry;
    EXPECT_TRUE(policy::RegisterBuiltinPolicies(registry).ok());
    auto profile = pipeline::Profile::Build(config->profiles[0], registry, "profiles[0]");
    EXPECT_TRUE(profile.ok()) << profile.status().ToString();
    metrics_ = std::make_unique<server::Metrics>(std::vector<std::string>{"default"});
    service_ = std::make_unique<server::ExtenderService>(
        std::vector<std::shared_ptr<const pipeline::Profile>>{*profile}, 0, cache_.get(),
        binder_.get(), metrics_.get());
    server::HttpServerOptions options;
    options.server.host = "127.0.0.1";
    options.server.port = 0;
    options.server.threads = 8;
    cluster::ClusterCache* cache = cache_.get();
    options.ready = [cache] { return cache->Synced(); };
    http_ = std::make_unique<server::HttpServer>(*service_, metrics_.get(), options);
    EXPECT_TRUE(http_->Bind().ok());
    serve_ = std::thread([this] { EXPECT_TRUE(http_->Serve().ok()); });
  }
  ~Extender() {
    http_->Stop();
    serve_.join();
    node_informer_->Stop();
    pod_informer_->Stop();
  }

  void StartInformers() {
    node_informer_->Start();
    pod_informer_->Start();
  }
  cluster::ClusterCache& cache() { return *cache_; }

  httplib::Result Post(const std::string& path, const std::string& body) {
    httplib::Client client("127.0.0.1", http_->port());
    client.set_read_timeout(10, 0);
    return client.Post(path, body, "application/json");
  }
  int Readyz() {
    httplib::Client client("127.0.0.1", http_->port());
    auto res = client.Get("/readyz");
    return res ? res->status : -1;
  }

 private:
  std::unique_ptr<cluster::KubeClient> client_;
  std::unique_ptr<cluster::ClusterCache> cache_;
  std::unique_ptr<cluster::Informer> node_informer_;
  std::unique_ptr<cluster::Informer> pod_informer_;
  std::unique_ptr<cluster::KubeBinder> binder_;
  std::unique_ptr<server::Metrics> metrics_;
  std::unique_ptr<server::ExtenderService> service_;
  std::unique_ptr<server::HttpServer> http_;
  std::thread serve_;
};

// The five nodes of the recorded cluster, as the API server serves them.
void AddRecordedNodes(FakeApiServer& api) {
  const json body = json::parse(Fixture("nodecache-false", "filter-3"));
  for (const json& node : body["Nodes"]["items"]) {
    EXPECT_FALSE(api.AddNode(node.dump()).empty());
  }
}

TEST(EndToEndTest, NodeCacheModeFilterAndPrioritizeFollowTheWatch) {
  FakeApiServer api;
  ASSERT_TRUE(api.Start()) << api.error();
  AddRecordedNodes(api);
  Extender extender(api);
  EXPECT_EQ(extender.Readyz(), 503);  // informers not started: not synced
  extender.StartInformers();
  ASSERT_TRUE(Eventually([&] { return extender.cache().Synced(); }));
  EXPECT_EQ(extender.Readyz(), 200);

  // node-agent-1 tolerates everything: all five recorded nodes pass.
  auto res = extender.Post("/filter", Fixture("nodecache-true", "filter-3"));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  json reply = json::parse(res->body);
  EXPECT_EQ(reply["NodeNames"],
            (json{"lab-cp-1", "lab-cpu-2", "lab-cpu-1", "lab-gpu-2", "lab-gpu-1"}));
  EXPECT_EQ(reply["Error"], "");

  // A node added and one deleted in the API reach the answer through the watch.
  ASSERT_TRUE(api.WaitForWatches(FakeResource::kNodes, 1, milliseconds(5000)));
  api.AddNode(testing::FixtureNode("lab-new-1"));
  api.DeleteNode("lab-cpu-1");
  ASSERT_TRUE(Eventually([&] {
    auto snapshot = extender.cache().snapshot();
    return snapshot->FindNode("lab-new-1") != nullptr &&
           snapshot->FindNode("lab-cpu-1") == nullptr;
  }));
  json body = json::parse(Fixture("nodecache-true", "filter-3"));
  body["NodeNames"].push_back("lab-new-1");
  res = extender.Post("/filter", body.dump());
  ASSERT_TRUE(res);
  reply = json::parse(res->body);
  EXPECT_EQ(reply["NodeNames"],
            (json{"lab-cp-1", "lab-cpu-2", "lab-gpu-2", "lab-gpu-1", "lab-new-1"}));
  EXPECT_EQ(reply["FailedAndUnresolvableNodes"],
            (json{{"lab-cpu-1", "node(s) unknown to schedext"}}));

  res = extender.Post("/prioritize", Fixture("nodecache-true", "prioritize-4"));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  // lab-cpu-1, gone from the cache, scores 0 and is left out.
  EXPECT_EQ(json::parse(res->body),
            json::parse(R"([{"Host":"lab-cpu-2","Score":10},{"Host":"lab-gpu-2","Score":10},)"
                        R"({"Host":"lab-gpu-1","Score":10}])"));
}

TEST(EndToEndTest, BindCreatesTheBindingAndCountsThePodOnce) {
  FakeApiServer api;
  ASSERT_TRUE(api.Start()) << api.error();
  AddRecordedNodes(api);
  const json pod = json::parse(testing::FixturePod("default", "web-1"));
  api.AddPod(pod.dump());
  Extender extender(api);
  extender.StartInformers();
  ASSERT_TRUE(Eventually([&] { return extender.cache().Synced(); }));

  const std::string uid = pod["metadata"]["uid"];
  const json args = {{"PodName", "web-1"}, {"PodNamespace", "default"}, {"PodUID", uid},
                     {"Node", "lab-cpu-2"}};
  auto res = extender.Post("/bind", args.dump());
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "{\"Error\":\"\"}\n");
  ASSERT_EQ(api.bindings().size(), 1u);
  const json binding = json::parse(api.bindings()[0].body);
  EXPECT_EQ(binding["metadata"]["uid"], uid);
  EXPECT_EQ(binding["target"]["name"], "lab-cpu-2");

  // Counted at once (assumed or confirmed), and exactly once after the watch
  // has shown the pod bound: 500m of CPU on lab-cpu-2.
  ASSERT_TRUE(Eventually([&] {
    auto snapshot = extender.cache().snapshot();
    const model::NodeUsage* usage = snapshot->FindUsage("lab-cpu-2");
    return usage != nullptr && !snapshot->IsAssumed(uid) && usage->pods == 1;
  }));
  EXPECT_EQ(extender.cache().snapshot()->FindUsage("lab-cpu-2")->requested.milli_cpu, 500);

  // A retried bind of a pod that is already bound there is a success; to
  // another node it is an error that says why.
  res = extender.Post("/bind", args.dump());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body, "{\"Error\":\"\"}\n");
  json elsewhere = args;
  elsewhere["Node"] = "lab-cpu-1";
  res = extender.Post("/bind", elsewhere.dump());
  ASSERT_TRUE(res);
  const std::string error = json::parse(res->body)["Error"];
  EXPECT_NE(error.find("bind default/web-1 to lab-cpu-1: "), std::string::npos) << error;
  EXPECT_EQ(extender.cache().snapshot()->FindUsage("lab-cpu-2")->pods, 1);

  // The API server refusing the bind leaves nothing counted.
  const json other = json::parse(testing::FixturePod("default", "web-2"));
  api.AddPod(other.dump());
  ASSERT_TRUE(Eventually([&] {
    return extender.cache().snapshot()->FindPod(other["metadata"]["uid"].get<std::string>()) !=
           nullptr;
  }));
  api.SetBindResponse(500, FakeApiServer::StatusJson(500, "InternalError", "etcd is down"),
                      milliseconds(0));
  json failing = {{"PodName", "web-2"}, {"PodNamespace", "default"},
                  {"PodUID", other["metadata"]["uid"]}, {"Node", "lab-cpu-1"}};
  res = extender.Post("/bind", failing.dump());
  ASSERT_TRUE(res);
  const std::string failed = json::parse(res->body)["Error"];
  EXPECT_NE(failed.find("etcd is down"), std::string::npos) << failed;
  // Pointers into a snapshot are valid while it is held.
  const auto snapshot = extender.cache().snapshot();
  const model::NodeUsage* usage = snapshot->FindUsage("lab-cpu-1");
  EXPECT_TRUE(usage == nullptr || usage->pods == 0);
}

TEST(EndToEndTest, ConcurrentBindsNeverDoubleBookANode) {
  FakeApiServer api;
  ASSERT_TRUE(api.Start()) << api.error();
  AddRecordedNodes(api);
  // 40 pending pods of 500m CPU each; lab-cpu-2 has 7900m allocatable and no
  // pods: 15 fit (15 × 500m = 7500m), the 16th would need 8000m.
  constexpr int kPods = 40;
  std::vector<std::string> uids;
  for (int i = 0; i < kPods; ++i) {
    const json pod = json::parse(testing::FixturePod("batch", "job-" + std::to_string(i)));
    uids.push_back(pod["metadata"]["uid"]);
    api.AddPod(pod.dump());
  }
  Extender extender(api);
  extender.StartInformers();
  ASSERT_TRUE(Eventually([&] { return extender.cache().Synced(); }));

  std::atomic<int> next{0};
  std::atomic<int> bound{0};
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = next++; i < kPods; i = next++) {
        const json args = {{"PodName", "job-" + std::to_string(i)},
                           {"PodNamespace", "batch"},
                           {"PodUID", uids[static_cast<size_t>(i)]},
                           {"Node", "lab-cpu-2"}};
        auto res = extender.Post("/bind", args.dump());
        if (!res || res->status != 200) {
          ADD_FAILURE() << "bind " << i << " failed at the HTTP level";
          continue;
        }
        const std::string error = json::parse(res->body)["Error"];
        if (error.empty()) {
          ++bound;
        } else {
          EXPECT_NE(error.find("the node no longer fits the pod (Insufficient cpu)"),
                    std::string::npos)
              << error;
          ++refused;
        }
      }
    });
  }
  for (std::thread& t : threads) {
    t.join();
  }
  EXPECT_EQ(bound.load(), 15);
  EXPECT_EQ(refused.load(), kPods - 15);
  EXPECT_EQ(api.bindings().size(), 15u);
  // Once the watch has confirmed every bind: counted once each, nothing assumed.
  ASSERT_TRUE(Eventually([&] {
    const auto snapshot = extender.cache().snapshot();
    const model::NodeUsage* usage = snapshot->FindUsage("lab-cpu-2");
    return usage != nullptr && usage->pods == 15 && extender.cache().Stats().assumed == 0;
  }));
  EXPECT_EQ(extender.cache().snapshot()->FindUsage("lab-cpu-2")->requested.milli_cpu, 7500);

  // The filter sees the same: web-1 (500m) no longer fits on lab-cpu-2.
  auto res = extender.Post("/filter", Fixture("nodecache-true", "filter-1"));
  ASSERT_TRUE(res);
  const json reply = json::parse(res->body);
  EXPECT_EQ(reply["NodeNames"], (json{"lab-cpu-1"}));
  EXPECT_EQ(reply["FailedNodes"], (json{{"lab-cpu-2", "Insufficient cpu"}}));
}

}  // namespace
}  // namespace schedext
