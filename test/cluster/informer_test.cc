// Informer against the scripted FakeKubeClient: pagination, every event type,
// bookmarks, relist after 410 (ERROR event and HTTP 410), resume after drops
// with backoff, replace semantics, Synced / Relisting states.
#include "schedext/cluster/informer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "schedext/cluster/cache.h"
#include "schedext/cluster/client_config.h"
#include "schedext/cluster/http_kube_client.h"
#include "schedext/cluster/resource_path.h"
#include "schedext/wire/object_decoder.h"
#include "testing/eventually.h"
#include "testing/fake_api_server.h"
#include "testing/fake_kube_client.h"
#include "testing/json_builders.h"

namespace schedext::cluster {
namespace {

using ::schedext::testing::FakeKubeClient;
using ::schedext::testing::NodeJson;
using ::schedext::testing::PodJson;
using namespace std::chrono_literals;

constexpr auto kWait = 10s;  // generous bound; tests finish in milliseconds

// Records the handler calls as strings: "replace:a,b", "upsert:a@101", "delete:b".
class RecordingHandler final : public InformerHandler {
 public:
  void OnReplace(ResourceKind, std::vector<InformerObject> objects) override {
    std::string call = "replace:";
    for (size_t i = 0; i < objects.size(); ++i) {
      call += (i > 0 ? "," : "") + Name(objects[i]);
    }
    Add(std::move(call));
  }
  void OnUpsert(ResourceKind, InformerObject object) override {
    Add("upsert:" + Name(object) + "@" + Version(object));
  }
  void OnDelete(ResourceKind, InformerObject object) override { Add("delete:" + Name(object)); }

  bool WaitForCalls(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kWait, [&] { return calls_.size() >= n; });
  }
  std::vector<std::string> calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  // Raw objects (config maps, widgets): "<ns>/<name>".
  static std::string Name(const InformerObject& o) {
    if (o.object) {
      return std::string(o.object->view().namespace_name) + "/" +
             std::string(o.object->view().name);
    }
    return std::string(o.node ? o.node->name() : o.pod->info().name);
  }
  // Raw objects: "<rv>{k=v,...}", the map being their .data (config maps) or
  // .spec (widgets), as their watcher decodes it from the raw JSON.
  static std::string Version(const InformerObject& o) {
    if (o.object) {
      const wire::RawObject& raw = o.object->view();
      wire::ObjectDecoder decoder;
      std::vector<std::pair<std::string_view, std::string_view>> map;
      const bool widget = raw.json.find("\"kind\":\"Widget\"") != std::string_view::npos;
      const Status read = decoder.DecodeStringMap(raw.json, widget ? "spec" : "data", map);
      std::string out = std::string(raw.resource_version) + "{";
      if (!read.ok()) {
        return out + read.message() + "}";
      }
      for (size_t i = 0; i < map.size(); ++i) {
        out += (i > 0 ? "," : "") + std::string(map[i].first) + "=" + std::string(map[i].second);
      }
      return out + "}";
    }
    return std::string(o.node ? o.node->resource_version() : o.pod->resource_version());
  }
  void Add(std::string call) {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back(std::move(call));
    cv_.notify_all();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> calls_;
};

// Records the backoff waits instead of sleeping.
class RecordingSleeper {
 public:
  void Sleep(std::chrono::milliseconds d) {
    std::lock_guard<std::mutex> lock(mu_);
    sleeps_.push_back(d);
  }
  std::vector<std::chrono::milliseconds> sleeps() {
    std::lock_guard<std::mutex> lock(mu_);
    return sleeps_;
  }

 private:
  std::mutex mu_;
  std::vector<std::chrono::milliseconds> sleeps_;
};

std::string Pod(std::string_view name, std::string_view rv) {
  return PodJson(std::string(name))
      .MetadataField("resourceVersion", "\"" + std::string(rv) + "\"")
      .NodeName("n1")
      .Build();
}

std::string PodList(std::string_view rv, std::string_view cont,
                    const std::vector<std::string>& items) {
  std::string out = R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":")" +
                    std::string(rv) + "\"";
  if (!cont.empty()) {
    out += R"(,"continue":")" + std::string(cont) + "\"";
  }
  out += R"(},"items":[)";
  for (size_t i = 0; i < items.size(); ++i) {
    out += (i > 0 ? "," : "") + items[i];
  }
  return out + "]}";
}

std::string Ev(std::string_view type, std::string_view object) {
  return R"({"type":")" + std::string(type) + R"(","object":)" + std::string(object) + "}";
}

std::string Bookmark(std::string_view rv) {
  return Ev("BOOKMARK", R"({"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":")" +
                            std::string(rv) + R"("},"spec":{"containers":null},"status":{}})");
}

std::string GoneEvent() {
  return Ev(
      "ERROR",
      R"json({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 10 (50)","reason":"Expired","code":410})json");
}

struct Fixture {
  FakeKubeClient client;
  RecordingHandler handler;
  RecordingSleeper sleeper;
  InformerOptions Options(ResourceKind kind = ResourceKind::kPods) {
    InformerOptions options;
    options.kind = kind;
    options.page_size = 2;
    options.seed = 42;
    options.sleep = [this](std::chrono::milliseconds d) { sleeper.Sleep(d); };
    return options;
  }
};

TEST(InformerTest, ListsPagesThenWatchesFromTheListVersion) {
  Fixture f;
  f.client.PushGet(200, PodList("90", "c/1+=", {Pod("a", "1"), Pod("b", "2")}));
  f.client.PushGet(200, PodList("100", "", {Pod("c", "3")}));
  f.client.PushWatch({{Ev("ADDED", Pod("d", "101")), Ev("MODIFIED", Pod("a", "102")),
                       Ev("DELETED", Pod("b", "103")), Bookmark("150")},
                      OkStatus(),
                      /*hold_open=*/true});
  Informer informer(f.client, f.handler, f.Options());
  EXPECT_FALSE(informer.Synced());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(kWait));
  ASSERT_TRUE(f.handler.WaitForCalls(4));
  EXPECT_EQ(f.handler.calls(), (std::vector<std::string>{"replace:a,b,c", "upsert:d@101",
                                                         "upsert:a@102", "delete:b"}));
  EXPECT_EQ(f.client.get_paths(),
            (std::vector<std::string>{"/api/v1/pods?limit=2",
                                      "/api/v1/pods?limit=2&continue=c%2F1%2B%3D"}));
  const std::vector<std::string> watches = f.client.watch_paths();
  ASSERT_EQ(watches.size(), 1u);
  const std::string prefix =
      "/api/v1/pods?watch=true&resourceVersion=100&allowWatchBookmarks=true&timeoutSeconds=";
  ASSERT_EQ(watches[0].substr(0, prefix.size()), prefix);
  const int timeout = std::stoi(watches[0].substr(prefix.size()));
  EXPECT_GE(timeout, 300);  // client-go: minWatchTimeout × [1, 2)
  EXPECT_LT(timeout, 600);

  // The server ends the watch (timeout): resumed at once from the bookmark.
  f.client.PushWatch({{}, OkStatus(), true});
  f.client.Release();
  ASSERT_TRUE(f.client.WaitForWatchCalls(2, kWait));
  EXPECT_NE(f.client.watch_paths()[1].find("resourceVersion=150&"), std::string::npos);
  EXPECT_TRUE(f.sleeper.sleeps().empty());
  const InformerStats stats = informer.Stats();
  EXPECT_EQ(stats.lists, 1);
  EXPECT_EQ(stats.events, 4);
  EXPECT_EQ(stats.resource_version, "150");
  EXPECT_FALSE(informer.Relisting());
  informer.Stop();
}

TEST(InformerTest, RelistsAfterGone) {
  struct Case {
    std::string name;
    FakeKubeClient::WatchSession gone;
  };
  const std::vector<Case> cases = {
      {"ERROR event with code 410", {{Ev("ADDED", Pod("c", "11")), GoneEvent()}, OkStatus()}},
      {"HTTP 410 on the WATCH",
       {{}, FailedPreconditionError("watch /api/v1/pods: HTTP 410: too old resource version")}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Fixture f;
    f.client.PushGet(200, PodList("10", "", {Pod("a", "1"), Pod("b", "2")}));
    f.client.PushWatch(c.gone);
    Informer informer(f.client, f.handler, f.Options());
    informer.Start();
    ASSERT_TRUE(informer.WaitForSync(kWait));
    // The relist LIST is not answered yet: the informer is relisting.
    ASSERT_TRUE(f.client.WaitForGetCalls(2, kWait));
    ASSERT_EQ(f.client.get_paths().size(), 2u);
    EXPECT_TRUE(informer.Relisting());
    EXPECT_TRUE(informer.Synced());  // stays synced; /readyz decides what relisting means
    // b disappeared while the watch was broken: the replace says so.
    f.client.PushGet(200, PodList("60", "", {Pod("a", "1"), Pod("c", "55")}));
    f.client.PushWatch({{}, OkStatus(), true});
    ASSERT_TRUE(f.client.WaitForWatchCalls(2, kWait));
    EXPECT_FALSE(informer.Relisting());
    EXPECT_EQ(f.handler.calls().back(), "replace:a,c");
    EXPECT_NE(f.client.watch_paths()[1].find("resourceVersion=60&"), std::string::npos);
    EXPECT_EQ(f.client.get_paths()[1], "/api/v1/pods?limit=2");  // consistent read
    EXPECT_TRUE(f.sleeper.sleeps().empty());                     // a relist is not a failure
    EXPECT_EQ(informer.Stats().relists, 1);
    informer.Stop();
  }
}

TEST(InformerTest, ResumesAfterDropWithBackoff) {
  Fixture f;
  f.client.PushGet(200, PodList("10", "", {Pod("a", "1")}));
  f.client.PushWatch({{Ev("ADDED", Pod("b", "11"))}, UnavailableError("connection reset")});
  f.client.PushWatch({{}, UnavailableError("connection refused")});
  f.client.PushWatch({{Ev("MODIFIED", Pod("b", "12"))}, OkStatus(), true});
  Informer informer(f.client, f.handler, f.Options());
  informer.Start();
  ASSERT_TRUE(f.client.WaitForWatchCalls(3, kWait));
  ASSERT_TRUE(f.handler.WaitForCalls(3));
  const std::vector<std::string> watches = f.client.watch_paths();
  EXPECT_NE(watches[1].find("resourceVersion=11&"), std::string::npos);
  EXPECT_NE(watches[2].find("resourceVersion=11&"), std::string::npos);
  EXPECT_EQ(f.client.get_paths().size(), 1u);  // no relist
  const std::vector<std::chrono::milliseconds> sleeps = f.sleeper.sleeps();
  ASSERT_EQ(sleeps.size(), 2u);
  // 800 ms, then 1600 ms, each plus up to 100 % jitter.
  EXPECT_GE(sleeps[0], 800ms);
  EXPECT_LT(sleeps[0], 1600ms);
  EXPECT_GE(sleeps[1], 1600ms);
  EXPECT_LT(sleeps[1], 3200ms);
  EXPECT_EQ(informer.Stats().failures, 2);
  EXPECT_EQ(informer.Stats().last_error, "connection refused");
  informer.Stop();
}

TEST(InformerTest, BackoffIsCappedAndResetsAfterAQuietPeriod) {
  Fixture f;
  auto now = std::chrono::steady_clock::time_point{};
  std::mutex now_mu;
  InformerOptions options = f.Options();
  options.backoff_max = 3s;
  options.now = [&] {
    std::lock_guard<std::mutex> lock(now_mu);
    return now;
  };
  f.client.PushGet(200, PodList("10", "", {}));
  for (int i = 0; i < 4; ++i) {
    f.client.PushWatch({{}, UnavailableError("drop")});
  }
  Informer informer(f.client, f.handler, options);
  informer.Start();
  ASSERT_TRUE(f.client.WaitForWatchCalls(5, kWait));
  {
    std::lock_guard<std::mutex> lock(now_mu);
    now += 3min;  // longer than backoff_reset_after (2 min)
  }
  f.client.PushWatch({{}, UnavailableError("drop")});
  ASSERT_TRUE(f.client.WaitForWatchCalls(6, kWait));
  const std::vector<std::chrono::milliseconds> s = f.sleeper.sleeps();
  ASSERT_EQ(s.size(), 5u);
  // 800, 1600, 3000 (capped), 3000, then reset: 800 — each with jitter < 100 %.
  const std::vector<std::chrono::milliseconds> base = {800ms, 1600ms, 3000ms, 3000ms, 800ms};
  for (size_t i = 0; i < s.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_GE(s[i], base[i]);
    EXPECT_LT(s[i], 2 * base[i]);
  }
  informer.Stop();
}

TEST(InformerTest, RetriesAFailedListWithBackoff) {
  Fixture f;
  f.client.PushGet(UnavailableError("dial tcp: connection refused"));
  f.client.PushGet(500, R"({"kind":"Status","code":500})");
  f.client.PushGet(200, PodList("10", "", {Pod("a", "1")}));
  f.client.PushWatch({{}, OkStatus(), true});
  Informer informer(f.client, f.handler, f.Options());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(kWait));
  EXPECT_EQ(f.sleeper.sleeps().size(), 2u);
  EXPECT_EQ(f.handler.calls(), (std::vector<std::string>{"replace:a"}));
  EXPECT_EQ(informer.Stats().failures, 2);
  EXPECT_NE(informer.Stats().last_error.find("HTTP 500"), std::string::npos);
  informer.Stop();
}

TEST(InformerTest, ExpiredContinueTokenRestartsTheList) {
  Fixture f;
  f.client.PushGet(200, PodList("10", "tok1", {Pod("a", "1"), Pod("b", "2")}));
  f.client.PushGet(410, R"({"kind":"Status","code":410,"reason":"Expired"})");
  f.client.PushGet(200, PodList("20", "tok2", {Pod("a", "1"), Pod("c", "3")}));
  f.client.PushGet(200, PodList("20", "", {Pod("d", "4")}));
  f.client.PushWatch({{}, OkStatus(), true});
  Informer informer(f.client, f.handler, f.Options());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(kWait));
  EXPECT_EQ(f.handler.calls(), (std::vector<std::string>{"replace:a,c,d"}));
  EXPECT_EQ(
      f.client.get_paths(),
      (std::vector<std::string>{"/api/v1/pods?limit=2", "/api/v1/pods?limit=2&continue=tok1",
                                "/api/v1/pods?limit=2", "/api/v1/pods?limit=2&continue=tok2"}));
  informer.Stop();
}

TEST(InformerTest, UndecodableEventForcesARelist) {
  Fixture f;
  f.client.PushGet(200, PodList("10", "", {Pod("a", "1")}));
  f.client.PushWatch({{Ev("ADDED", R"({"spec":{"priority":"high"}})")}, OkStatus(), true});
  f.client.PushGet(200, PodList("30", "", {Pod("a", "1"), Pod("x", "29")}));
  f.client.PushWatch({{}, OkStatus(), true});
  Informer informer(f.client, f.handler, f.Options());
  informer.Start();
  ASSERT_TRUE(f.client.WaitForWatchCalls(2, kWait));
  EXPECT_EQ(f.handler.calls(), (std::vector<std::string>{"replace:a", "replace:a,x"}));
  EXPECT_EQ(f.sleeper.sleeps().size(), 1u);
  EXPECT_NE(informer.Stats().last_error.find("/object/spec/priority"), std::string::npos);
  informer.Stop();
}

TEST(InformerTest, ErrorEventOtherThanGoneResumes) {
  Fixture f;
  f.client.PushGet(200, PodList("10", "", {}));
  f.client.PushWatch(
      {{Ev("ERROR", R"({"kind":"Status","status":"Failure","message":"etcd timeout","code":500})")},
       OkStatus()});
  f.client.PushWatch({{}, OkStatus(), true});
  Informer informer(f.client, f.handler, f.Options());
  informer.Start();
  ASSERT_TRUE(f.client.WaitForWatchCalls(2, kWait));
  EXPECT_EQ(f.client.get_paths().size(), 1u);
  EXPECT_NE(f.client.watch_paths()[1].find("resourceVersion=10&"), std::string::npos);
  EXPECT_EQ(f.sleeper.sleeps().size(), 1u);
  informer.Stop();
}

TEST(InformerTest, WatchesNodesWithExtraQuery) {
  Fixture f;
  InformerOptions options = f.Options(ResourceKind::kNodes);
  options.extra_query = "labelSelector=pool%3Dgpu";
  f.client.PushGet(200, R"({"kind":"NodeList","metadata":{"resourceVersion":"7"},"items":[)" +
                            NodeJson("n1").Realistic().Build() + "]}");
  f.client.PushWatch(
      {{Ev("MODIFIED", NodeJson("n1").Realistic().Build()), Ev("DELETED", NodeJson("n1").Build())},
       OkStatus(),
       true});
  Informer informer(f.client, f.handler, options);
  informer.Start();
  ASSERT_TRUE(f.handler.WaitForCalls(3));
  EXPECT_EQ(f.handler.calls(),
            (std::vector<std::string>{"replace:n1", "upsert:n1@815", "delete:n1"}));
  EXPECT_EQ(f.client.get_paths()[0], "/api/v1/nodes?limit=2&labelSelector=pool%3Dgpu");
  const std::string watch = f.client.watch_paths()[0];
  EXPECT_EQ(watch.rfind("/api/v1/nodes?watch=true&resourceVersion=7&", 0), 0u) << watch;
  EXPECT_NE(watch.find("&labelSelector=pool%3Dgpu"), std::string::npos);
  informer.Stop();
}

TEST(InformerTest, StopsWhileWaitingAndIsNotSyncedWithoutAList) {
  FakeKubeClient client;
  RecordingHandler handler;
  InformerOptions options;  // real sleeper: Stop must interrupt it
  Informer informer(client, handler, options);
  informer.Start();
  EXPECT_FALSE(informer.WaitForSync(20ms));
  EXPECT_FALSE(informer.Synced());
  informer.Stop();  // the fake's Get is blocked until CancelWatches
  informer.Stop();  // idempotent
  EXPECT_TRUE(handler.calls().empty());
}

// Polls `done` until it holds or the deadline passes (the cache has no
// notification API; snapshots are cheap to load).
bool Eventually(const std::function<bool()>& done) {
  return testing::Eventually(done, kWait);
}

// End to end: HttpKubeClient over TLS against the FakeApiServer, two
// informers feeding a ClusterCache: paginated sync, live events, a dropped
// connection mid-event, and a relist after 410 that deletes what vanished.
TEST(InformerTest, EndToEndAgainstFakeApiServer) {
  using ::schedext::testing::FakeApiServer;
  using ::schedext::testing::FakeResource;
  using ::schedext::testing::FixtureNode;
  using ::schedext::testing::FixturePod;
  FakeApiServer api;
  ASSERT_TRUE(api.Start()) << api.error();
  api.AddNode(FixtureNode("n1"));
  api.AddNode(FixtureNode("n2"));
  api.AddNode(FixtureNode("n3"));
  api.AddPod(FixturePod("default", "a", "n1"));
  api.AddPod(FixturePod("default", "b", "n1"));
  api.AddPod(FixturePod("default", "pending", ""));

  ClientConfig config;
  config.server = api.url();
  config.ca_pem = api.ca_pem();
  config.token = api.token();
  config.qps = 0;
  config.timeout = 5s;
  StatusOr<std::unique_ptr<KubeClient>> client = NewHttpKubeClient(config);
  ASSERT_TRUE(client.ok()) << client.status().ToString();

  ClusterCache cache;
  InformerOptions node_options;
  node_options.kind = ResourceKind::kNodes;
  node_options.page_size = 2;  // 3 nodes: two pages
  node_options.backoff_initial = 10ms;
  InformerOptions pod_options = node_options;
  pod_options.kind = ResourceKind::kPods;
  Informer nodes(**client, cache, node_options);
  Informer pods(**client, cache, pod_options);
  nodes.Start();
  pods.Start();
  ASSERT_TRUE(nodes.WaitForSync(kWait));
  ASSERT_TRUE(pods.WaitForSync(kWait));
  ASSERT_TRUE(cache.Synced());
  // Fixture pods request 500m cpu each: a + b on n1.
  auto cpu = [&](std::string_view node) {
    const std::shared_ptr<const Snapshot> snapshot = cache.snapshot();  // keeps `usage` alive
    const model::NodeUsage* usage = snapshot->FindUsage(node);
    return usage != nullptr ? usage->requested.milli_cpu : 0;
  };
  EXPECT_EQ(cache.snapshot()->node_count(), 3u);
  EXPECT_EQ(cpu("n1"), 1000);
  EXPECT_EQ(cache.snapshot()->pod_count(), 3u);

  // A live event.
  ASSERT_TRUE(api.WaitForWatches(FakeResource::kPods, 1, kWait));
  api.AddPod(FixturePod("default", "c", "n2"));
  ASSERT_TRUE(Eventually([&] { return cpu("n2") == 500; }));

  // A dropped connection mid-event: resumed from the last resourceVersion,
  // the change made meanwhile is replayed, nothing is relisted.
  const int64_t lists = pods.Stats().lists;
  api.DropWatches(/*mid_event=*/true);
  api.AddPod(FixturePod("default", "d", "n2"));
  ASSERT_TRUE(Eventually([&] { return cpu("n2") == 1000; }));
  EXPECT_EQ(pods.Stats().lists, lists);

  // 410: the history is compacted, a pod is deleted, the watch is told Gone;
  // the relist's replace drops the deleted pod.
  ASSERT_TRUE(api.WaitForWatches(FakeResource::kPods, 1, kWait));
  api.Compact();
  api.DeletePod("default", "a");
  api.Compact();
  api.PushGone(FakeResource::kPods);
  ASSERT_TRUE(Eventually([&] { return pods.Stats().relists >= 1 && !pods.Relisting(); }));
  ASSERT_TRUE(Eventually([&] { return cpu("n1") == 500; }));
  EXPECT_TRUE(pods.Synced());

  pods.Stop();
  nodes.Stop();
}

std::string ConfigMapJson(std::string_view name, std::string_view rv, std::string_view data) {
  return R"({"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":")" + std::string(name) +
         R"(","namespace":"kube-system","resourceVersion":")" + std::string(rv) +
         R"("},"data":)" + std::string(data) + "}";
}

policy::WatchSpec ConfigMaps(std::string namespace_name = "") {
  policy::WatchSpec spec;
  spec.version = "v1";
  spec.resource = "configmaps";
  spec.namespace_name = std::move(namespace_name);
  return spec;
}

TEST(InformerTest, ConfigMapsListAndWatchOnTheirPath) {
  Fixture f;
  f.client.PushGet(200, R"({"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"20"},"items":[)" +
                            ConfigMapJson("a", "5", R"({"x":"1"})") + "]}");
  f.client.PushWatch(
      {{Ev("ADDED", ConfigMapJson("b", "21", R"({"y":"2","z":"3"})")),
        Ev("MODIFIED", ConfigMapJson("a", "22", "{}")),
        Ev("BOOKMARK", R"({"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"30"}})"),
        Ev("DELETED", ConfigMapJson("b", "31", R"({"y":"2"})"))},
       OkStatus(),
       /*hold_open=*/true});
  Informer informer(f.client, f.handler, WatchInformerOptions(ConfigMaps(), f.Options()));
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(kWait));
  ASSERT_TRUE(f.handler.WaitForCalls(4));
  EXPECT_EQ(f.handler.calls(),
            (std::vector<std::string>{"replace:kube-system/a", "upsert:kube-system/b@21{y=2,z=3}",
                                      "upsert:kube-system/a@22{}", "delete:kube-system/b"}));
  EXPECT_EQ(f.client.get_paths(), std::vector<std::string>{"/api/v1/configmaps?limit=2"});
  ASSERT_TRUE(Eventually([&] { return informer.Stats().events == 4; }));
  EXPECT_EQ(informer.Stats().resource_version, "31");
  ASSERT_EQ(f.client.watch_paths().size(), 1u);
  EXPECT_EQ(f.client.watch_paths()[0].rfind("/api/v1/configmaps?watch=true&resourceVersion=20&", 0),
            0u);
  informer.Stop();
}

// A namespaced config map informer through HttpKubeClient and the fake:
// paginated sync of that namespace only, then add / modify / delete, and
// changes in other namespaces never arrive.
TEST(InformerTest, ConfigMapsOfOneNamespaceAgainstFakeApiServer) {
  using ::schedext::testing::FakeApiServer;
  using ::schedext::testing::FakeResource;
  using ::schedext::testing::FixtureConfigMap;
  FakeApiServer api;
  ASSERT_TRUE(api.Start()) << api.error();
  api.Apply(FakeResource::kConfigMaps, FixtureConfigMap("kube-system", "gpu-n1", {{"0", "bad"}}));
  api.Apply(FakeResource::kConfigMaps, FixtureConfigMap("default", "elsewhere", {{"k", "v"}}));
  api.Apply(FakeResource::kConfigMaps, FixtureConfigMap("kube-system", "gpu-n2", {}));
  api.Apply(FakeResource::kConfigMaps, FixtureConfigMap("kube-system", "gpu-n3", {{"1", "x"}}));

  ClientConfig config;
  config.server = api.url();
  config.ca_pem = api.ca_pem();
  config.token = api.token();
  config.qps = 0;
  config.timeout = 5s;
  StatusOr<std::unique_ptr<KubeClient>> client = NewHttpKubeClient(config);
  ASSERT_TRUE(client.ok()) << client.status().ToString();

  RecordingHandler handler;
  InformerOptions options = WatchInformerOptions(ConfigMaps("kube-system"), {});
  EXPECT_EQ(options.path, "/api/v1/namespaces/kube-system/configmaps");
  options.page_size = 2;  // 3 config maps in kube-system: two pages
  options.backoff_initial = 10ms;
  options.seed = 3;
  Informer informer(**client, handler, options);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(kWait));
  ASSERT_TRUE(handler.WaitForCalls(1));
  EXPECT_EQ(handler.calls()[0], "replace:kube-system/gpu-n1,kube-system/gpu-n2,kube-system/gpu-n3");
  EXPECT_EQ(informer.Stats().lists, 1);

  ASSERT_TRUE(api.WaitForWatches(FakeResource::kConfigMaps, 1, kWait));
  api.Apply(FakeResource::kConfigMaps, FixtureConfigMap("default", "elsewhere", {{"k", "w"}}));
  const std::string added =
      api.Apply(FakeResource::kConfigMaps, FixtureConfigMap("kube-system", "gpu-n4", {{"2", "y"}}));
  const std::string modified = api.Apply(
      FakeResource::kConfigMaps, FixtureConfigMap("kube-system", "gpu-n1", {{"0", "bad"}, {"3", "z"}}));
  ASSERT_FALSE(api.Delete(FakeResource::kConfigMaps, "kube-system", "gpu-n2").empty());
  ASSERT_TRUE(handler.WaitForCalls(4));
  EXPECT_EQ(handler.calls(),
            (std::vector<std::string>{
                "replace:kube-system/gpu-n1,kube-system/gpu-n2,kube-system/gpu-n3",
                "upsert:kube-system/gpu-n4@" + added + "{2=y}",
                "upsert:kube-system/gpu-n1@" + modified + "{0=bad,3=z}",
                "delete:kube-system/gpu-n2"}));
  EXPECT_EQ(api.Get(FakeResource::kConfigMaps, "kube-system", "gpu-n2"), "");
  EXPECT_NE(api.Get(FakeResource::kConfigMaps, "default", "elsewhere").find("\"k\":\"w\""),
            std::string::npos);
  informer.Stop();
}

TEST(ResourcePathTest, CoreAndNamedGroupsNamespacesAndSelectors) {
  policy::WatchSpec spec = ConfigMaps();
  EXPECT_EQ(CollectionPath(spec), "/api/v1/configmaps");
  EXPECT_EQ(WatchName(spec), "configmaps");
  spec.namespace_name = "kube-system";
  EXPECT_EQ(CollectionPath(spec), "/api/v1/namespaces/kube-system/configmaps");
  EXPECT_EQ(WatchName(spec), "configmaps in kube-system");
  EXPECT_EQ(SelectorQuery(spec), "");
  spec.label_selector = "app=gpu,tier in (a b)";
  EXPECT_EQ(SelectorQuery(spec), "labelSelector=app%3Dgpu%2Ctier%20in%20%28a%20b%29");
  spec.field_selector = "metadata.name!=x";
  EXPECT_EQ(SelectorQuery(spec),
            "labelSelector=app%3Dgpu%2Ctier%20in%20%28a%20b%29&fieldSelector=metadata.name%21%3Dx");
  spec.label_selector.clear();
  EXPECT_EQ(SelectorQuery(spec), "fieldSelector=metadata.name%21%3Dx");

  policy::WatchSpec slices;
  slices.group = "resource.k8s.io";
  slices.version = "v1beta1";
  slices.resource = "resourceslices";
  EXPECT_EQ(CollectionPath(slices), "/apis/resource.k8s.io/v1beta1/resourceslices");
  EXPECT_EQ(WatchName(slices), "resourceslices.resource.k8s.io");
  slices.namespace_name = "team-a";
  EXPECT_EQ(CollectionPath(slices), "/apis/resource.k8s.io/v1beta1/namespaces/team-a/resourceslices");

  InformerOptions base;
  base.page_size = 7;
  const InformerOptions options = WatchInformerOptions(slices, base);
  EXPECT_EQ(options.kind, ResourceKind::kObjects);
  EXPECT_EQ(options.path, "/apis/resource.k8s.io/v1beta1/namespaces/team-a/resourceslices");
  EXPECT_EQ(options.name, "resourceslices.resource.k8s.io in team-a");
  EXPECT_EQ(options.page_size, 7);
}

// A custom resource (a CRD's objects, group example.com) through
// HttpKubeClient, the fake and the real decoder: the informer lists and
// watches /apis/example.com/v1/namespaces/<ns>/widgets, and the watcher gets
// each object raw, decodes its own fields, and never sees other namespaces.
TEST(InformerTest, WatchesACustomResourceAgainstFakeApiServer) {
  using ::schedext::testing::FakeApiServer;
  using ::schedext::testing::FakeResource;
  FakeApiServer api;
  ASSERT_TRUE(api.Start()) << api.error();
  const auto widget = [](std::string_view ns, std::string_view name, std::string_view size) {
    return R"({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":")" +
           std::string(name) + R"(","namespace":")" + std::string(ns) +
           R"("},"spec":{"size":")" + std::string(size) + R"("}})";
  };
  api.Apply(FakeResource::kWidgets, widget("team-a", "w1", "1"));
  api.Apply(FakeResource::kWidgets, widget("team-b", "other", "9"));

  ClientConfig config;
  config.server = api.url();
  config.ca_pem = api.ca_pem();
  config.token = api.token();
  config.qps = 0;
  config.timeout = 5s;
  StatusOr<std::unique_ptr<KubeClient>> client = NewHttpKubeClient(config);
  ASSERT_TRUE(client.ok()) << client.status().ToString();

  policy::WatchSpec spec;
  spec.group = "example.com";
  spec.version = "v1";
  spec.resource = "widgets";
  spec.namespace_name = "team-a";
  InformerOptions options = WatchInformerOptions(spec, {});
  options.backoff_initial = 10ms;
  options.seed = 5;
  RecordingHandler handler;
  Informer informer(**client, handler, options);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(kWait));
  ASSERT_TRUE(handler.WaitForCalls(1));
  EXPECT_EQ(handler.calls()[0], "replace:team-a/w1");

  ASSERT_TRUE(api.WaitForWatches(FakeResource::kWidgets, 1, kWait));
  api.Apply(FakeResource::kWidgets, widget("team-b", "other", "10"));
  const std::string added = api.Apply(FakeResource::kWidgets, widget("team-a", "w2", "2"));
  const std::string modified = api.Apply(FakeResource::kWidgets, widget("team-a", "w1", "3"));
  ASSERT_FALSE(api.Delete(FakeResource::kWidgets, "team-a", "w2").empty());
  ASSERT_TRUE(handler.WaitForCalls(4));
  EXPECT_EQ(handler.calls(),
            (std::vector<std::string>{"replace:team-a/w1", "upsert:team-a/w2@" + added + "{size=2}",
                                      "upsert:team-a/w1@" + modified + "{size=3}",
                                      "delete:team-a/w2"}));
  // A watch that falls out of the window relists, as for every resource.
  api.PushGone(FakeResource::kWidgets);
  ASSERT_TRUE(Eventually([&] { return informer.Stats().relists >= 1 && !informer.Relisting(); }));
  EXPECT_EQ(handler.calls().back(), "replace:team-a/w1");
  std::vector<std::string> paths;
  for (const auto& request : api.requests()) {
    paths.push_back(request.target.substr(0, request.target.find('?')));
  }
  for (const std::string& path : paths) {
    EXPECT_EQ(path, "/apis/example.com/v1/namespaces/team-a/widgets");
  }
  informer.Stop();
}

}  // namespace
}  // namespace schedext::cluster
