// KubeBinder against the loopback FakeApiServer (the API server's binding
// semantics, or scripted answers), plus a scripted KubeClient for the cases a
// server cannot produce on demand.
#include "schedext/cluster/kube_binder.h"

#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "schedext/cluster/http_kube_client.h"
#include "testing/fake_api_server.h"

namespace schedext::cluster {
namespace {

using namespace std::chrono_literals;
using testing::FakeApiServer;
using testing::FixturePod;

constexpr char kUid[] = "d7fb634f-ea64-4be7-ba65-f190b8c0048d";

// The fixture pod web-1, with the uid kube-scheduler sent for it.
std::string Pod(std::string_view name, std::string_view node = "") {
  nlohmann::json pod = nlohmann::json::parse(FixturePod("default", name, node));
  pod["metadata"]["uid"] = kUid;
  return pod.dump();
}

class KubeBinderTest : public ::testing::Test {
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
    binder_ = std::make_unique<KubeBinder>(*client_, [this](const BindRequest& r) {
      bound_.push_back(std::string(r.pod_name) + "@" + std::string(r.node));
    });
  }

  FakeApiServer api_;
  std::unique_ptr<KubeClient> client_;
  std::unique_ptr<KubeBinder> binder_;
  std::vector<std::string> bound_;
};

TEST_F(KubeBinderTest, CreatedBindsAndSendsTheExactBinding) {
  api_.AddPod(Pod("web-1"));
  const Status st = binder_->Bind({"default", "web-1", kUid, "lab-cpu-2"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(bound_, std::vector<std::string>{"web-1@lab-cpu-2"});
  const auto bindings = api_.bindings();
  ASSERT_EQ(bindings.size(), 1u);
  EXPECT_EQ(bindings[0].pod_namespace, "default");
  EXPECT_EQ(bindings[0].pod_name, "web-1");
  EXPECT_EQ(bindings[0].status, 201);
  EXPECT_EQ(bindings[0].body,
            R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":"web-1","namespace":)"
            R"("default","uid":"d7fb634f-ea64-4be7-ba65-f190b8c0048d"},"target":)"
            R"({"apiVersion":"v1","kind":"Node","name":"lab-cpu-2"}})");
  const auto requests = api_.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].target, "/api/v1/namespaces/default/pods/web-1/binding");
  EXPECT_EQ(requests[0].content_type, "application/json");
  // The fake applied it like the API server: spec.nodeName is set.
  EXPECT_NE(api_.Get(testing::FakeResource::kPods, "default", "web-1")
                .find("\"nodeName\":\"lab-cpu-2\""),
            std::string::npos);
}

TEST_F(KubeBinderTest, ConflictOnTheSameNodeIsSuccess) {
  // A retried bind whose first attempt succeeded: the pod is on that node.
  api_.AddPod(Pod("web-1", "n1"));
  const Status st = binder_->Bind({"default", "web-1", kUid, "n1"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(bound_.size(), 1u);
  ASSERT_EQ(api_.bindings().size(), 1u);
  EXPECT_EQ(api_.bindings()[0].status, 409);
  const auto requests = api_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].method, "GET");
  EXPECT_EQ(requests[1].target, "/api/v1/namespaces/default/pods/web-1");
}

TEST_F(KubeBinderTest, ConflictOnAnotherNodeIsAnError) {
  api_.AddPod(Pod("web-1", "n2"));
  const Status st = binder_->Bind({"default", "web-1", kUid, "n1"});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(st.message(),
            "409 Conflict: Operation cannot be fulfilled on pods/binding \"web-1\": pod web-1 is "
            "already assigned to node \"n2\"");
  EXPECT_TRUE(bound_.empty());
}

TEST_F(KubeBinderTest, ConflictForAnotherPodWithTheSameNameIsAnError) {
  // Same name and node, different uid: the pod was deleted and recreated.
  nlohmann::json pod = nlohmann::json::parse(Pod("web-1", "n1"));
  pod["metadata"]["uid"] = "another-uid";
  api_.AddPod(pod.dump());
  api_.SetBindResponse(409, FakeApiServer::StatusJson(409, "Conflict", "precondition failed"));
  const Status st = binder_->Bind({"default", "web-1", kUid, "n1"});
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  EXPECT_TRUE(bound_.empty());
}

TEST_F(KubeBinderTest, FailuresSayWhatTheApiServerAnswered) {
  struct Case {
    const char* name;
    int status;
    std::string body;
    StatusCode code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"not found", 404, FakeApiServer::StatusJson(404, "NotFound", "pods \"web-1\" not found"),
       StatusCode::kFailedPrecondition, "404 Not Found: pods \"web-1\" not found"},
      {"invalid", 422, FakeApiServer::StatusJson(422, "Invalid", "Binding is invalid"),
       StatusCode::kFailedPrecondition, "422 Unprocessable Entity: Binding is invalid"},
      {"bad request", 400, FakeApiServer::StatusJson(400, "BadRequest", "name mismatch"),
       StatusCode::kFailedPrecondition, "400 Bad Request: name mismatch"},
      {"forbidden", 403,
       FakeApiServer::StatusJson(403, "Forbidden", "cannot create resource \"pods/binding\""),
       StatusCode::kFailedPrecondition,
       "403 Forbidden: cannot create resource \"pods/binding\""},
      {"internal", 500, FakeApiServer::StatusJson(500, "InternalError", "etcd is sad"),
       StatusCode::kUnavailable, "500 Internal Server Error: etcd is sad"},
      {"throttled", 429, FakeApiServer::StatusJson(429, "TooManyRequests", "slow down"),
       StatusCode::kUnavailable, "429 Too Many Requests: slow down"},
      {"server timeout", 504, FakeApiServer::StatusJson(504, "Timeout", "timed out"),
       StatusCode::kDeadlineExceeded, "504 Gateway Timeout: timed out"},
      {"not a status", 502, "<html>bad gateway</html>\n", StatusCode::kUnavailable,
       "502 Bad Gateway: <html>bad gateway</html>"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    api_.SetBindResponse(c.status, c.body);
    const Status st = binder_->Bind({"default", "web-1", kUid, "n1"});
    EXPECT_EQ(st.code(), c.code) << st.ToString();
    EXPECT_EQ(st.message(), c.message);
  }
  EXPECT_TRUE(bound_.empty());
}

TEST_F(KubeBinderTest, DefaultNotFoundQuotesTheApiServer) {
  const Status st = binder_->Bind({"default", "ghost", kUid, "n1"});
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(st.message(), "404 Not Found: pods \"ghost\" not found");
}

TEST_F(KubeBinderTest, TimeoutIsDeadlineExceededAndNotBound) {
  api_.SetBindResponse(201, FakeApiServer::StatusJson(201, "", ""), 5000ms);
  const Status st = binder_->Bind({"default", "web-1", kUid, "n1"});
  EXPECT_EQ(st.code(), StatusCode::kDeadlineExceeded) << st.ToString();
  EXPECT_EQ(st.message().rfind("timeout after 2s", 0), 0u) << st.message();
  EXPECT_TRUE(bound_.empty());
}

TEST_F(KubeBinderTest, MissingFieldsAreRefusedWithoutACall) {
  EXPECT_EQ(binder_->Bind({"", "web-1", kUid, "n1"}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(binder_->Bind({"default", "", kUid, "n1"}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(binder_->Bind({"default", "web-1", kUid, ""}).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(api_.requests().empty());
}

TEST_F(KubeBinderTest, AnnotationsTravelInTheBindingAndLandOnThePod) {
  api_.AddPod(Pod("gpu-1"));
  const std::vector<std::pair<std::string, std::string>> annotations = {
      {"ALIYUN_COM_GPU_MEM_IDX", "1"}, {"ALIYUN_COM_GPU_MEM_POD", "4"}};
  const Status st = binder_->Bind({"default", "gpu-1", kUid, "lab-gpu-1", annotations});
  ASSERT_TRUE(st.ok()) << st.ToString();
  const auto bindings = api_.bindings();
  ASSERT_EQ(bindings.size(), 1u);
  EXPECT_EQ(bindings[0].body,
            R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":"gpu-1","namespace":)"
            R"("default","uid":"d7fb634f-ea64-4be7-ba65-f190b8c0048d","annotations":)"
            R"({"ALIYUN_COM_GPU_MEM_IDX":"1","ALIYUN_COM_GPU_MEM_POD":"4"}},"target":)"
            R"({"apiVersion":"v1","kind":"Node","name":"lab-gpu-1"}})");
  // One write, no PATCH.
  ASSERT_EQ(api_.requests().size(), 1u);
  const auto pod = nlohmann::json::parse(api_.Get(testing::FakeResource::kPods, "default", "gpu-1"));
  EXPECT_EQ(pod["spec"]["nodeName"], "lab-gpu-1");
  EXPECT_EQ(pod["metadata"]["annotations"]["ALIYUN_COM_GPU_MEM_IDX"], "1");
  EXPECT_EQ(pod["metadata"]["annotations"]["ALIYUN_COM_GPU_MEM_POD"], "4");
}

TEST_F(KubeBinderTest, ABindWhoseTurnComesAfterItsDeadlineIsNeverSent) {
  // One token, then one every 100 s: the second bind's turn is far past its
  // deadline, so it must not wait for it, nor send anything.
  ClientConfig c;
  c.server = api_.url();
  c.ca_pem = api_.ca_pem();
  c.token = api_.token();
  c.qps = 0.01;
  c.burst = 1;
  c.timeout = 2s;
  StatusOr<std::unique_ptr<KubeClient>> client = NewHttpKubeClient(c);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  KubeBinder binder(**client);
  api_.AddPod(Pod("web-1"));
  api_.AddPod(Pod("web-2"));
  const auto soon = std::chrono::steady_clock::now() + 30s;
  ASSERT_TRUE(binder.Bind({"default", "web-1", kUid, "lab-cpu-1", {}, soon}).ok());
  const Status late = binder.Bind({"default", "web-2", kUid, "lab-cpu-2", {}, soon});
  EXPECT_EQ(late.code(), StatusCode::kUnavailable);
  EXPECT_NE(late.message().find(kNotSentByDeadline), std::string::npos) << late.message();
  EXPECT_EQ(api_.requests().size(), 1u);
  EXPECT_EQ(api_.Get(testing::FakeResource::kPods, "default", "web-2").find("\"nodeName\""),
            std::string::npos);
}

TEST_F(KubeBinderTest, ABindPastItsDeadlineIsNeverSentEvenWithoutARateLimit) {
  api_.AddPod(Pod("web-1"));
  const Status late = binder_->Bind(
      {"default", "web-1", kUid, "lab-cpu-1", {}, std::chrono::steady_clock::now() - 1ms});
  EXPECT_EQ(late.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(api_.requests().empty());
  EXPECT_TRUE(bound_.empty());
}

TEST(KubeBinderBodyTest, EscapesStringsAndOmitsAnEmptyUid) {
  EXPECT_EQ(KubeBinder::BindingBody({"ns", "a\"b\\c", "", "n\n1"}),
            R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":"a\"b\\c","namespace":"ns"},)"
            R"("target":{"apiVersion":"v1","kind":"Node","name":"n\n1"}})");
}

// A KubeClient with scripted answers, for transport errors and odd paths.
class ScriptedClient final : public KubeClient {
 public:
  std::deque<StatusOr<HttpResult>> answers;
  std::vector<std::string> calls;

  StatusOr<HttpResult> Get(std::string_view path) override { return Next("GET " + std::string(path)); }
  StatusOr<HttpResult> Post(std::string_view path, std::string_view) override {
    return Next("POST " + std::string(path));
  }
  StatusOr<HttpResult> Patch(std::string_view path, std::string_view, std::string_view) override {
    return Next("PATCH " + std::string(path));
  }
  Status Watch(std::string_view, const std::function<bool(std::string_view)>&) override {
    return OkStatus();
  }
  void CancelWatches() override {}

 private:
  StatusOr<HttpResult> Next(std::string call) {
    calls.push_back(std::move(call));
    if (answers.empty()) {
      return InternalError("no scripted answer");
    }
    StatusOr<HttpResult> a = std::move(answers.front());
    answers.pop_front();
    return a;
  }
};

TEST(KubeBinderScriptedTest, TransportErrorsPassThrough) {
  ScriptedClient client;
  client.answers.push_back(UnavailableError("cannot connect to the API server (POST x)"));
  KubeBinder binder(client);
  const Status st = binder.Bind({"default", "web-1", kUid, "n1"});
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_EQ(st.message(), "cannot connect to the API server (POST x)");
}

TEST(KubeBinderScriptedTest, ConflictWhosePodCannotBeReadIsAnError) {
  ScriptedClient client;
  client.answers.push_back(HttpResult{409, FakeApiServer::StatusJson(409, "Conflict", "taken")});
  client.answers.push_back(UnavailableError("connection reset"));
  bool called = false;
  KubeBinder binder(client, [&](const BindRequest&) { called = true; });
  const Status st = binder.Bind({"default", "web-1", kUid, "n1"});
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(st.message(), "409 Conflict: taken (reading the pod back failed: connection reset)");
  EXPECT_FALSE(called);
  ASSERT_EQ(client.calls.size(), 2u);
  EXPECT_EQ(client.calls[0], "POST /api/v1/namespaces/default/pods/web-1/binding");
  EXPECT_EQ(client.calls[1], "GET /api/v1/namespaces/default/pods/web-1");
}

TEST(KubeBinderScriptedTest, AnyTwoHundredIsSuccess) {
  ScriptedClient client;
  client.answers.push_back(HttpResult{200, "{}"});
  KubeBinder binder(client);
  EXPECT_TRUE(binder.Bind({"default", "web-1", "", "n1"}).ok());
}

TEST(KubeBinderScriptedTest, PathSegmentsAreEscaped) {
  ScriptedClient client;
  client.answers.push_back(HttpResult{201, "{}"});
  KubeBinder binder(client);
  EXPECT_TRUE(binder.Bind({"ns", "a b/c", "", "n1"}).ok());
  ASSERT_EQ(client.calls.size(), 1u);
  EXPECT_EQ(client.calls[0], "POST /api/v1/namespaces/ns/pods/a%20b%2Fc/binding");
}

}  // namespace
}  // namespace schedext::cluster
