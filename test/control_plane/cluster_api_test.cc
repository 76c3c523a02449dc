// schedext's cluster classes (HttpKubeClient, Informer, ClusterCache,
// KubeBinder) against the real kube-apiserver, as schedext's
// own ServiceAccount: one control plane for the whole suite; every test works
// in namespaces and on nodes of its own.
#include <atomic>
#include <chrono>
#include <ctime>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "control_plane/api_objects.h"
#include "control_plane/control_plane_suite.h"
#include "schedext/cluster/cache.h"
#include "schedext/cluster/informer.h"
#include "schedext/cluster/kube_binder.h"

namespace schedext::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

class ClusterApiTest : public ControlPlaneSuite {
 protected:
  static void SetUpTestSuite() {
    ControlPlaneOptions options;
    options.namespaces = {"default", "sync", "bind", "annotate", "pages"};
    StartSharedControlPlane(std::move(options));
  }

  // Creates the pod and returns its uid (a test failure and "" otherwise).
  static std::string CreatePod(const std::string& ns, const std::string& name,
                               const std::string& node = "") {
    auto created = cp().Create("/api/v1/namespaces/" + ns + "/pods", PodJson(ns, name, node));
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return created.ok() ? JsonString(*created, {"metadata", "uid"}) : "";
  }
  static json GetPod(const std::string& ns, const std::string& name) {
    auto r = cp().AdminRequest("GET", "/api/v1/namespaces/" + ns + "/pods/" + name);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : "");
    if (!r.ok() || r->status != 200) return json();
    return json::parse(r->body);
  }
};

// The annotation tests are a suite of their own, on their own control plane,
// so that ctest runs them beside the bind and informer tests.
class ClusterAnnotationApiTest : public ClusterApiTest {};

// The pods of `ns` in the cache's current snapshot: uid -> node name.
std::map<std::string, std::string> CachedPods(const cluster::ClusterCache& cache,
                                              std::string_view ns) {
  std::map<std::string, std::string> pods;
  cache.snapshot()->ForEachPod([&](const model::PodInfo& pod, bool) {
    if (pod.namespace_name == ns) pods[std::string(pod.uid)] = std::string(pod.node_name);
  });
  return pods;
}

TEST_F(ClusterApiTest, InformersSyncNodesAndPodsWithPagesSmallerThanTheSet) {
  constexpr int kNodes = 7;
  constexpr int kPods = 23;
  std::map<std::string, std::string> want;  // uid -> node
  for (int i = 0; i < kNodes; ++i) {
    ASSERT_TRUE(cp().Create("/api/v1/nodes", NodeJson("sync-" + std::to_string(i))).ok());
  }
  for (int i = 0; i < kPods; ++i) {
    const std::string node = "sync-" + std::to_string(i % kNodes);
    const std::string uid = CreatePod("sync", "p" + std::to_string(i), node);
    ASSERT_FALSE(uid.empty());
    want[uid] = node;
  }

  auto client = NewClient(cp().schedext_kubeconfig());
  ASSERT_NE(client, nullptr);
  RecordingClient recording(*client);
  cluster::ClusterCache cache;
  cluster::InformerOptions nodes;
  nodes.kind = cluster::ResourceKind::kNodes;
  nodes.page_size = 3;
  cluster::InformerOptions pods;
  pods.kind = cluster::ResourceKind::kPods;
  pods.page_size = 5;
  cluster::Informer node_informer(recording, cache, nodes);
  cluster::Informer pod_informer(recording, cache, pods);
  node_informer.Start();
  pod_informer.Start();
  ASSERT_TRUE(node_informer.WaitForSync(seconds(30))) << node_informer.Stats().last_error;
  ASSERT_TRUE(pod_informer.WaitForSync(seconds(30))) << pod_informer.Stats().last_error;
  ASSERT_TRUE(WaitFor([&] { return cache.Synced(); }));

  auto snapshot = cache.snapshot();
  for (int i = 0; i < kNodes; ++i) {
    EXPECT_NE(snapshot->FindNode("sync-" + std::to_string(i)), nullptr) << i;
  }
  EXPECT_EQ(CachedPods(cache, "sync"), want);
  // The LISTs really were paginated: pages of 3 and 5, followed by continue tokens.
  int node_pages = 0;
  int pod_pages = 0;
  for (const RecordedCall& c : recording.calls()) {
    if (c.method != "GET") continue;
    EXPECT_EQ(c.status, 200) << c.path << ": " << c.body.substr(0, 300);
    if (c.path.starts_with("/api/v1/nodes?") && c.path.find("limit=3") != std::string::npos) {
      ++node_pages;
    }
    if (c.path.starts_with("/api/v1/pods?") && c.path.find("limit=5") != std::string::npos) {
      ++pod_pages;
    }
  }
  EXPECT_GE(node_pages, (kNodes + 2) / 3);
  EXPECT_GE(pod_pages, (kPods + 4) / 5);

  // Then the watch: an added, a re-bound... a deleted pod and a deleted node.
  // The pod to delete is one of the listed ones, chosen before "late" joins `want`: the late
  // pod's uid may sort first.
  const std::string gone_name = "p0";
  const std::string gone = GetPod("sync", gone_name)["metadata"].value("uid", "");
  ASSERT_EQ(want.count(gone), 1u) << gone;
  const std::string added = CreatePod("sync", "late", "sync-0");
  ASSERT_FALSE(added.empty());
  want[added] = "sync-0";
  ASSERT_TRUE(cp().Delete("/api/v1/namespaces/sync/pods/" + gone_name).ok());
  want.erase(gone);
  ASSERT_TRUE(cp().Delete("/api/v1/nodes/sync-6").ok());
  EXPECT_TRUE(WaitFor([&] { return CachedPods(cache, "sync") == want; }));
  EXPECT_TRUE(WaitFor([&] { return cache.snapshot()->FindNode("sync-6") == nullptr; }));
  EXPECT_GE(pod_informer.Stats().events, 2);
  EXPECT_EQ(pod_informer.Stats().failures, 0) << pod_informer.Stats().last_error;
  node_informer.Stop();
  pod_informer.Stop();
}

TEST_F(ClusterApiTest, BindCreatesTheBindingAndARetriedBindIsSuccess) {
  ASSERT_TRUE(cp().Create("/api/v1/nodes", NodeJson("bind-1")).ok());
  const std::string uid = CreatePod("bind", "web");
  ASSERT_FALSE(uid.empty());
  auto client = NewClient(cp().schedext_kubeconfig());
  ASSERT_NE(client, nullptr);
  RecordingClient recording(*client);
  std::atomic<int> bound{0};
  cluster::KubeBinder binder(recording, [&](const cluster::BindRequest&) { ++bound; });
  const cluster::BindRequest request{"bind", "web", uid, "bind-1"};
  Status first = binder.Bind(request);
  ASSERT_TRUE(first.ok()) << first.ToString();
  json pod = GetPod("bind", "web");
  EXPECT_EQ(pod["spec"].value("nodeName", ""), "bind-1");
  bool scheduled = false;
  for (const json& c : pod["status"]["conditions"]) {
    scheduled |= c.value("type", "") == "PodScheduled" && c.value("status", "") == "True";
  }
  EXPECT_TRUE(scheduled) << pod["status"].dump();

  // A retried bind (its first answer lost): the API answers 409, the binder
  // reads the pod back, finds it on that node: success.
  Status again = binder.Bind(request);
  EXPECT_TRUE(again.ok()) << again.ToString();
  EXPECT_EQ(bound.load(), 2);
  std::vector<RecordedCall> calls = recording.calls();
  ASSERT_GE(calls.size(), 3u);
  EXPECT_EQ(calls[0].method, "POST");
  EXPECT_EQ(calls[0].status, 201) << calls[0].body;
  EXPECT_EQ(JsonString(calls[0].body, {"status"}), "Success") << calls[0].body;
  EXPECT_EQ(calls[1].status, 409) << calls[1].body;
  EXPECT_EQ(JsonString(calls[1].body, {"message"}),
            "Operation cannot be fulfilled on pods/binding \"web\": pod web is already assigned "
            "to node \"bind-1\"");
  EXPECT_EQ(calls[2].method, "GET");
  EXPECT_EQ(calls[2].status, 200);
}

TEST_F(ClusterApiTest, BindOfAPodBoundElsewhereIsAConflict) {
  ASSERT_TRUE(cp().Create("/api/v1/nodes", NodeJson("bind-a")).ok());
  ASSERT_TRUE(cp().Create("/api/v1/nodes", NodeJson("bind-b")).ok());
  const std::string uid = CreatePod("bind", "taken", "bind-a");
  ASSERT_FALSE(uid.empty());
  auto client = NewClient(cp().schedext_kubeconfig());
  ASSERT_NE(client, nullptr);
  bool called = false;
  cluster::KubeBinder binder(*client, [&](const cluster::BindRequest&) { called = true; });
  Status s = binder.Bind({"bind", "taken", uid, "bind-b"});
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("409 Conflict: Operation cannot be fulfilled on pods/binding "
                             "\"taken\": pod taken is already assigned to node \"bind-a\""),
            std::string::npos)
      << s.ToString();
  EXPECT_FALSE(called);
  EXPECT_EQ(GetPod("bind", "taken")["spec"].value("nodeName", ""), "bind-a");
}

TEST_F(ClusterApiTest, BindWithAStaleUidOrOfAMissingPodFails) {
  ASSERT_TRUE(cp().Create("/api/v1/nodes", NodeJson("bind-c")).ok());
  const std::string uid = CreatePod("bind", "reborn");
  ASSERT_FALSE(uid.empty());
  auto client = NewClient(cp().schedext_kubeconfig());
  ASSERT_NE(client, nullptr);
  cluster::KubeBinder binder(*client);
  // The uid of an earlier pod of that name: the Binding's uid is a storage
  // precondition (409, in etcd3's words), and the pod stays unbound.
  const std::string stale = "00000000-0000-4000-8000-000000000001";
  Status s = binder.Bind({"bind", "reborn", stale, "bind-c"});
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("409 Conflict: Operation cannot be fulfilled on pods \"reborn\": "
                             "StorageError: invalid object, Code: 4, Key: /registry/pods/bind/"
                             "reborn, ResourceVersion: 0, AdditionalErrorMsg: Precondition "
                             "failed: UID in precondition: " +
                             stale + ", UID in object meta: " + uid),
            std::string::npos)
      << s.ToString();
  EXPECT_EQ(GetPod("bind", "reborn")["spec"].value("nodeName", ""), "");

  s = binder.Bind({"bind", "never-created", "", "bind-c"});
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("404 Not Found: pods \"never-created\" not found"), std::string::npos)
      << s.ToString();
}

// GpuShare's device annotations travel in the Binding: kube-apiserver sets
// them on the pod in the same write as spec.nodeName (BindingREST's
// setPodHostAndAnnotations), under the Binding's uid precondition.
TEST_F(ClusterAnnotationApiTest, ABindingSetsItsAnnotationsWithTheNodeInOneWrite) {
  ASSERT_TRUE(cp().Create("/api/v1/nodes", NodeJson("annotate-1")).ok());
  const std::string uid = CreatePod("annotate", "gpu");
  ASSERT_FALSE(uid.empty());
  const std::string created_version = GetPod("annotate", "gpu")["metadata"]["resourceVersion"];
  auto client = NewClient(cp().schedext_kubeconfig());
  ASSERT_NE(client, nullptr);
  cluster::KubeBinder binder(*client);
  const std::vector<std::pair<std::string, std::string>> set = {
      {"ALIYUN_COM_GPU_MEM_IDX", "1"}, {"ALIYUN_COM_GPU_MEM_ASSIGNED", "false"}};
  const Status bound = binder.Bind({"annotate", "gpu", uid, "annotate-1", set});
  ASSERT_TRUE(bound.ok()) << bound.ToString();
  const json pod = GetPod("annotate", "gpu");
  EXPECT_EQ(pod["spec"].value("nodeName", ""), "annotate-1");
  EXPECT_EQ(pod["metadata"]["annotations"].value("ALIYUN_COM_GPU_MEM_IDX", ""), "1");
  EXPECT_EQ(pod["metadata"]["annotations"].value("ALIYUN_COM_GPU_MEM_ASSIGNED", ""), "false");
  EXPECT_EQ(pod["metadata"].value("uid", ""), uid);
  // One write: the pod's version moved once, from create to bound.
  const int64_t before = std::stoll(created_version);
  const int64_t after = std::stoll(pod["metadata"].value("resourceVersion", "0"));
  EXPECT_GT(after, before);
  auto events = cp().AdminRequest(
      "GET", "/api/v1/namespaces/annotate/pods?watch=true&timeoutSeconds=1&resourceVersion=" +
                 created_version + "&fieldSelector=metadata.name%3Dgpu");
  ASSERT_TRUE(events.ok()) << events.status().ToString();
  size_t modified = 0;
  std::istringstream lines(events->body);
  for (std::string line; std::getline(lines, line);) {
    const json e = json::parse(line, nullptr, false);
    if (!e.is_object() || e.value("type", "") != "MODIFIED") continue;
    ++modified;
    // The first and only change already has both the node and the device.
    EXPECT_EQ(e["object"]["spec"].value("nodeName", ""), "annotate-1");
    EXPECT_EQ(e["object"]["metadata"]["annotations"].value("ALIYUN_COM_GPU_MEM_IDX", ""), "1");
  }
  EXPECT_EQ(modified, 1u) << events->body;
}

TEST_F(ClusterAnnotationApiTest, ABindingWithAStaleUidWritesNeitherNodeNorAnnotations) {
  ASSERT_TRUE(cp().Create("/api/v1/nodes", NodeJson("annotate-2")).ok());
  const std::string uid = CreatePod("annotate", "recreated");
  ASSERT_FALSE(uid.empty());
  auto client = NewClient(cp().schedext_kubeconfig());
  ASSERT_NE(client, nullptr);
  cluster::KubeBinder binder(*client);
  const std::vector<std::pair<std::string, std::string>> set = {{"ALIYUN_COM_GPU_MEM_IDX", "0"}};
  const std::string stale = "00000000-0000-4000-8000-000000000002";
  const Status s = binder.Bind({"annotate", "recreated", stale, "annotate-2", set});
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("Precondition failed: UID in precondition: " + stale),
            std::string::npos)
      << s.ToString();
  const json pod = GetPod("annotate", "recreated");
  EXPECT_EQ(pod["spec"].value("nodeName", ""), "");
  EXPECT_FALSE(pod["metadata"].contains("annotations")) << pod["metadata"].dump();
}

// HAMi's node lock (KubeBinder::LockNode, kube_node_lock.cc) on a real node:
// taken once per pod and idempotent for it, refused to another pod while its
// holder exists, released only by its holder, and free when it expired (an
// offset time, as HAMi writes it outside UTC) or its pod is gone; a bare
// time (older HAMi) holds until it expires; a malformed value is refused;
// of eight binders racing for a free node exactly one gets it. (The RBAC
// for it, deploy/hami/rbac.yaml, is used by HamiE2eTest; this test writes
// as the administrator.)
TEST_F(ClusterAnnotationApiTest, HamisNodeLockIsHeldByOnePodAtATime) {
  ASSERT_TRUE(cp().Create("/api/v1/nodes", NodeJson("lock-1")).ok());
  ASSERT_TRUE(cp().Create("/api/v1/nodes", NodeJson("lock-2")).ok());
  for (const std::string name : {"a", "b", "c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"}) {
    ASSERT_FALSE(CreatePod("annotate", "lock-" + name).empty());
  }
  auto client = NewClient(cp().admin_kubeconfig());
  ASSERT_NE(client, nullptr);
  cluster::KubeBinder binder(*client);
  const auto request = [](std::string_view node, std::string_view pod) {
    return cluster::NodeLockRequest{"hami.io/mutex.lock", node, "annotate", pod, seconds(300)};
  };
  const auto lock_value = [](const std::string& node) {
    auto r = cp().AdminRequest("GET", "/api/v1/nodes/" + node);
    EXPECT_TRUE(r.ok() && r->status == 200);
    if (!r.ok()) return std::string("<error>");
    return json::parse(r->body)["metadata"]
        .value("annotations", json::object())
        .value("hami.io/mutex.lock", "<none>");
  };
  const auto set_lock = [](const std::string& node, const std::string& value) {
    json patch;
    patch["metadata"]["annotations"]["hami.io/mutex.lock"] = value;
    auto r = cp().AdminRequest("PATCH", "/api/v1/nodes/" + node, patch.dump());
    ASSERT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().ToString());
  };
  const auto now_rfc3339 = [] {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return std::string(buf);
  };

  Status a = binder.LockNode(request("lock-1", "lock-a"));
  ASSERT_TRUE(a.ok()) << a.ToString();
  const std::string held = lock_value("lock-1");
  EXPECT_TRUE(std::regex_match(held, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ,annotate,lock-a)")))
      << held;
  Status again = binder.LockNode(request("lock-1", "lock-a"));
  EXPECT_TRUE(again.ok()) << again.ToString();
  EXPECT_EQ(lock_value("lock-1"), held);

  Status b = binder.LockNode(request("lock-1", "lock-b"));
  EXPECT_EQ(b.code(), StatusCode::kFailedPrecondition) << b.ToString();
  EXPECT_NE(b.message().find("held by annotate/lock-a since "), std::string::npos) << b.message();
  EXPECT_TRUE(binder.UnlockNode(request("lock-1", "lock-b")).ok());
  EXPECT_EQ(lock_value("lock-1"), held);
  EXPECT_TRUE(binder.UnlockNode(request("lock-1", "lock-a")).ok());
  EXPECT_EQ(lock_value("lock-1"), "<none>");

  // Expired (written at 2020-01-01 00:00 in UTC+8), its pod still there.
  set_lock("lock-1", "2020-01-01T08:00:00+08:00,annotate,lock-a");
  Status expired = binder.LockNode(request("lock-1", "lock-b"));
  EXPECT_TRUE(expired.ok()) << expired.ToString();
  EXPECT_NE(lock_value("lock-1").find(",annotate,lock-b"), std::string::npos);
  // Fresh, but its pod does not exist.
  set_lock("lock-1", now_rfc3339() + ",annotate,lock-gone");
  Status dangling = binder.LockNode(request("lock-1", "lock-a"));
  EXPECT_TRUE(dangling.ok()) << dangling.ToString();
  EXPECT_NE(lock_value("lock-1").find(",annotate,lock-a"), std::string::npos);
  // A bare fresh time names no pod: it holds until it expires.
  set_lock("lock-1", now_rfc3339());
  Status bare = binder.LockNode(request("lock-1", "lock-a"));
  EXPECT_EQ(bare.code(), StatusCode::kFailedPrecondition) << bare.ToString();
  EXPECT_NE(bare.message().find("held by a pod"), std::string::npos) << bare.message();
  set_lock("lock-1", "yesterday,annotate,lock-a");
  Status malformed = binder.LockNode(request("lock-1", "lock-b"));
  EXPECT_EQ(malformed.code(), StatusCode::kFailedPrecondition) << malformed.ToString();
  EXPECT_NE(malformed.message().find("malformed lock \"yesterday,annotate,lock-a\""),
            std::string::npos)
      << malformed.message();

  // Eight binders at once on a free node: the resourceVersion lets one in.
  std::vector<std::thread> racers;
  std::atomic<int> won{0}, refused{0};
  for (int i = 0; i < 8; ++i) {
    racers.emplace_back([&, i] {
      const std::string pod = "lock-c" + std::to_string(i);
      const Status s = binder.LockNode(request("lock-2", pod));
      (s.ok() ? won : refused)++;
      if (!s.ok()) {
        EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
      }
    });
  }
  for (std::thread& t : racers) t.join();
  EXPECT_EQ(won.load(), 1);
  EXPECT_EQ(refused.load(), 7);
  EXPECT_NE(lock_value("lock-2").find(",annotate,lock-c"), std::string::npos);
}

TEST_F(ClusterApiTest, AnExpiredContinueTokenRestartsTheList) {
  constexpr int kPods = 9;
  std::map<std::string, std::string> want;
  for (int i = 0; i < kPods; ++i) {
    const std::string uid = CreatePod("pages", "p" + std::to_string(i));
    ASSERT_FALSE(uid.empty());
    want[uid] = "";
  }
  auto client = NewClient(cp().schedext_kubeconfig());
  ASSERT_NE(client, nullptr);
  // After the first page of the first LIST, etcd moves on and compacts the
  // revision that LIST reads at: its continue token expires.
  class CompactAfterFirstPage final : public cluster::KubeClient {
   public:
    explicit CompactAfterFirstPage(cluster::KubeClient& inner) : inner_(inner) {}
    StatusOr<cluster::HttpResult> Get(std::string_view path) override {
      auto r = inner_.Get(path);
      if (!compacted_ && path.find("limit=") != std::string_view::npos) {
        compacted_ = true;
        compact_status_ = Compact();
      }
      return r;
    }
    StatusOr<cluster::HttpResult> Post(std::string_view p, std::string_view b) override {
      return inner_.Post(p, b);
    }
    StatusOr<cluster::HttpResult> Patch(std::string_view p, std::string_view b,
                                        std::string_view t) override {
      return inner_.Patch(p, b, t);
    }
    Status Watch(std::string_view p, const std::function<bool(std::string_view)>& f) override {
      return inner_.Watch(p, f);
    }
    void CancelWatches() override { inner_.CancelWatches(); }
    Status compact_status_;

   private:
    static Status Compact() {
      // A write, so that the current revision is past the LIST's.
      SCHEDEXT_RETURN_IF_ERROR(
          cp().Create("/api/v1/namespaces/pages/configmaps",
                      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bump"}})")
              .status());
      return cp().CompactEtcd().status();
    }
    cluster::KubeClient& inner_;
    bool compacted_ = false;
  };
  CompactAfterFirstPage compacting(*client);
  RecordingClient recording(compacting);
  cluster::ClusterCache cache;
  cluster::InformerOptions pods;
  pods.kind = cluster::ResourceKind::kPods;
  pods.path = "/api/v1/namespaces/pages/pods";
  pods.page_size = 2;
  pods.backoff_initial = std::chrono::milliseconds(50);
  cluster::Informer informer(recording, cache, pods);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(seconds(30))) << informer.Stats().last_error;
  informer.Stop();
  ASSERT_TRUE(compacting.compact_status_.ok()) << compacting.compact_status_.ToString();
  EXPECT_EQ(CachedPods(cache, "pages"), want);
  std::vector<RecordedCall> calls = recording.calls();
  ASSERT_GE(calls.size(), 3u);
  EXPECT_EQ(calls[0].status, 200);
  EXPECT_NE(calls[1].path.find("continue="), std::string::npos) << calls[1].path;
  const int minor = KubernetesMinor(cp().api_server_version());
  ASSERT_GT(minor, 0) << cp().api_server_version();
  if (minor >= 34) {
    // Since 1.34 (ListFromCacheSnapshot, on by default) the API server serves
    // a continued LIST from its watch cache's snapshot at the LIST's revision,
    // which etcd's compaction does not touch: the token stays good and the
    // LIST goes on (docs/kubernetes-versions.md).
    EXPECT_EQ(calls[1].status, 200) << calls[1].body;
    EXPECT_NE(calls[2].path.find("continue="), std::string::npos) << calls[2].path;
    EXPECT_EQ(calls[2].status, 200) << calls[2].body;
    return;
  }
  // The second page (the first with a continue token) was refused: 410 Expired,
  // in the API server's words, and the LIST started over without one.
  EXPECT_EQ(calls[1].status, 410) << calls[1].body;
  EXPECT_EQ(JsonString(calls[1].body, {"reason"}), "Expired") << calls[1].body;
  EXPECT_EQ(JsonString(calls[1].body, {"message"}),
            "The provided continue parameter is too old to display a consistent list result. "
            "You can start a new list without the continue parameter, or use the continue token "
            "in this response to retrieve the remainder of the results. Continuing with the "
            "provided token results in an inconsistent list - objects that were created, "
            "modified, or deleted between the time the first chunk was returned and now may show "
            "up in the list.")
      << calls[1].body;
  // ...with a token for an inconsistent remainder in the Status's metadata,
  // which schedext does not use (a relist must be consistent).
  EXPECT_FALSE(JsonString(calls[1].body, {"metadata", "continue"}).empty()) << calls[1].body;
  EXPECT_EQ(calls[2].path.find("continue="), std::string::npos) << calls[2].path;
  EXPECT_EQ(calls[2].status, 200);
}

}  // namespace
}  // namespace schedext::testing
