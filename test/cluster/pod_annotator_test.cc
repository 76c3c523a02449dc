// KubePodAnnotator against the loopback FakeApiServer (its PATCH semantics,
// or scripted answers), plus the exact merge-patch body.
#include "schedext/cluster/pod_annotator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "schedext/cluster/http_kube_client.h"
#include "schedext/cluster/informer.h"
#include "testing/fake_api_server.h"

namespace schedext::cluster {
namespace {

using namespace std::chrono_literals;
using testing::FakeApiServer;
using testing::FakeResource;
using testing::FixturePod;
using KeyValues = std::vector<std::pair<std::string, std::string>>;

constexpr char kUid[] = "0c5e3f1a-7d51-4a7e-9d1e-2f0b6c1d9a10";
constexpr char kIdx[] = "ALIYUN_COM_GPU_MEM_IDX";

std::string Pod(std::string_view name) {
  nlohmann::json pod = nlohmann::json::parse(FixturePod("default", name, ""));
  pod["metadata"]["uid"] = kUid;
  pod["metadata"]["annotations"] = {{"keep", "me"}, {"stale", "x"}};
  return pod.dump();
}

nlohmann::json Annotations(const std::string& pod_json) {
  const nlohmann::json pod = nlohmann::json::parse(pod_json, nullptr, false);
  if (!pod.is_object() || !pod.contains("metadata") ||
      !pod["metadata"].contains("annotations")) {
    return nlohmann::json::object();
  }
  return pod["metadata"]["annotations"];
}

class PodAnnotatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(api_.Start()) << api_.error();
    ClientConfig c;
    c.server = api_.url();
    c.ca_pem = api_.ca_pem();
    c.token = api_.token();
    c.qps = 0;
    c.timeout = 2s;
    StatusOr<std::unique_ptr<KubeClient>> client = NewHttpKubeClient(c);
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(client).value();
    annotator_ = std::make_unique<KubePodAnnotator>(*client_);
  }

  std::string Stored(std::string_view name) {
    return api_.Get(FakeResource::kPods, "default", name);
  }

  FakeApiServer api_;
  std::unique_ptr<KubeClient> client_;
  std::unique_ptr<KubePodAnnotator> annotator_;
};

TEST(KubePodAnnotatorBodyTest, ExactMergePatch) {
  const KeyValues set = {{kIdx, "1"}, {"note", "quote \" and \\ and \n"}};
  const std::vector<std::string> remove = {"gone"};
  EXPECT_EQ(KubePodAnnotator::PatchBody({"default", "p", "U", "RV", set, remove}),
            R"({"metadata":{"uid":"U","resourceVersion":"RV","annotations":{)"
            R"("ALIYUN_COM_GPU_MEM_IDX":"1","note":"quote \" and \\ and \n","gone":null}}})");
  // No resourceVersion precondition when none is given; nothing to set.
  EXPECT_EQ(KubePodAnnotator::PatchBody({"default", "p", "U", "", {}, remove}),
            R"({"metadata":{"uid":"U","annotations":{"gone":null}}})");
  // A key both set and removed is removed.
  const KeyValues one = {{"k", "v"}};
  const std::vector<std::string> k = {"k"};
  EXPECT_EQ(KubePodAnnotator::PatchBody({"default", "p", "U", "", one, k}),
            R"({"metadata":{"uid":"U","annotations":{"k":null}}})");
}

TEST_F(PodAnnotatorTest, SetsAndRemovesAnnotationsAndReturnsTheNewVersion) {
  const std::string added_rv = api_.AddPod(Pod("web-1"));
  const KeyValues set = {{kIdx, "2"}, {"ALIYUN_COM_GPU_MEM_POD", "4"}};
  const std::vector<std::string> remove = {"stale", "never-there"};
  StatusOr<std::string> rv = annotator_->Annotate({"default", "web-1", kUid, added_rv, set, remove});
  ASSERT_TRUE(rv.ok()) << rv.status().ToString();
  EXPECT_NE(*rv, added_rv);
  EXPECT_EQ(*rv, api_.resource_version());
  const std::string stored = Stored("web-1");
  EXPECT_EQ(Annotations(stored), (nlohmann::json{{"keep", "me"},
                                                 {kIdx, "2"},
                                                 {"ALIYUN_COM_GPU_MEM_POD", "4"}}));
  const nlohmann::json pod = nlohmann::json::parse(stored);
  EXPECT_EQ(pod["metadata"]["uid"], kUid);
  EXPECT_EQ(pod["metadata"]["resourceVersion"], *rv);

  const auto requests = api_.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "PATCH");
  EXPECT_EQ(requests[0].target, "/api/v1/namespaces/default/pods/web-1");
  EXPECT_EQ(requests[0].content_type, "application/merge-patch+json");
  EXPECT_EQ(requests[0].status, 200);
  EXPECT_EQ(requests[0].body, KubePodAnnotator::PatchBody({"default", "web-1", kUid, added_rv,
                                                           set, remove}));

  // The rollback: conditional on the version the first patch returned.
  const std::vector<std::string> undo = {kIdx, "ALIYUN_COM_GPU_MEM_POD"};
  StatusOr<std::string> rv2 = annotator_->Annotate({"default", "web-1", kUid, *rv, {}, undo});
  ASSERT_TRUE(rv2.ok()) << rv2.status().ToString();
  EXPECT_EQ(Annotations(Stored("web-1")), (nlohmann::json{{"keep", "me"}}));
}

// The real API server has no UID precondition for a PATCH: the different uid
// is merged in and refused by validation (422), which the fake now imitates.
TEST_F(PodAnnotatorTest, UidMismatchIsAFailedPreconditionQuotingTheRefusal) {
  api_.AddPod(Pod("web-1"));
  const KeyValues set = {{kIdx, "0"}};
  StatusOr<std::string> rv =
      annotator_->Annotate({"default", "web-1", "another-uid", "", set, {}});
  ASSERT_FALSE(rv.ok());
  EXPECT_EQ(rv.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(rv.status().message(),
            "422 Unprocessable Entity: Pod \"web-1\" is invalid: metadata.uid: Invalid value: "
            "\"another-uid\": field is immutable");
  EXPECT_EQ(Annotations(Stored("web-1")), (nlohmann::json{{"keep", "me"}, {"stale", "x"}}));
}

TEST_F(PodAnnotatorTest, StaleResourceVersionIsAFailedPrecondition) {
  const std::string old_rv = api_.AddPod(Pod("web-1"));
  nlohmann::json pod = nlohmann::json::parse(Stored("web-1"));
  pod["spec"]["nodeName"] = "n1";
  api_.AddPod(pod.dump());  // someone else wrote the pod meanwhile
  const std::vector<std::string> remove = {"stale"};
  StatusOr<std::string> rv = annotator_->Annotate({"default", "web-1", kUid, old_rv, {}, remove});
  ASSERT_FALSE(rv.ok());
  EXPECT_EQ(rv.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(rv.status().message(),
            "409 Conflict: Operation cannot be fulfilled on pods \"web-1\": the object has been "
            "modified; please apply your changes to the latest version and try again");
  EXPECT_EQ(Annotations(Stored("web-1")), (nlohmann::json{{"keep", "me"}, {"stale", "x"}}));
}

TEST_F(PodAnnotatorTest, UnknownPodIsNotFound) {
  const KeyValues set = {{kIdx, "0"}};
  StatusOr<std::string> rv = annotator_->Annotate({"default", "ghost", kUid, "", set, {}});
  ASSERT_FALSE(rv.ok());
  EXPECT_EQ(rv.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(rv.status().message(), "404 Not Found: pods \"ghost\" not found");
}

TEST_F(PodAnnotatorTest, ServerErrorsAreUnavailable) {
  api_.AddPod(Pod("web-1"));
  api_.QueueResponse("PATCH", "/api/v1/namespaces/default/pods/web-1", 500,
                     FakeApiServer::StatusJson(500, "InternalError", "etcdserver: leader changed"));
  api_.QueueResponse("PATCH", "/api/v1/namespaces/default/pods/web-1", 429, "slow down\n");
  const KeyValues set = {{kIdx, "0"}};
  StatusOr<std::string> first = annotator_->Annotate({"default", "web-1", kUid, "", set, {}});
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(first.status().message(), "500 Internal Server Error: etcdserver: leader changed");
  StatusOr<std::string> second = annotator_->Annotate({"default", "web-1", kUid, "", set, {}});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(second.status().message(), "429 Too Many Requests: slow down");
  // The scripted answers are used up: the fake applies the next one.
  StatusOr<std::string> third = annotator_->Annotate({"default", "web-1", kUid, "", set, {}});
  ASSERT_TRUE(third.ok()) << third.status().ToString();
  EXPECT_EQ(Annotations(Stored("web-1"))[kIdx], "0");
}

TEST_F(PodAnnotatorTest, MissingFieldsAreRefusedWithoutACall) {
  const KeyValues set = {{kIdx, "0"}};
  for (const AnnotationPatch& patch :
       {AnnotationPatch{"", "web-1", kUid, "", set, {}},
        AnnotationPatch{"default", "", kUid, "", set, {}},
        AnnotationPatch{"default", "web-1", "", "", set, {}}}) {
    StatusOr<std::string> rv = annotator_->Annotate(patch);
    ASSERT_FALSE(rv.ok());
    EXPECT_EQ(rv.status().code(), StatusCode::kInvalidArgument);
  }
  EXPECT_TRUE(api_.requests().empty());
}

TEST_F(PodAnnotatorTest, FakeRefusesOtherPatchTypes) {
  api_.AddPod(Pod("web-1"));
  StatusOr<HttpResult> reply = client_->Patch("/api/v1/namespaces/default/pods/web-1",
                                              R"({"metadata":{"annotations":{"a":"b"}}})",
                                              "application/strategic-merge-patch+json");
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->status, 415);
  EXPECT_NE(reply->body.find("UnsupportedMediaType"), std::string::npos);
  EXPECT_EQ(Annotations(Stored("web-1")), (nlohmann::json{{"keep", "me"}, {"stale", "x"}}));
}

// Records pod upserts as "name:<annotation value>" for kIdx.
class AnnotationWatcher final : public InformerHandler {
 public:
  void OnReplace(ResourceKind, std::vector<InformerObject>) override {}
  void OnUpsert(ResourceKind, InformerObject object) override {
    std::string value = "-";
    if (auto found = object.pod->info().annotations.Find(kIdx)) {
      value = std::string(*found);
    }
    std::lock_guard<std::mutex> lock(mu_);
    seen_.push_back(std::string(object.pod->info().name) + ":" + value + "@" +
                    std::string(object.pod->resource_version()));
    cv_.notify_all();
  }
  void OnDelete(ResourceKind, InformerObject) override {}

  bool WaitFor(const std::string& entry) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, 10s, [&] {
      return std::find(seen_.begin(), seen_.end(), entry) != seen_.end();
    });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> seen_;
};

TEST_F(PodAnnotatorTest, WatchSeesTheModifiedPod) {
  api_.AddPod(Pod("web-1"));
  AnnotationWatcher watcher;
  InformerOptions options;
  options.kind = ResourceKind::kPods;
  options.seed = 7;
  Informer informer(*client_, watcher, options);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(10s));
  ASSERT_TRUE(api_.WaitForWatches(FakeResource::kPods, 1, 10s));
  const KeyValues set = {{kIdx, "3"}};
  StatusOr<std::string> rv = annotator_->Annotate({"default", "web-1", kUid, "", set, {}});
  ASSERT_TRUE(rv.ok()) << rv.status().ToString();
  EXPECT_TRUE(watcher.WaitFor("web-1:3@" + *rv));
  informer.Stop();
}

}  // namespace
}  // namespace schedext::cluster
