// schedext against a kube-apiserver whose in-flight limits are tiny, so that
// it answers 429 Too Many Requests for real: the legacy max-in-flight filter
// (priority and fairness off, so refusals are immediate instead of queued),
// one read-only and one mutating request at a time. system:masters is exempt,
// so the test's own setup is not limited; schedext's ServiceAccount is.
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
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
using std::chrono::milliseconds;
using std::chrono::seconds;

class RateLimitTest : public ControlPlaneSuite {
 protected:
  static void SetUpTestSuite() {
    ControlPlaneOptions options;
    options.namespaces = {"default", "limits", "limits-bind"};
    options.apiserver_flags = {"--enable-priority-and-fairness=false", "--max-requests-inflight=1",
                               "--max-mutating-requests-inflight=1"};
    StartSharedControlPlane(std::move(options));
  }
};

// Read-only load from schedext's identity until `stop`.
class Hammer {
 public:
  Hammer(cluster::KubeClient& client, const std::string& path, int threads) {
    for (int i = 0; i < threads; ++i) {
      threads_.emplace_back([this, &client, path] {
        while (!stop_.load()) {
          auto r = client.Get(path);
          if (r.ok() && r->status == 429) ++refused_;
        }
      });
    }
  }
  ~Hammer() { Stop(); }
  void Stop() {
    stop_ = true;
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  int refused() const { return refused_.load(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> refused_{0};
  std::vector<std::thread> threads_;
};

TEST_F(RateLimitTest, InformersSyncThroughTooManyRequests) {
  constexpr int kPods = 30;
  std::map<std::string, std::string> want;
  for (int i = 0; i < kPods; ++i) {
    auto created =
        cp().Create("/api/v1/namespaces/limits/pods", PodJson("limits", "p" + std::to_string(i)));
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    want["p" + std::to_string(i)] = "";
  }
  auto hammer_client = NewClient(cp().schedext_kubeconfig());
  auto client = NewClient(cp().schedext_kubeconfig());
  ASSERT_NE(hammer_client, nullptr);
  ASSERT_NE(client, nullptr);
  RecordingClient recording(*client);
  cluster::ClusterCache cache;
  cluster::InformerOptions options;
  options.kind = cluster::ResourceKind::kPods;
  options.page_size = 3;
  options.backoff_initial = milliseconds(50);
  options.backoff_max = milliseconds(500);
  cluster::Informer informer(recording, cache, options);
  {
    Hammer hammer(*hammer_client, "/api/v1/namespaces/limits/pods?limit=1", 6);
    informer.Start();
    // The load lasts until the informer itself has been refused a few times
    // (bounded), then the informer must get through.
    WaitFor([&] { return recording.Count("GET", 429) >= 3; }, seconds(20));
    hammer.Stop();
    EXPECT_GT(hammer.refused(), 0) << "the API server never answered 429";
  }
  ASSERT_TRUE(informer.WaitForSync(seconds(60))) << informer.Stats().last_error;
  std::map<std::string, std::string> cached;
  cache.snapshot()->ForEachPod([&](const model::PodInfo& pod, bool) {
    if (pod.namespace_name == "limits") cached[std::string(pod.name)] = "";
  });
  EXPECT_EQ(cached, want);
  const size_t refused = recording.Count("GET", 429);
  EXPECT_GE(refused, 1u) << "the informer's LIST was never refused: the test did not test";
  EXPECT_GE(informer.Stats().failures, static_cast<int64_t>(refused));
  // The refusal is no Status object: plain text, as Go's http.Error writes it.
  for (const RecordedCall& c : recording.calls()) {
    if (c.status != 429) continue;
    EXPECT_EQ(c.body, "Too many requests, please try again later.\n");
  }
  informer.Stop();
}

TEST_F(RateLimitTest, ConcurrentBindsAreRefusedWith429AndSucceedWhenRetried) {
  constexpr int kThreads = 12;
  constexpr int kPerThread = 3;
  for (int n = 0; n < 3; ++n) {
    ASSERT_TRUE(cp().Create("/api/v1/nodes", NodeJson("limits-" + std::to_string(n))).ok());
  }
  std::vector<std::pair<std::string, std::string>> pods;  // name, uid
  for (int i = 0; i < kThreads * kPerThread; ++i) {
    const std::string name = "b" + std::to_string(i);
    auto created = cp().Create("/api/v1/namespaces/limits-bind/pods", PodJson("limits-bind", name));
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    pods.emplace_back(name, JsonString(*created, {"metadata", "uid"}));
  }
  auto client = NewClient(cp().schedext_kubeconfig());
  ASSERT_NE(client, nullptr);
  RecordingClient recording(*client);
  cluster::KubeBinder binder(recording);
  std::atomic<int> unavailable{0};
  std::atomic<int> other_errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < kPerThread; ++k) {
        const int i = t * kPerThread + k;
        const std::string node = "limits-" + std::to_string(i % 3);
        // As kube-scheduler does with a failed bind: try again (bounded).
        for (int attempt = 0; attempt < 100; ++attempt) {
          Status s = binder.Bind({"limits-bind", pods[i].first, pods[i].second, node});
          if (s.ok()) break;
          if (s.code() == StatusCode::kUnavailable &&
              s.message().find("429") != std::string::npos) {
            ++unavailable;
          } else {
            ++other_errors;
            ADD_FAILURE() << pods[i].first << ": " << s.ToString();
            break;
          }
          std::this_thread::sleep_for(milliseconds(20));
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(other_errors.load(), 0);
  EXPECT_GT(unavailable.load(), 0) << "no bind was refused: the test did not test";
  EXPECT_EQ(static_cast<size_t>(unavailable.load()), recording.Count("POST", 429));
  // Every pod is bound exactly where asked.
  for (size_t i = 0; i < pods.size(); ++i) {
    auto r = cp().AdminRequest("GET", "/api/v1/namespaces/limits-bind/pods/" + pods[i].first);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(JsonString(r->body, {"spec", "nodeName"}), "limits-" + std::to_string(i % 3))
        << pods[i].first;
  }
}

}  // namespace
}  // namespace schedext::testing
