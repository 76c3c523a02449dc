// schedext's ServiceAccount with exactly the RBAC of deploy/ (applied by the
// fixture from the manifests) against the real authorizer: everything schedext
// does is allowed, and the grants stop there.
#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "control_plane/api_objects.h"
#include "control_plane/control_plane_suite.h"
#include "schedext/cluster/cache.h"
#include "schedext/cluster/event_recorder.h"
#include "schedext/cluster/informer.h"
#include "schedext/cluster/resource_path.h"
#include "schedext/cluster/kube_binder.h"
#include "policy/builtin/gpushare/accounting.h"
#include "policy/builtin/gpushare/convention.h"

namespace schedext::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

// The API server's wording of an RBAC refusal.
std::string Forbidden(const std::string& user, const std::string& verb, const std::string& resource,
                      const std::string& where) {
  return "User \"" + user + "\" cannot " + verb + " resource \"" + resource +
         "\" in API group \"\" " + where;
}

class RbacBase : public ControlPlaneSuite {
 protected:
  static std::string CreatePod(const std::string& ns, const std::string& name) {
    auto created = cp().Create("/api/v1/namespaces/" + ns + "/pods", PodJson(ns, name));
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return created.ok() ? JsonString(*created, {"metadata", "uid"}) : "";
  }
  static void CreateNodeAndUnhealthyConfigMap(const std::string& node) {
    ASSERT_TRUE(cp().Create("/api/v1/nodes", NodeJson(node)).ok());
    auto cm = cp().Create("/api/v1/namespaces/kube-system/configmaps",
                          json{{"apiVersion", "v1"},
                               {"kind", "ConfigMap"},
                               {"metadata", {{"name", "unhealthy-gpu-" + node}}},
                               {"data", {{"gpus", "1"}}}}
                              .dump());
    ASSERT_TRUE(cm.ok()) << cm.status().ToString();
  }
};

class RbacTest : public RbacBase {
 protected:
  static void SetUpTestSuite() {
    ControlPlaneOptions options;  // deploy/base + deploy/gpushare
    options.namespaces = {"default", "rbac"};
    StartSharedControlPlane(std::move(options));
  }
};

TEST_F(RbacTest, SchedextsServiceAccountMayDoEverythingSchedextDoes) {
  CreateNodeAndUnhealthyConfigMap("rbac-1");
  const std::string uid = CreatePod("rbac", "gpu-pod");
  ASSERT_FALSE(uid.empty());

  auto client = NewClient(cp().schedext_kubeconfig());
  ASSERT_NE(client, nullptr);
  RecordingClient recording(*client);
  // The informers of a GPU-sharing schedext: nodes, pods, kube-system ConfigMaps.
  cluster::CacheOptions cache_options;
  auto gpu = std::make_shared<policy::gpushare::GpuAccounting>(
      policy::gpushare::GpuShareConvention{});
  cache_options.accountings.push_back(gpu);
  cache_options.watches.push_back(gpu);
  cluster::ClusterCache cache(cache_options);
  cluster::InformerOptions nodes;
  nodes.kind = cluster::ResourceKind::kNodes;
  cluster::InformerOptions pods;
  pods.kind = cluster::ResourceKind::kPods;
  // GpuShare's watch: the ConfigMaps of kube-system.
  policy::WatchSpec gpu_watch;
  gpu_watch.version = "v1";
  gpu_watch.resource = "configmaps";
  gpu_watch.namespace_name = "kube-system";
  const cluster::InformerOptions config_maps = cluster::WatchInformerOptions(gpu_watch, {});
  ASSERT_EQ(config_maps.path, "/api/v1/namespaces/kube-system/configmaps");
  cluster::Informer node_informer(recording, cache, nodes);
  cluster::Informer pod_informer(recording, cache, pods);
  cluster::Informer cm_informer(recording, cache.WatchFeed(0), config_maps);
  node_informer.Start();
  pod_informer.Start();
  cm_informer.Start();
  EXPECT_TRUE(node_informer.WaitForSync(seconds(30))) << node_informer.Stats().last_error;
  EXPECT_TRUE(pod_informer.WaitForSync(seconds(30))) << pod_informer.Stats().last_error;
  EXPECT_TRUE(cm_informer.WaitForSync(seconds(30))) << cm_informer.Stats().last_error;
  EXPECT_TRUE(WaitFor([&] { return cache.Synced(); }));
  const model::NodeUsage* usage = cache.snapshot()->FindUsage("rbac-1");
  ASSERT_NE(usage, nullptr);
  const auto* state = static_cast<const policy::gpushare::GpuNodeState*>(usage->states.Get(0));
  ASSERT_NE(state, nullptr) << "the kube-system ConfigMap did not arrive";
  EXPECT_EQ(state->gpu.unhealthy, uint64_t{1} << 1) << "the kube-system ConfigMap did not arrive";

  // bind of the GPU-share profile: the Binding with the device annotations,
  // and the read-back of a 409.
  cluster::KubeBinder binder(recording);
  const std::vector<std::pair<std::string, std::string>> set = {{"ALIYUN_COM_GPU_MEM_IDX", "0"}};
  Status bound = binder.Bind({"rbac", "gpu-pod", uid, "rbac-1", set});
  ASSERT_TRUE(bound.ok()) << bound.ToString();
  Status rebound = binder.Bind({"rbac", "gpu-pod", uid, "rbac-1"});  // 409, then GET
  ASSERT_TRUE(rebound.ok()) << rebound.ToString();

  // The pending-pod events: a new Event on the pod, then its series update.
  cluster::EventRecorderOptions event_options;
  event_options.reporting_instance = "rbac-test";
  event_options.update_interval = seconds(1);
  cluster::EventRecorder events(recording, event_options);
  const auto t0 = std::chrono::system_clock::now();
  Status event_error;
  const cluster::EventPod event_pod{"rbac", "gpu-pod", uid};
  EXPECT_EQ(events.Record(event_pod, "0/1 nodes fit profile gpushare.", t0, &event_error),
            cluster::EventWrite::kCreated)
      << event_error.ToString();
  EXPECT_EQ(events.Record(event_pod, "0/1 nodes fit profile gpushare.", t0 + seconds(2),
                          &event_error),
            cluster::EventWrite::kUpdated)
      << event_error.ToString();

  // Not one call was refused.
  size_t calls = 0;
  for (const RecordedCall& c : recording.calls()) {
    ++calls;
    EXPECT_NE(c.status, 401) << c.method << " " << c.path << ": " << c.body;
    EXPECT_NE(c.status, 403) << c.method << " " << c.path << ": " << c.body;
    EXPECT_EQ(c.error.find("403"), std::string::npos)
        << c.method << " " << c.path << ": " << c.error;
  }
  EXPECT_GE(calls, 8u);
  node_informer.Stop();
  pod_informer.Stop();
  cm_informer.Stop();
}

TEST_F(RbacTest, SchedextsServiceAccountMayDoNothingMore) {
  auto client = NewClient(cp().schedext_kubeconfig());
  ASSERT_NE(client, nullptr);
  const std::string user = cp().schedext_user();
  struct Case {
    std::string method, path, body, want;
  };
  const std::vector<Case> cases = {
      // ConfigMaps only in kube-system (gpushare.unhealthyNamespace).
      {"GET", "/api/v1/configmaps", "",
       Forbidden(user, "list", "configmaps", "at the cluster scope")},
      {"GET", "/api/v1/namespaces/default/configmaps", "",
       Forbidden(user, "list", "configmaps", "in the namespace \"default\"")},
      {"GET", "/api/v1/namespaces/kube-system/secrets", "",
       Forbidden(user, "list", "secrets", "in the namespace \"kube-system\"")},
      {"POST", "/api/v1/namespaces/rbac/pods", PodJson("rbac", "not-mine"),
       Forbidden(user, "create", "pods", "in the namespace \"rbac\"")},
      {"PATCH", "/api/v1/nodes/rbac-1", R"({"metadata":{"labels":{"x":"y"}}})",
       Forbidden(user, "patch", "nodes", "at the cluster scope")},
      // GPU binds carry their annotations in the Binding: no pod writes.
      {"PATCH", "/api/v1/namespaces/rbac/pods/gpu-pod", R"({"metadata":{"labels":{"x":"y"}}})",
       Forbidden(user, "patch", "pods", "in the namespace \"rbac\"")},
  };
  for (const Case& c : cases) {
    StatusOr<cluster::HttpResult> r =
        c.method == "GET"    ? client->Get(c.path)
        : c.method == "POST" ? client->Post(c.path, c.body)
                             : client->Patch(c.path, c.body, "application/merge-patch+json");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 403) << c.method << " " << c.path << ": " << r->body;
    EXPECT_EQ(JsonString(r->body, {"reason"}), "Forbidden") << r->body;
    EXPECT_NE(JsonString(r->body, {"message"}).find(c.want), std::string::npos)
        << c.method << " " << c.path << ": " << r->body;
  }
}

// ---------------------------------------------------------------------------

// deploy/base alone (without the gpushare overlay's RBAC).
class RbacBaseOnlyTest : public RbacBase {
 protected:
  static void SetUpTestSuite() {
    ControlPlaneOptions options;
    options.rbac_manifests = {"deploy/base/namespace.yaml", "deploy/base/serviceaccount.yaml",
                              "deploy/base/rbac.yaml"};
    options.namespaces = {"default", "rbac"};
    StartSharedControlPlane(std::move(options));
  }
};

TEST_F(RbacBaseOnlyTest, BindsWithAnnotationsButNeedsTheGpuShareOverlayToReadConfigMaps) {
  ASSERT_TRUE(cp().Create("/api/v1/nodes", NodeJson("base-1")).ok());
  const std::string uid = CreatePod("rbac", "plain");
  ASSERT_FALSE(uid.empty());
  auto client = NewClient(cp().schedext_kubeconfig());
  ASSERT_NE(client, nullptr);
  // deploy/base's pods/binding create is all a GPU bind needs.
  cluster::KubeBinder binder(*client);
  const std::vector<std::pair<std::string, std::string>> set = {{"ALIYUN_COM_GPU_MEM_IDX", "0"}};
  Status bound = binder.Bind({"rbac", "plain", uid, "base-1", set});
  EXPECT_TRUE(bound.ok()) << bound.ToString();

  auto list = client->Get("/api/v1/namespaces/kube-system/configmaps?limit=500");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(list->status, 403) << list->body;
}

}  // namespace
}  // namespace schedext::testing
