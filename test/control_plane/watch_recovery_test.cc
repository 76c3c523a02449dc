// How schedext's informers recover when the real kube-apiserver goes away or
// forgets their resourceVersion. Each suite has its own control plane: these
// tests kill the API server and compact etcd.
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
#include "schedext/cluster/informer.h"

namespace schedext::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

std::map<std::string, std::string> CachedPodNames(const cluster::ClusterCache& cache,
                                                  std::string_view ns) {
  std::map<std::string, std::string> pods;  // name -> node
  cache.snapshot()->ForEachPod([&](const model::PodInfo& pod, bool) {
    if (pod.namespace_name == ns) pods[std::string(pod.name)] = std::string(pod.node_name);
  });
  return pods;
}

// Every line a watch of `path` delivers until it ends (or `max_events`).
std::vector<json> WatchEvents(cluster::KubeClient& client, const std::string& path, Status& status,
                              size_t max_events = 100) {
  std::vector<json> events;
  status = client.Watch(path, [&](std::string_view line) {
    events.push_back(json::parse(line, nullptr, false));
    return events.size() < max_events;
  });
  return events;
}

class WatchRecoveryBase : public ControlPlaneSuite {
 protected:
  static std::string CreatePod(const std::string& ns, const std::string& name,
                               const std::string& node = "") {
    auto created = cp().Create("/api/v1/namespaces/" + ns + "/pods", PodJson(ns, name, node));
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return created.ok() ? JsonString(*created, {"metadata", "uid"}) : "";
  }
  static std::string CreateConfigMap(const std::string& ns, const std::string& name) {
    auto created = cp().Create(
        "/api/v1/namespaces/" + ns + "/configmaps",
        json{{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name}}}}.dump());
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return created.ok() ? JsonString(*created, {"metadata", "resourceVersion"}) : "";
  }
  static std::string ListResourceVersion(const std::string& path) {
    auto r = cp().AdminRequest("GET", path);
    EXPECT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().ToString());
    return r.ok() ? JsonString(r->body, {"metadata", "resourceVersion"}) : "";
  }
  static cluster::InformerOptions FastRetries(cluster::ResourceKind kind) {
    cluster::InformerOptions o;
    o.kind = kind;
    o.backoff_initial = milliseconds(100);
    o.backoff_max = milliseconds(1000);
    return o;
  }
};

// ---------------------------------------------------------------------------

class ApiServerRestartTest : public WatchRecoveryBase {
 protected:
  static void SetUpTestSuite() {
    ControlPlaneOptions options;
    options.namespaces = {"default", "restart", "gone"};
    StartSharedControlPlane(std::move(options));
  }
};

TEST_F(ApiServerRestartTest, InformersRecoverAfterTheApiServerIsKilledAndRestartedOnTheSameEtcd) {
  ASSERT_TRUE(cp().Create("/api/v1/nodes", NodeJson("restart-1")).ok());
  ASSERT_FALSE(CreatePod("restart", "keep", "restart-1").empty());
  ASSERT_FALSE(CreatePod("restart", "doomed", "restart-1").empty());
  auto client = NewClient(cp().schedext_kubeconfig());
  ASSERT_NE(client, nullptr);
  RecordingClient recording(*client);
  cluster::ClusterCache cache;
  cluster::Informer nodes(recording, cache, FastRetries(cluster::ResourceKind::kNodes));
  cluster::Informer pods(recording, cache, FastRetries(cluster::ResourceKind::kPods));
  nodes.Start();
  pods.Start();
  ASSERT_TRUE(pods.WaitForSync(seconds(30))) << pods.Stats().last_error;
  ASSERT_TRUE(nodes.WaitForSync(seconds(30))) << nodes.Stats().last_error;
  const std::map<std::string, std::string> before = {{"doomed", "restart-1"},
                                                     {"keep", "restart-1"}};
  ASSERT_EQ(CachedPodNames(cache, "restart"), before);
  const int64_t lists_before = pods.Stats().lists;

  cp().KillApiServer();
  // Both informers notice: the watch drops and the retries fail.
  ASSERT_TRUE(WaitFor([&] { return pods.Stats().failures >= 1; }, seconds(30)));
  ASSERT_TRUE(WaitFor([&] { return nodes.Stats().failures >= 1; }, seconds(30)));
  // While the API server is down, a pod disappears from etcd: only a relist
  // can tell the informer.
  auto deleted = cp().DeleteEtcdKey("/registry/pods/restart/doomed");
  ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
  ASSERT_TRUE(*deleted);
  Status restarted = cp().StartApiServer();
  ASSERT_TRUE(restarted.ok()) << restarted.ToString();
  ASSERT_FALSE(CreatePod("restart", "after", "restart-1").empty());

  const std::map<std::string, std::string> after = {{"after", "restart-1"}, {"keep", "restart-1"}};
  EXPECT_TRUE(WaitFor([&] { return CachedPodNames(cache, "restart") == after; }, seconds(60)))
      << "cache: " << json(CachedPodNames(cache, "restart")).dump()
      << ", informer: " << pods.Stats().last_error;
  EXPECT_NE(cache.snapshot()->FindNode("restart-1"), nullptr);
  // The restarted API server's watch cache starts at etcd's current revision:
  // the informer's older resourceVersion is answered 410, so it relisted.
  const cluster::InformerStats stats = pods.Stats();
  EXPECT_GT(stats.lists, lists_before);
  EXPECT_GE(stats.relists, 1);
  EXPECT_GE(stats.watches, 2);
  EXPECT_TRUE(pods.Synced());
  EXPECT_FALSE(pods.Relisting());
  nodes.Stop();
  pods.Stop();
}

TEST_F(ApiServerRestartTest, AWatchFromBeforeTheRestartIsAnsweredGone) {
  const std::string old_rv = ListResourceVersion("/api/v1/namespaces/gone/pods");
  ASSERT_FALSE(old_rv.empty());
  // etcd moves on (another resource), then the API server restarts.
  ASSERT_FALSE(CreateConfigMap("gone", "bump").empty());
  cp().KillApiServer();
  Status restarted = cp().StartApiServer();
  ASSERT_TRUE(restarted.ok()) << restarted.ToString();
  auto client = NewClient(cp().schedext_kubeconfig());
  ASSERT_NE(client, nullptr);
  Status status;
  std::vector<json> events =
      WatchEvents(*client,
                  "/api/v1/namespaces/gone/pods?watch=1&allowWatchBookmarks=true&"
                  "timeoutSeconds=5&resourceVersion=" +
                      old_rv,
                  status);
  // A 200 stream with one ERROR event (the watch cache's wording), then the end.
  EXPECT_TRUE(status.ok()) << status.ToString();
  ASSERT_EQ(events.size(), 1u) << json(events).dump();
  EXPECT_EQ(events[0].value("type", ""), "ERROR") << events[0].dump();
  const json& st = events[0]["object"];
  EXPECT_EQ(st.value("kind", ""), "Status") << st.dump();
  EXPECT_EQ(st.value("code", 0), 410) << st.dump();
  EXPECT_EQ(st.value("reason", ""), "Expired") << st.dump();
  EXPECT_TRUE(st.value("message", "").starts_with("too old resource version: " + old_rv + " ("))
      << st.dump();
}

// ---------------------------------------------------------------------------

// Without the watch cache, watches are served by etcd itself, so a compacted
// resourceVersion is gone for good.
class CompactionTest : public WatchRecoveryBase {
 protected:
  static void SetUpTestSuite() {
    ControlPlaneOptions options;
    options.namespaces = {"default", "compact", "compact-raw"};
    options.apiserver_flags = {"--watch-cache=false"};
    StartSharedControlPlane(std::move(options));
  }
};

TEST_F(CompactionTest, AnInformerRelistsAfterItsResourceVersionIsCompactedAway) {
  ASSERT_FALSE(CreatePod("compact", "a").empty());
  ASSERT_FALSE(CreatePod("compact", "b").empty());
  auto client = NewClient(cp().schedext_kubeconfig());
  ASSERT_NE(client, nullptr);
  RecordingClient recording(*client);
  cluster::ClusterCache cache;
  cluster::InformerOptions options = FastRetries(cluster::ResourceKind::kPods);
  options.path = "/api/v1/namespaces/compact/pods";
  // The watch ends every 1-2 s and resumes from the last resourceVersion.
  options.min_watch_timeout = seconds(1);
  cluster::Informer pods(recording, cache, options);
  pods.Start();
  ASSERT_TRUE(pods.WaitForSync(seconds(30))) << pods.Stats().last_error;
  const std::map<std::string, std::string> want = {{"a", ""}, {"b", ""}};
  ASSERT_EQ(CachedPodNames(cache, "compact"), want);
  ASSERT_EQ(pods.Stats().relists, 0);

  // etcd moves past the informer's resourceVersion (other objects change)
  // and compacts it away. Two writes: a watch from R starts at R + 1, which
  // a compaction at R + 1 still keeps.
  ASSERT_FALSE(CreateConfigMap("compact", "bump-1").empty());
  ASSERT_FALSE(CreateConfigMap("compact", "bump-2").empty());
  auto compacted = cp().CompactEtcd();
  ASSERT_TRUE(compacted.ok()) << compacted.status().ToString();
  EXPECT_TRUE(WaitFor([&] { return pods.Stats().relists >= 1; }, seconds(30)))
      << pods.Stats().last_error;
  // Still in step after the relist: new events arrive.
  ASSERT_FALSE(CreatePod("compact", "c").empty());
  const std::map<std::string, std::string> later = {{"a", ""}, {"b", ""}, {"c", ""}};
  EXPECT_TRUE(WaitFor([&] { return CachedPodNames(cache, "compact") == later; }));
  EXPECT_FALSE(pods.Relisting());
  pods.Stop();
}

TEST_F(CompactionTest, AWatchFromACompactedResourceVersionIsAnsweredGone) {
  const std::string old_rv = ListResourceVersion("/api/v1/namespaces/compact-raw/pods");
  ASSERT_FALSE(old_rv.empty());
  ASSERT_FALSE(CreateConfigMap("compact-raw", "bump-1").empty());
  ASSERT_FALSE(CreateConfigMap("compact-raw", "bump-2").empty());
  auto compacted = cp().CompactEtcd();
  ASSERT_TRUE(compacted.ok()) << compacted.status().ToString();
  auto client = NewClient(cp().schedext_kubeconfig());
  ASSERT_NE(client, nullptr);
  Status status;
  std::vector<json> events = WatchEvents(
      *client,
      "/api/v1/namespaces/compact-raw/pods?watch=1&timeoutSeconds=5&resourceVersion=" + old_rv,
      status);
  EXPECT_TRUE(status.ok()) << status.ToString();
  ASSERT_EQ(events.size(), 1u) << json(events).dump();
  EXPECT_EQ(events[0].value("type", ""), "ERROR") << events[0].dump();
  const json& st = events[0]["object"];
  EXPECT_EQ(st.value("code", 0), 410) << st.dump();
  EXPECT_EQ(st.value("reason", ""), "Expired") << st.dump();
  // etcd's wording, not the watch cache's.
  EXPECT_EQ(st.value("message", ""), "The resourceVersion for the provided watch is too old.")
      << st.dump();
}

}  // namespace
}  // namespace schedext::testing
