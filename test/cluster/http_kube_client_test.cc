// HttpKubeClient against the loopback FakeApiServer: TLS verification, client
// certificates, bearer tokens and their rotation, the rate limiter, watch
// streaming and cancellation, transport errors.
#include "schedext/cluster/http_kube_client.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "testing/fake_api_server.h"

namespace schedext::cluster {
namespace {

using namespace std::chrono_literals;
using testing::FakeApiServer;
using testing::FakeApiServerOptions;
using testing::FakeResource;
using testing::FixtureNode;

ClientConfig ConfigFor(const FakeApiServer& api) {
  ClientConfig c;
  c.server = api.url();
  c.ca_pem = api.ca_pem();
  c.token = api.token();
  c.qps = 0;  // no rate limit unless a test wants one
  c.timeout = 5s;
  return c;
}

std::unique_ptr<KubeClient> MustClient(const ClientConfig& c) {
  StatusOr<std::unique_ptr<KubeClient>> client = NewHttpKubeClient(c);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return client.ok() ? std::move(client).value() : nullptr;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// Collects watch lines; waits for a count (bounded).
class EventSink {
 public:
  bool operator()(std::string_view line) {
    std::lock_guard<std::mutex> lock(mu_);
    lines_.emplace_back(line);
    cv_.notify_all();
    return true;
  }
  bool WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, 10s, [&] { return lines_.size() >= n; });
  }
  std::vector<std::string> lines() {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> lines_;
};

class HttpKubeClientTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(api_.Start()) << api_.error(); }
  FakeApiServer api_;
};

TEST_F(HttpKubeClientTest, ListsOverVerifiedTlsWithBearerTokenAndUserAgent) {
  api_.AddNode(FixtureNode("n1"));
  auto client = MustClient(ConfigFor(api_));
  ASSERT_NE(client, nullptr);
  StatusOr<HttpResult> r = client->Get("/api/v1/nodes?limit=500");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("\"name\":\"n1\""), std::string::npos);
  const auto requests = api_.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].target, "/api/v1/nodes?limit=500");
  EXPECT_EQ(requests[0].authorization, "Bearer test-token");
  EXPECT_EQ(requests[0].user_agent, std::string("schedext/") + SCHEDEXT_VERSION);
}

TEST_F(HttpKubeClientTest, ReusesOneConnectionForSequentialRequests) {
  auto client = MustClient(ConfigFor(api_));
  for (int i = 0; i < 20; ++i) {
    StatusOr<HttpResult> r = client->Get("/api/v1/nodes");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->status, 200);
  }
}

TEST_F(HttpKubeClientTest, CaFileWorksLikeCaData) {
  ClientConfig c = ConfigFor(api_);
  c.ca_pem.clear();
  c.ca_file = api_.ca_file();
  auto client = MustClient(c);
  StatusOr<HttpResult> r = client->Get("/api/v1/nodes");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
}

TEST_F(HttpKubeClientTest, WrongCaFailsTheHandshake) {
  testing::TestPki other;
  std::string error;
  ASSERT_TRUE(testing::GenerateTestPki(other, error, "unrelated")) << error;
  ClientConfig c = ConfigFor(api_);
  c.ca_pem = other.ca_cert_pem;
  auto client = MustClient(c);
  StatusOr<HttpResult> r = client->Get("/api/v1/nodes");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("certificate verif"), std::string::npos)
      << r.status().message();
  EXPECT_TRUE(api_.requests().empty());  // nothing reached the handler
}

TEST_F(HttpKubeClientTest, HostNameMustMatchTheCertificate) {
  // The fake's certificate names 127.0.0.1, ::1 and localhost only.
  ClientConfig c = ConfigFor(api_);
  c.server = "https://localhost:" + std::to_string(api_.port());
  auto ok_client = MustClient(c);
  StatusOr<HttpResult> r = ok_client->Get("/api/v1/nodes");
  ASSERT_TRUE(r.ok()) << r.status().ToString();

  // 127.0.0.2 is loopback too (Linux routes 127/8 to lo) but not in the SAN.
  c.server = "https://127.0.0.2:" + std::to_string(api_.port());
  auto bad_client = MustClient(c);
  r = bad_client->Get("/api/v1/nodes");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
}

TEST_F(HttpKubeClientTest, InsecureSkipsVerification) {
  ClientConfig c = ConfigFor(api_);
  c.ca_pem.clear();
  c.insecure_skip_tls_verify = true;
  auto client = MustClient(c);
  StatusOr<HttpResult> r = client->Get("/api/v1/nodes");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
}

TEST_F(HttpKubeClientTest, InsecureWithCaIsRefused) {
  ClientConfig c = ConfigFor(api_);
  c.insecure_skip_tls_verify = true;
  StatusOr<std::unique_ptr<KubeClient>> client = NewHttpKubeClient(c);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(HttpKubeClientTest, MissingTokenIsA401Result) {
  ClientConfig c = ConfigFor(api_);
  c.token.clear();
  auto client = MustClient(c);
  StatusOr<HttpResult> r = client->Get("/api/v1/nodes");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 401);
  EXPECT_NE(r->body.find("Unauthorized"), std::string::npos);
}

TEST_F(HttpKubeClientTest, ConstructionErrors) {
  ClientConfig c = ConfigFor(api_);
  c.server = "ftp://x";
  EXPECT_EQ(NewHttpKubeClient(c).status().code(), StatusCode::kInvalidArgument);
  c.server = "https://host:99999";
  EXPECT_EQ(NewHttpKubeClient(c).status().code(), StatusCode::kInvalidArgument);
  c.server = "https://host:6443/prefix";
  EXPECT_EQ(NewHttpKubeClient(c).status().code(), StatusCode::kInvalidArgument);
  c = ConfigFor(api_);
  c.ca_pem = "not pem";
  EXPECT_EQ(NewHttpKubeClient(c).status().code(), StatusCode::kInvalidArgument);
  c = ConfigFor(api_);
  c.qps = 5;
  c.burst = 0;
  EXPECT_EQ(NewHttpKubeClient(c).status().code(), StatusCode::kInvalidArgument);
  c = ConfigFor(api_);
  c.client_cert_pem = api_.pki().client_cert_pem;
  c.client_key_pem = api_.pki().server_key_pem;  // a key of another certificate
  StatusOr<std::unique_ptr<KubeClient>> mismatched = NewHttpKubeClient(c);
  ASSERT_FALSE(mismatched.ok());
  EXPECT_NE(mismatched.status().message().find("does not match"), std::string::npos);
  c = ConfigFor(api_);
  c.server = "https://[::1]:6443";
  EXPECT_TRUE(NewHttpKubeClient(c).ok());
}

TEST_F(HttpKubeClientTest, TokenFileRotationIsPickedUp) {
  const std::string token_file = api_.dir() + "/token";
  WriteFile(token_file, "first-token\n");
  api_.SetToken("first-token");
  ClientConfig c = ConfigFor(api_);
  c.token.clear();
  c.token_file = token_file;
  c.token_file_check_interval = 0ms;  // check the file before every request
  auto client = MustClient(c);
  StatusOr<HttpResult> r = client->Get("/api/v1/nodes");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);

  // The kubelet rotates the token: a new file (different size, so the change
  // is seen even where mtimes are coarse).
  WriteFile(token_file, "second-token-rotated\n");
  api_.SetToken("second-token-rotated");
  r = client->Get("/api/v1/nodes");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
  const auto requests = api_.requests();
  ASSERT_EQ(requests.size(), 2u);  // no 401 in between
  EXPECT_EQ(requests[0].authorization, "Bearer first-token");
  EXPECT_EQ(requests[1].authorization, "Bearer second-token-rotated");
}

TEST_F(HttpKubeClientTest, UnauthorizedRereadsTheTokenFileAndRetriesOnce) {
  const std::string token_file = api_.dir() + "/token";
  WriteFile(token_file, "old");
  api_.SetToken("old");
  ClientConfig c = ConfigFor(api_);
  c.token.clear();
  c.token_file = token_file;
  c.token_file_check_interval = 1h;  // only the 401 makes it look again
  auto client = MustClient(c);
  ASSERT_EQ(client->Get("/api/v1/nodes")->status, 200);

  WriteFile(token_file, "new");
  api_.SetToken("new");
  StatusOr<HttpResult> r = client->Post("/api/v1/namespaces/default/pods/p/binding", "{}");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 400);  // reached the binding handler with the new token (empty body)
  const auto requests = api_.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[1].status, 401);
  EXPECT_EQ(requests[1].authorization, "Bearer old");
  EXPECT_EQ(requests[2].authorization, "Bearer new");
  EXPECT_EQ(requests[2].body, "{}");

  // A 401 with an unchanged file is returned as is, without a retry loop.
  api_.SetToken("something-else");
  r = client->Get("/api/v1/nodes");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(api_.requests().size(), 4u);
}

TEST(HttpKubeClientMtlsTest, ClientCertificateIsPresented) {
  FakeApiServerOptions options;
  options.require_client_cert = true;
  options.token.clear();
  FakeApiServer api(options);
  ASSERT_TRUE(api.Start()) << api.error();
  ClientConfig c = ConfigFor(api);
  auto anonymous = MustClient(c);
  EXPECT_FALSE(anonymous->Get("/api/v1/nodes").ok());

  c.client_cert_file = api.client_cert_file();
  c.client_key_file = api.client_key_file();
  auto with_file = MustClient(c);
  StatusOr<HttpResult> r = with_file->Get("/api/v1/nodes");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);

  c.client_cert_file.clear();
  c.client_key_file.clear();
  c.client_cert_pem = api.pki().client_cert_pem;
  c.client_key_pem = api.pki().client_key_pem;
  auto with_data = MustClient(c);
  r = with_data->Get("/api/v1/nodes");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
}

TEST(HttpKubeClientPlainTest, RateLimiterSpacesRequests) {
  FakeApiServerOptions options;
  options.tls = false;
  FakeApiServer api(options);
  ASSERT_TRUE(api.Start()) << api.error();
  ClientConfig c;
  c.server = api.url();
  c.token = api.token();
  c.qps = 5;    // one token per 200 ms
  c.burst = 1;  // the first request goes at once, the 2nd waits ~200 ms, the 3rd ~400 ms
  auto client = MustClient(c);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(client->Get("/api/v1/nodes")->status, 200);
  }
  const auto requests = api.requests();
  ASSERT_EQ(requests.size(), 3u);
  // A lower bound only (the limiter guarantees it; nothing here depends on
  // the machine being fast): 400 ms nominal, with room for clock granularity.
  EXPECT_GE(requests[2].received - requests[0].received, 350ms);
  EXPECT_GE(requests[1].received - requests[0].received, 150ms);
}

TEST(HttpKubeClientPlainTest, BurstRequestsAreNotDelayed) {
  FakeApiServerOptions options;
  options.tls = false;
  FakeApiServer api(options);
  ASSERT_TRUE(api.Start()) << api.error();
  ClientConfig c;
  c.server = api.url();
  c.token = api.token();
  c.qps = 0.5;  // a refill every 2 s: a 4th request would wait
  c.burst = 3;
  auto client = MustClient(c);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(client->Get("/api/v1/nodes")->status, 200);
  }
  auto fourth = std::async(std::launch::async, [&] { return client->Get("/api/v1/nodes"); });
  // Ordering, not speed: the 4th is not sent before its token exists (2 s).
  ASSERT_EQ(fourth.wait_for(60s), std::future_status::ready);
  ASSERT_EQ(fourth.get()->status, 200);
  const auto requests = api.requests();
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_GE(requests[3].received - start, 1900ms);
}

TEST_F(HttpKubeClientTest, TimeoutIsDeadlineExceeded) {
  api_.SetBindResponse(201, FakeApiServer::StatusJson(201, "", ""), 3000ms);
  ClientConfig c = ConfigFor(api_);
  c.timeout = 300ms;
  auto client = MustClient(c);
  StatusOr<HttpResult> r = client->Post("/api/v1/namespaces/default/pods/p/binding", "{}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(r.status().message().rfind("timeout after 300ms", 0), 0u) << r.status().message();
}

TEST(HttpKubeClientNoServerTest, ConnectionRefusedIsUnavailable) {
  int port = 0;
  {
    FakeApiServer api;
    ASSERT_TRUE(api.Start()) << api.error();
    port = api.port();
  }  // stopped: the port now refuses connections
  ClientConfig c;
  c.server = "https://127.0.0.1:" + std::to_string(port);
  c.insecure_skip_tls_verify = true;
  c.qps = 0;
  auto client = MustClient(c);
  StatusOr<HttpResult> r = client->Get("/api/v1/nodes");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
}

// --- Watch ------------------------------------------------------------------

TEST_F(HttpKubeClientTest, WatchStreamsLinesSplitAcrossChunks) {
  api_.SetToken("test-token");
  auto client = MustClient(ConfigFor(api_));
  EventSink sink;
  std::future<Status> done = std::async(std::launch::async, [&] {
    return client->Watch("/api/v1/nodes?watch=1&resourceVersion=1000&allowWatchBookmarks=true",
                         [&](std::string_view line) { return sink(line); });
  });
  ASSERT_TRUE(api_.WaitForWatches(FakeResource::kNodes, 1, 10s));
  // One event in three chunks (split inside the JSON), then two in one chunk
  // with a CRLF and an empty line between them.
  api_.PushWatchBytes(FakeResource::kNodes, "{\"type\":\"ADD");
  api_.PushWatchBytes(FakeResource::kNodes, "ED\",\"object\":{\"a\":");
  api_.PushWatchBytes(FakeResource::kNodes, "1}}\n{\"type\":\"BOOKMARK\"}\r\n\n{\"type\":\"X\"}\n");
  ASSERT_TRUE(sink.WaitFor(3));
  api_.AddNode(FixtureNode("n9"));  // a real ADDED event
  api_.PushBookmark(FakeResource::kNodes);
  ASSERT_TRUE(sink.WaitFor(5));
  api_.EndWatches();
  ASSERT_EQ(done.wait_for(30s), std::future_status::ready);
  EXPECT_TRUE(done.get().ok());
  const auto lines = sink.lines();
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0], "{\"type\":\"ADDED\",\"object\":{\"a\":1}}");
  EXPECT_EQ(lines[1], "{\"type\":\"BOOKMARK\"}");
  EXPECT_EQ(lines[2], "{\"type\":\"X\"}");
  EXPECT_EQ(lines[3].rfind("{\"type\":\"ADDED\",\"object\":{\"kind\":\"Node\"", 0), 0u) << lines[3];
  EXPECT_EQ(lines[4].rfind("{\"type\":\"BOOKMARK\"", 0), 0u) << lines[4];
}

TEST_F(HttpKubeClientTest, WatchDroppedMidEventIsUnavailable) {
  auto client = MustClient(ConfigFor(api_));
  EventSink sink;
  std::future<Status> done = std::async(std::launch::async, [&] {
    return client->Watch("/api/v1/pods?watch=1&resourceVersion=1000",
                         [&](std::string_view line) { return sink(line); });
  });
  ASSERT_TRUE(api_.WaitForWatches(FakeResource::kPods, 1, 10s));
  api_.PushWatchEvent(FakeResource::kPods, "ADDED", "{\"metadata\":{\"name\":\"p\"}}");
  ASSERT_TRUE(sink.WaitFor(1));
  api_.DropWatches(/*mid_event=*/true);
  ASSERT_EQ(done.wait_for(30s), std::future_status::ready);
  const Status st = done.get();
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find("incomplete event"), std::string::npos) << st.message();
  EXPECT_EQ(sink.lines().size(), 1u);  // the half event was not delivered
}

TEST_F(HttpKubeClientTest, WatchErrorStatusIsReported) {
  api_.QueueResponse("GET", "/api/v1/nodes?watch=1", 410,
                     FakeApiServer::StatusJson(410, "Expired", "too old resource version"));
  auto client = MustClient(ConfigFor(api_));
  Status st = client->Watch("/api/v1/nodes?watch=1&resourceVersion=5",
                            [](std::string_view) { return true; });
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("410"), std::string::npos);
  EXPECT_NE(st.message().find("too old resource version"), std::string::npos);

  api_.QueueResponse("GET", "/api/v1/nodes?watch=1", 503, "{}");
  st = client->Watch("/api/v1/nodes?watch=1", [](std::string_view) { return true; });
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
}

TEST_F(HttpKubeClientTest, WatchStopsWhenTheCallbackSaysSo) {
  api_.AddNode(FixtureNode("a"));
  api_.AddNode(FixtureNode("b"));
  auto client = MustClient(ConfigFor(api_));
  int calls = 0;
  // resourceVersion=0: the fake first sends ADDED for both nodes.
  Status st = client->Watch("/api/v1/nodes?watch=1&resourceVersion=0", [&](std::string_view) {
    ++calls;
    return false;
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(calls, 1);
}

TEST_F(HttpKubeClientTest, CancelWatchesInterruptsABlockedRead) {
  ClientConfig c = ConfigFor(api_);
  c.watch_idle_timeout = std::chrono::seconds(250);  // only a real interrupt ends it in time
  auto client = MustClient(c);
  std::vector<std::future<Status>> watches;
  for (int i = 0; i < 3; ++i) {
    watches.push_back(std::async(std::launch::async, [&] {
      return client->Watch("/api/v1/nodes?watch=1&resourceVersion=1000",
                           [](std::string_view) { return true; });
    }));
  }
  ASSERT_TRUE(api_.WaitForWatches(FakeResource::kNodes, 3, 10s));
  client->CancelWatches();
  for (auto& w : watches) {
    // Generous bound, far below the 250 s read timeout.
    ASSERT_EQ(w.wait_for(60s), std::future_status::ready);
    EXPECT_TRUE(w.get().ok());
  }
  // Later watches return at once, without a request.
  const size_t before = api_.requests().size();
  EXPECT_TRUE(client->Watch("/api/v1/nodes?watch=1", [](std::string_view) { return true; }).ok());
  EXPECT_EQ(api_.requests().size(), before);
  // Plain requests still work after the watches are cancelled.
  EXPECT_EQ(client->Get("/api/v1/nodes")->status, 200);
}

TEST_F(HttpKubeClientTest, CancelWatchesRacingWithStartNeverHangs) {
  // Cancel at various points of a watch's start-up; every Watch must return.
  for (int i = 0; i < 20; ++i) {
    ClientConfig c = ConfigFor(api_);
    c.watch_idle_timeout = std::chrono::seconds(250);
    auto client = MustClient(c);
    std::future<Status> w = std::async(std::launch::async, [&] {
      return client->Watch("/api/v1/nodes?watch=1&resourceVersion=1000",
                           [](std::string_view) { return true; });
    });
    if (i % 2 == 0) {
      std::this_thread::yield();
    }
    client->CancelWatches();
    ASSERT_EQ(w.wait_for(60s), std::future_status::ready) << "iteration " << i;
    EXPECT_TRUE(w.get().ok());
  }
}

TEST_F(HttpKubeClientTest, WatchRetriesOnceAfter401WithARotatedToken) {
  const std::string token_file = api_.dir() + "/token";
  WriteFile(token_file, "old");
  api_.SetToken("new");
  ClientConfig c = ConfigFor(api_);
  c.token = "stale";
  c.token_file = token_file;
  c.token_file_check_interval = 1h;
  auto client = MustClient(c);
  // The token source has read "old" by now, and keeps it (the file did not change).
  ASSERT_EQ(client->Get("/api/v1/nodes")->status, 401);
  WriteFile(token_file, "new");
  EventSink sink;
  std::future<Status> done = std::async(std::launch::async, [&] {
    return client->Watch("/api/v1/nodes?watch=1&resourceVersion=1000",
                         [&](std::string_view line) { return sink(line); });
  });
  ASSERT_TRUE(api_.WaitForWatches(FakeResource::kNodes, 1, 10s));
  api_.EndWatches();
  ASSERT_EQ(done.wait_for(30s), std::future_status::ready);
  EXPECT_TRUE(done.get().ok());
  const auto requests = api_.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[1].status, 401);
  EXPECT_EQ(requests[1].authorization, "Bearer old");
  EXPECT_EQ(requests[2].status, 200);
  EXPECT_EQ(requests[2].authorization, "Bearer new");
}

// --- Keep-alive connections the server closes -------------------------------
//
// A FaultProxy between the client and the fake injects what a real API
// server does to an idle keep-alive connection, and counts it, so each test
// sees the client's answer and, on the server side, the connections opened
// and the requests that arrived.

std::string BindingBody(const std::string& pod, const std::string& node) {
  return R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":")" + pod +
         R"(","namespace":"default"},"target":{"apiVersion":"v1","kind":"Node","name":")" + node +
         R"("}})";
}

class StaleConnectionTest : public ::testing::TestWithParam<bool> {  // TLS?
 protected:
  void SetUp() override {
    FakeApiServerOptions options;
    options.tls = GetParam();
    api_ = std::make_unique<FakeApiServer>(options);
    ASSERT_TRUE(api_->Start()) << api_->error();
    proxy_ = std::make_unique<testing::FaultProxy>(api_->port());
    ASSERT_TRUE(proxy_->Start()) << proxy_->error();
  }
  ClientConfig Config() const {
    ClientConfig c = ConfigFor(*api_);
    c.server = proxy_->url(GetParam());
    return c;
  }
  size_t Requests(const std::string& method) const {
    size_t n = 0;
    for (const auto& r : api_->requests()) {
      n += r.method == method ? 1 : 0;
    }
    return n;
  }

  std::unique_ptr<FakeApiServer> api_;
  std::unique_ptr<testing::FaultProxy> proxy_;  // destroyed first
};

INSTANTIATE_TEST_SUITE_P(TlsAndPlain, StaleConnectionTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "Tls" : "Plain";
                         });

TEST_P(StaleConnectionTest, GetOnAConnectionClosedWhileIdleIsRetriedOnceOnANewOne) {
  proxy_->SetIdleReset(300ms);
  auto client = MustClient(Config());
  ASSERT_EQ(client->Get("/api/v1/nodes")->status, 200);
  ASSERT_EQ(client->Get("/api/v1/nodes")->status, 200);
  EXPECT_EQ(proxy_->connections(), 1u);  // kept alive
  std::this_thread::sleep_for(450ms);
  StatusOr<HttpResult> r = client->Get("/api/v1/nodes?after=idle");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  // The server side: the kept connection was reset as the request came, and
  // exactly one more connection carried the request once.
  EXPECT_EQ(proxy_->idle_resets(), 1u);
  EXPECT_EQ(proxy_->connections(), 2u);
  const auto requests = api_->requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[2].target, "/api/v1/nodes?after=idle");
}

TEST_P(StaleConnectionTest, BindingOnAConnectionClosedWhileIdleIsRetriedAndBindsOnce) {
  api_->AddPod(testing::FixturePod("default", "p1"));
  api_->AddNode(FixtureNode("n1"));
  proxy_->SetIdleReset(300ms);
  auto client = MustClient(Config());
  ASSERT_EQ(client->Get("/api/v1/nodes")->status, 200);
  std::this_thread::sleep_for(450ms);
  StatusOr<HttpResult> r =
      client->Post("/api/v1/namespaces/default/pods/p1/binding", BindingBody("p1", "n1"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 201) << r->body;
  EXPECT_EQ(proxy_->idle_resets(), 1u);
  EXPECT_EQ(proxy_->connections(), 2u);
  const auto bindings = api_->bindings();
  ASSERT_EQ(bindings.size(), 1u);
  EXPECT_EQ(bindings[0].status, 201);
}

TEST_P(StaleConnectionTest, AFailureOnAFreshConnectionIsNotRetried) {
  proxy_->ResetNewConnections(1);
  auto client = MustClient(Config());
  StatusOr<HttpResult> r = client->Get("/api/v1/nodes");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
  EXPECT_EQ(proxy_->new_connection_resets(), 1u);
  EXPECT_EQ(proxy_->connections(), 1u);
  EXPECT_EQ(api_->requests().size(), 0u);
  // The next call works on a connection of its own.
  ASSERT_EQ(client->Get("/api/v1/nodes")->status, 200);
  EXPECT_EQ(proxy_->connections(), 2u);
}

TEST_P(StaleConnectionTest, TheRetryIsMadeOnlyOnce) {
  proxy_->SetIdleReset(300ms);
  auto client = MustClient(Config());
  ASSERT_EQ(client->Get("/api/v1/nodes")->status, 200);
  proxy_->ResetNewConnections(1);  // the retry's new connection fails too
  std::this_thread::sleep_for(450ms);
  StatusOr<HttpResult> r = client->Post("/api/v1/namespaces/default/pods/p1/binding", "{}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
  EXPECT_EQ(proxy_->idle_resets(), 1u);
  EXPECT_EQ(proxy_->new_connection_resets(), 1u);
  EXPECT_EQ(proxy_->connections(), 2u);
  EXPECT_EQ(Requests("POST"), 0u);
}

TEST_P(StaleConnectionTest, IdleConnectionsAreDroppedBeforeTheServerClosesThem) {
  // No fault: the server would keep the connection (the fake's keep-alive
  // lasts 5 s), yet the client opens a new one once its own limit passed.
  ClientConfig c = Config();
  c.idle_connection_timeout = 200ms;
  auto client = MustClient(c);
  ASSERT_EQ(client->Get("/api/v1/nodes")->status, 200);
  ASSERT_EQ(client->Get("/api/v1/nodes")->status, 200);
  EXPECT_EQ(proxy_->connections(), 1u);
  std::this_thread::sleep_for(400ms);
  ASSERT_EQ(client->Get("/api/v1/nodes")->status, 200);
  EXPECT_EQ(proxy_->connections(), 2u);
  EXPECT_EQ(api_->requests().size(), 3u);
  ASSERT_EQ(client->Get("/api/v1/nodes")->status, 200);
  EXPECT_EQ(proxy_->connections(), 2u);  // and keeps the new one
}

TEST_P(StaleConnectionTest, ZeroIdleTimeoutReusesNothing) {
  ClientConfig c = Config();
  c.idle_connection_timeout = 0ms;
  auto client = MustClient(c);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(client->Get("/api/v1/nodes")->status, 200);
  }
  EXPECT_EQ(proxy_->connections(), 3u);
}

TEST_P(StaleConnectionTest, LargeBodiesArriveWholeOverOneConnection) {
  // Bodies of several read chunks (plain reads are 256 KiB), twice on the
  // same connection, so nothing read ahead for one response leaks into the next.
  for (int i = 0; i < 400; ++i) {
    char name[16];
    std::snprintf(name, sizeof(name), "node-%03d", i);  // the fake lists in name order
    api_->AddNode(FixtureNode(name));
  }
  auto client = MustClient(Config());
  for (int round = 0; round < 2; ++round) {
    StatusOr<HttpResult> r = client->Get("/api/v1/nodes");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->status, 200);
    EXPECT_GT(r->body.size(), size_t{1} << 20);
    const nlohmann::json list = nlohmann::json::parse(r->body, nullptr, false);
    ASSERT_FALSE(list.is_discarded());
    ASSERT_EQ(list["items"].size(), 400u);
    EXPECT_EQ(list["items"][399]["metadata"]["name"], "node-399");
  }
  EXPECT_EQ(proxy_->connections(), 1u);
}

// Plain HTTP, so that the cut falls inside the response's bytes (a cut TLS
// record would not show a byte).
TEST(StaleConnectionPlainTest, AResponseThatBrokeOffIsNotRetried) {
  FakeApiServerOptions options;
  options.tls = false;
  FakeApiServer api(options);
  ASSERT_TRUE(api.Start()) << api.error();
  testing::FaultProxy proxy(api.port());
  ASSERT_TRUE(proxy.Start()) << proxy.error();
  api.AddPod(testing::FixturePod("default", "p1"));
  api.AddNode(FixtureNode("n1"));
  ClientConfig c = ConfigFor(api);
  c.server = proxy.url(false);
  auto client = MustClient(c);
  ASSERT_EQ(client->Get("/api/v1/nodes")->status, 200);  // the POST reuses this connection
  proxy.CutNextResponseAfter(20);                        // "HTTP/1.1 201 Created" and no more
  StatusOr<HttpResult> r =
      client->Post("/api/v1/namespaces/default/pods/p1/binding", BindingBody("p1", "n1"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("while reading the response"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(proxy.cut_responses(), 1u);
  EXPECT_EQ(proxy.connections(), 1u);
  const auto bindings = api.bindings();
  ASSERT_EQ(bindings.size(), 1u);  // executed once, not sent again
  EXPECT_EQ(bindings[0].status, 201);
}

}  // namespace
}  // namespace schedext::cluster
