// HttpServer over real loopback sockets: routing, status codes, headers, body
// limits, keep-alive, chunked bodies, broken clients and concurrency. Every
// exchange is done with the raw client of testing/loopback.h, so the tests see
// exactly what kube-scheduler's Go client would see on the wire.
#include "schedext/server/http_server.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "schedext/server/metrics.h"
#include "schedext/server/service.h"
#include "testing/json_builders.h"
#include "testing/loopback.h"
#include "testing/test_service.h"

namespace schedext::server {
namespace {

using nlohmann::json;
using schedext::testing::BuildRequest;
using schedext::testing::ChunkedBody;
using schedext::testing::Exchange;
using schedext::testing::HeaderList;
using schedext::testing::HttpReply;
using schedext::testing::RawConnection;
using schedext::testing::ReadFileToString;

constexpr std::string_view kConfig = R"(
profiles:
  - name: default
    policies:
      - name: NodeHealth
      - name: TaintToleration
  - name: labels
    policies:
      - name: NodeLabel
        args:
          preferred:
            - weight: 1
              matchLabels:
                topology.kubernetes.io/zone: zone-a
)";

constexpr size_t kMaxBody = size_t{1} << 20;
constexpr std::string_view kVersion = "9.8.7-test";

std::string Fixture(std::string_view mode, std::string_view name) {
  return ReadFileToString(std::string(SCHEDEXT_TESTDATA_DIR) + "/kube-scheduler-1.26/" +
                          std::string(mode) + "/" + std::string(name) + ".json");
}

// The "items" names of a full-mode filter reply, in order.
std::vector<std::string> ItemNames(const json& nodes) {
  std::vector<std::string> names;
  for (const json& item : nodes.at("items")) {
    names.push_back(item.at("metadata").at("name").get<std::string>());
  }
  return names;
}

json ParseJson(const std::string& text) { return json::parse(text, nullptr, false); }

// kConfig's service on 127.0.0.1:<free port> (testing/test_service.h), with
// this file's body limit and version, serving until destroyed.
class TestServer : public schedext::testing::LoopbackServer {
 public:
  explicit TestServer(const std::function<void(HttpServerOptions&)>& tweak = nullptr)
      : LoopbackServer({.config_yaml = kConfig}, [&tweak](HttpServerOptions& options) {
          options.server.max_body_bytes = kMaxBody;
          options.version = std::string(kVersion);
          if (tweak) tweak(options);
        }) {}
  ~TestServer() { AwaitServing(); }
};

// The service logs every failed request at warn: quiet while a test runs.
class QuietLog {
 public:
  QuietLog() : saved_(spdlog::get_level()) { spdlog::set_level(spdlog::level::err); }
  ~QuietLog() { spdlog::set_level(saved_); }
  QuietLog(const QuietLog&) = delete;
  QuietLog& operator=(const QuietLog&) = delete;

 private:
  spdlog::level::level_enum saved_;
};

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<TestServer>();
    ASSERT_TRUE(server_->init().ok()) << server_->init().ToString();
    filter3_ = Fixture("nodecache-false", "filter-3");
    prioritize4_ = Fixture("nodecache-false", "prioritize-4");
    bind1_ = Fixture("nodecache-false", "bind-1");
    ASSERT_FALSE(filter3_.empty());
    ASSERT_FALSE(prioritize4_.empty());
    ASSERT_FALSE(bind1_.empty());
  }
  void TearDown() override { server_.reset(); }

  int port() const { return server_->port(); }
  HttpReply Post(std::string_view target, std::string_view body, const HeaderList& headers = {}) {
    return Exchange(port(), BuildRequest("POST", target, body, headers));
  }
  HttpReply Get(std::string_view target, const HeaderList& headers = {}) {
    return Exchange(port(), BuildRequest("GET", target, "", headers));
  }

  // Checks the reply to filter-3 under the default profile: the pod tolerates
  // every taint, so all five nodes pass, echoed in request order.
  void ExpectFilter3Passes(const HttpReply& reply) {
    ASSERT_EQ(reply.status, 200) << reply.reason << " " << reply.body;
    EXPECT_EQ(reply.Header("Content-Type"), "application/json");
    const json body = ParseJson(reply.body);
    ASSERT_FALSE(body.is_discarded()) << reply.body;
    ASSERT_TRUE(body.contains("Nodes")) << reply.body;
    EXPECT_EQ(ItemNames(body["Nodes"]),
              (std::vector<std::string>{"lab-cp-1", "lab-cpu-2", "lab-cpu-1", "lab-gpu-2",
                                        "lab-gpu-1"}));
    // The items are the request's node objects, unmodified.
    EXPECT_EQ(body["Nodes"]["items"], ParseJson(filter3_)["Nodes"]["items"]);
    ASSERT_TRUE(body.contains("NodeNames"));
    EXPECT_TRUE(body["NodeNames"].is_null());
    EXPECT_EQ(body.value("Error", std::string("<missing>")), "");
  }

  QuietLog quiet_;
  std::unique_ptr<TestServer> server_;
  std::string filter3_;
  std::string prioritize4_;
  std::string bind1_;
};

// prioritize-4 under the "labels" profile: zone-a nodes get the whole weight;
// the others score 0, the lowest, and are left out.
const json kPrioritize4Labels = json::parse(R"([
  {"Host":"lab-cpu-1","Score":10},
  {"Host":"lab-gpu-1","Score":10}
])");

constexpr std::string_view kNoApiMessage =
    "bind default/web-1 to lab-cpu-2: schedext has no Kubernetes API connection, so it cannot "
    "create the Binding; remove bindVerb from the scheduler's extender config";

TEST_F(HttpServerTest, FilterFullModeAnswersNodeObjects) {
  const HttpReply reply = Post("/filter", filter3_, {{"Accept-Encoding", "gzip"}});
  ExpectFilter3Passes(reply);
  EXPECT_FALSE(reply.Header("Content-Encoding").has_value());
  EXPECT_EQ(reply.Header("Content-Length"), std::to_string(reply.body.size()));
}

// The full-mode filter reply is written in pieces, its nodes straight from
// the request body (Scratch::splice_replies): the bytes on the wire are still
// exactly the reply, for two requests in a row on one keep-alive connection
// (the second body reuses the first one's worker) and for a pipelined pair.
TEST_F(HttpServerTest, FullModeFilterReplyIsExactOnTheWire) {
  json request = ParseJson(filter3_);
  ASSERT_FALSE(request.is_discarded());
  std::vector<std::string> bodies;
  std::vector<std::string> want;
  for (int failing : {1, 4}) {  // lab-cpu-2 (a gap), then lab-gpu-1 (the tail) not ready
    json changed = request;
    for (json& c : changed["Nodes"]["items"][failing]["status"]["conditions"]) {
      if (c["type"] == "Ready") c["status"] = "Unknown";
    }
    bodies.push_back(changed.dump());
    std::string expected = R"({"Nodes":{"metadata":{},"items":[)";
    bool first = true;
    for (int i = 0; i < 5; ++i) {
      if (i == failing) continue;
      if (!first) expected += ',';
      first = false;
      expected += changed["Nodes"]["items"][i].dump();
    }
    const std::string name = changed["Nodes"]["items"][failing]["metadata"]["name"];
    expected += R"(]},"NodeNames":null,"FailedNodes":{},"FailedAndUnresolvableNodes":{")" + name +
                R"(":"node(s) were not ready"},"Error":""})" "\n";
    want.push_back(expected);
  }
  RawConnection c;
  ASSERT_TRUE(c.Connect(port())) << c.error();
  for (size_t i = 0; i < bodies.size(); ++i) {
    ASSERT_TRUE(c.Send(BuildRequest("POST", "/filter", bodies[i]))) << c.error();
    HttpReply reply;
    ASSERT_TRUE(c.ReadReply(reply)) << c.error();
    EXPECT_EQ(reply.status, 200);
    EXPECT_EQ(reply.Header("Content-Length"), std::to_string(want[i].size()));
    EXPECT_EQ(reply.body, want[i]);
  }
  ASSERT_TRUE(c.Send(BuildRequest("POST", "/filter", bodies[1]) +
                     BuildRequest("POST", "/filter", bodies[0])))
      << c.error();
  for (size_t i : {size_t{1}, size_t{0}}) {
    HttpReply reply;
    ASSERT_TRUE(c.ReadReply(reply)) << c.error();
    EXPECT_EQ(reply.body, want[i]);
  }
}

TEST_F(HttpServerTest, RepliesAreNeverCompressed) {
  const HeaderList gzip = {{"Accept-Encoding", "gzip, deflate, br"}};
  struct Case {
    std::string name;
    HttpReply reply;
    int want_status;
  };
  const std::vector<Case> cases = {
      {"filter", Post("/filter", filter3_, gzip), 200},
      {"prioritize", Post("/labels/prioritize", prioritize4_, gzip), 200},
      {"bind", Post("/bind", bind1_, gzip), 200},
      {"malformed body", Post("/filter", "{\"Pod\":", gzip), 400},
      {"unknown profile", Post("/nope/filter", filter3_, gzip), 404},
      {"unknown path", Get("/unknown", gzip), 404},
      {"wrong method", Get("/filter", gzip), 405},
      {"metrics", Get("/metrics", gzip), 200},
      {"version", Get("/version", gzip), 200},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.reply.status, c.want_status) << c.reply.reason;
    EXPECT_FALSE(c.reply.Header("Content-Encoding").has_value())
        << *c.reply.Header("Content-Encoding");
    EXPECT_FALSE(c.reply.body.empty());
  }
}

TEST_F(HttpServerTest, ProfileRoutePrioritizeAnswersExactScores) {
  const HttpReply reply = Post("/labels/prioritize", prioritize4_);
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(reply.Header("Content-Type"), "application/json");
  EXPECT_EQ(ParseJson(reply.body), kPrioritize4Labels) << reply.body;
}

TEST_F(HttpServerTest, VerbRoutesTolerateTrailingSlashQueryAndProfilePrefix) {
  for (const char* target : {"/filter", "/filter/", "/filter?x=1", "/filter/?x=1&y=2",
                             "/default/filter", "/default/filter/"}) {
    SCOPED_TRACE(target);
    ExpectFilter3Passes(Post(target, filter3_));
  }
  for (const char* target : {"/labels/prioritize/", "/labels/prioritize?pod=x"}) {
    SCOPED_TRACE(target);
    const HttpReply reply = Post(target, prioritize4_);
    ASSERT_EQ(reply.status, 200) << reply.body;
    EXPECT_EQ(ParseJson(reply.body), kPrioritize4Labels);
  }
}

TEST_F(HttpServerTest, UnknownProfileIs404WithJsonError) {
  const HttpReply reply = Post("/nope/filter", filter3_);
  ASSERT_EQ(reply.status, 404);
  EXPECT_EQ(reply.Header("Content-Type"), "application/json");
  const json body = ParseJson(reply.body);
  ASSERT_TRUE(body.is_object()) << reply.body;
  EXPECT_NE(body.value("Error", std::string()).find("\"nope\""), std::string::npos)
      << reply.body;
}

TEST_F(HttpServerTest, WrongMethodIs405WithAllow) {
  struct Case {
    std::string method;
    std::string target;
    std::string allow;
  };
  const std::vector<Case> cases = {
      {"GET", "/filter", "POST"},         {"GET", "/labels/prioritize", "POST"},
      {"PUT", "/bind", "POST"},           {"DELETE", "/filter/", "POST"},
      {"POST", "/healthz", "GET"},        {"POST", "/metrics", "GET"},
      {"PUT", "/readyz", "GET"},          {"DELETE", "/version", "GET"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.method + " " + c.target);
    const HttpReply reply = Exchange(port(), BuildRequest(c.method, c.target, ""));
    ASSERT_EQ(reply.status, 405) << reply.reason;
    EXPECT_EQ(reply.Header("Allow"), c.allow);
    EXPECT_EQ(reply.HeaderCount("Allow"), 1u);
    const json body = ParseJson(reply.body);
    ASSERT_TRUE(body.is_object()) << reply.body;
    EXPECT_NE(body.value("Error", std::string()).find("use " + c.allow), std::string::npos)
        << reply.body;
  }
}

TEST_F(HttpServerTest, UnknownPathIs404WithJsonError) {
  for (const char* method : {"GET", "POST"}) {
    SCOPED_TRACE(method);
    const HttpReply reply = Exchange(port(), BuildRequest(method, "/unknown", "{}"));
    ASSERT_EQ(reply.status, 404);
    EXPECT_EQ(reply.Header("Content-Type"), "application/json");
    const json body = ParseJson(reply.body);
    ASSERT_TRUE(body.is_object()) << reply.body;
    EXPECT_NE(body.value("Error", std::string()).find("/unknown"), std::string::npos)
        << reply.body;
  }
}

TEST_F(HttpServerTest, HealthReadinessAndVersion) {
  const HttpReply health = Get("/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "ok\n");
  const HttpReply ready = Get("/readyz");
  EXPECT_EQ(ready.status, 200);
  EXPECT_EQ(ready.body, "ok\n");
  const HttpReply version = Get("/version");
  ASSERT_EQ(version.status, 200);
  EXPECT_EQ(version.Header("Content-Type"), "application/json");
  EXPECT_EQ(ParseJson(version.body), json({{"version", std::string(kVersion)}}));
}

TEST(HttpServerReadyTest, ReadyzAnswers503WhileNotReady) {
  std::atomic<bool> ready{false};
  TestServer server([&ready](HttpServerOptions& o) { o.ready = [&ready] { return ready.load(); }; });
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  HttpReply reply = Exchange(server.port(), BuildRequest("GET", "/readyz", ""));
  EXPECT_EQ(reply.status, 503);
  EXPECT_NE(reply.body.find("not ready"), std::string::npos) << reply.body;
  // Liveness does not depend on readiness.
  EXPECT_EQ(Exchange(server.port(), BuildRequest("GET", "/healthz", "")).status, 200);
  ready = true;
  reply = Exchange(server.port(), BuildRequest("GET", "/readyz", ""));
  EXPECT_EQ(reply.status, 200);
}

TEST_F(HttpServerTest, MetricsCountRequestsByProfileVerbAndOutcome) {
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(Post("/filter", filter3_).status, 200);
  }
  ASSERT_EQ(Post("/default/filter", filter3_).status, 200);
  ASSERT_EQ(Post("/filter", "not json").status, 400);
  ASSERT_EQ(Post("/labels/prioritize", prioritize4_).status, 200);
  ASSERT_EQ(Post("/labels/prioritize", prioritize4_).status, 200);
  ASSERT_EQ(Post("/bind", bind1_).status, 200);

  const HttpReply reply = Get("/metrics");
  ASSERT_EQ(reply.status, 200);
  EXPECT_EQ(reply.Header("Content-Type"), "text/plain; version=0.0.4");
  const std::string& text = reply.body;
  EXPECT_NE(text.find("schedext_requests_total{profile=\"default\",verb=\"filter\",outcome=\"ok\"} "
                      "4\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("schedext_requests_total{profile=\"default\",verb=\"filter\",outcome="
                      "\"bad_request\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("schedext_requests_total{profile=\"labels\",verb=\"prioritize\",outcome="
                      "\"ok\"} 2\n"),
            std::string::npos)
      << text;
  // A bind without an API connection answers 200 with an Error: an error outcome.
  EXPECT_NE(text.find("schedext_requests_total{profile=\"default\",verb=\"bind\",outcome="
                      "\"error\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("schedext_requests_total{profile=\"labels\",verb=\"filter\",outcome=\"ok\"} "
                      "0\n"),
            std::string::npos)
      << text;
}

TEST_F(HttpServerTest, ContentTypeMustBeJsonWhenGiven) {
  const HttpReply text = Post("/filter", filter3_, {{"Content-Type", "text/plain"}});
  ASSERT_EQ(text.status, 415);
  const json body = ParseJson(text.body);
  ASSERT_TRUE(body.is_object()) << text.body;
  EXPECT_NE(body.value("Error", std::string()).find("application/json"), std::string::npos)
      << text.body;

  // What `curl -d @body.json` sends without -H: also refused, with the hint.
  const HttpReply form =
      Post("/filter", filter3_, {{"Content-Type", "application/x-www-form-urlencoded"}});
  EXPECT_EQ(form.status, 415);

  // No Content-Type at all, parameters, other casing and +json are accepted.
  ExpectFilter3Passes(
      Exchange(port(), BuildRequest("POST", "/filter", filter3_, {}, /*json_content_type=*/false)));
  ExpectFilter3Passes(Post("/filter", filter3_, {{"Content-Type", "application/json; charset=utf-8"}}));
  ExpectFilter3Passes(Post("/filter", filter3_, {{"Content-Type", "Application/JSON"}}));
  ExpectFilter3Passes(Post("/filter", filter3_, {{"Content-Type", "application/merge+json"}}));
}

TEST_F(HttpServerTest, BodyOverLimitIs413AndServingContinues) {
  // A well-formed JSON document just over the limit: the limit alone rejects it.
  std::string big = "{\"Pod\":null,\"pad\":\"";
  big.append(kMaxBody, 'x');
  big.append("\"}");
  {
    RawConnection c;
    ASSERT_TRUE(c.Connect(port())) << c.error();
    ASSERT_TRUE(c.Send(BuildRequest("POST", "/filter", big, {{"Accept-Encoding", "gzip"}})))
        << c.error();
    HttpReply reply;
    ASSERT_TRUE(c.ReadReply(reply)) << c.error();
    EXPECT_EQ(reply.status, 413);
    EXPECT_FALSE(reply.Header("Content-Encoding").has_value());
    const json body = ParseJson(reply.body);
    ASSERT_TRUE(body.is_object()) << reply.body;
    EXPECT_NE(body.value("Error", std::string()).find("too large"), std::string::npos)
        << reply.body;
  }
  {
    // The same over chunked framing, where the size is only known while reading.
    RawConnection c;
    ASSERT_TRUE(c.Connect(port())) << c.error();
    ASSERT_TRUE(c.Send(BuildRequest("POST", "/filter", ChunkedBody(big, 64 * 1024),
                                    {{"Transfer-Encoding", "chunked"}})))
        << c.error();
    HttpReply reply;
    ASSERT_TRUE(c.ReadReply(reply)) << c.error();
    EXPECT_EQ(reply.status, 413);
    EXPECT_TRUE(ParseJson(reply.body).contains("Error")) << reply.body;
  }
  // A body exactly at the limit is read (and then rejected as a bad document
  // only because of its content).
  std::string at_limit = "[";
  at_limit.append(kMaxBody - 2, ' ');
  at_limit.append("]");
  ASSERT_EQ(at_limit.size(), kMaxBody);
  EXPECT_EQ(Post("/filter", at_limit).status, 400);
  ExpectFilter3Passes(Post("/filter", filter3_));
}

TEST_F(HttpServerTest, BadBodiesAre400AndTheConnectionStaysUsable) {
  std::string truncated = filter3_.substr(0, filter3_.size() / 2);
  std::string deep(100000, '[');
  struct Case {
    std::string name;
    std::string target;
    std::string body;
  };
  const std::vector<Case> cases = {
      {"malformed", "/filter", "{\"Pod\": {]"},
      {"empty", "/filter", ""},
      {"truncated", "/filter", truncated},
      {"wrong types", "/filter", R"({"Pod":5,"Nodes":"x","NodeNames":{}})"},
      {"deep nesting", "/filter", deep},
      {"not an object", "/filter", "[1,2,3]"},
      {"prioritize malformed", "/labels/prioritize", "{"},
      {"prioritize deep nesting", "/prioritize", deep},
      {"bind wrong types", "/bind", R"({"PodName":1,"PodNamespace":[],"Node":null})"},
      {"bind empty", "/bind", ""},
      {"preempt malformed", "/preempt", "{\"Pod\":"},
  };
  RawConnection c;
  ASSERT_TRUE(c.Connect(port())) << c.error();
  for (const Case& cs : cases) {
    SCOPED_TRACE(cs.name);
    ASSERT_TRUE(c.Send(BuildRequest("POST", cs.target, cs.body))) << c.error();
    HttpReply reply;
    ASSERT_TRUE(c.ReadReply(reply)) << c.error();
    EXPECT_EQ(reply.status, 400) << reply.body;
    EXPECT_EQ(reply.Header("Content-Type"), "application/json");
    EXPECT_FALSE(reply.Header("Connection").has_value()) << *reply.Header("Connection");
    const json body = ParseJson(reply.body);
    ASSERT_TRUE(body.is_object()) << reply.body;
    ASSERT_TRUE(body.contains("Error")) << reply.body;
    EXPECT_FALSE(body["Error"].get<std::string>().empty()) << reply.body;
  }
  // The same connection still serves a valid request, and a body with trailing
  // whitespace is valid (protocol checklist item 13).
  ASSERT_TRUE(c.Send(BuildRequest("POST", "/filter", filter3_ + "\n \r\n\t"))) << c.error();
  HttpReply reply;
  ASSERT_TRUE(c.ReadReply(reply)) << c.error();
  ExpectFilter3Passes(reply);
}

// Replies sent before the body is read must not desynchronise a keep-alive
// connection: either the body is consumed and the connection serves the next
// request, or the server says `Connection: close` and closes it.
TEST_F(HttpServerTest, EarlyRejectionsKeepTheConnectionConsistent) {
  struct Case {
    std::string name;
    std::string request;
    int want_status;
  };
  const std::vector<Case> cases = {
      {"unknown profile", BuildRequest("POST", "/nope/filter", filter3_), 404},
      {"text/plain", BuildRequest("POST", "/filter", filter3_, {{"Content-Type", "text/plain"}}),
       415},
      {"POST /healthz", BuildRequest("POST", "/healthz", filter3_), 405},
      {"PUT /filter", BuildRequest("PUT", "/filter", filter3_), 405},
      {"POST /unknown", BuildRequest("POST", "/unknown", filter3_), 404},
  };
  for (const Case& cs : cases) {
    SCOPED_TRACE(cs.name);
    RawConnection c;
    ASSERT_TRUE(c.Connect(port())) << c.error();
    ASSERT_TRUE(c.Send(cs.request)) << c.error();
    HttpReply reply;
    ASSERT_TRUE(c.ReadReply(reply)) << c.error();
    EXPECT_EQ(reply.status, cs.want_status) << reply.body;
    EXPECT_TRUE(ParseJson(reply.body).contains("Error")) << reply.body;
    if (reply.Header("Connection") == "close") {
      EXPECT_TRUE(c.PeerClosedWithin(5000));
      continue;
    }
    ASSERT_TRUE(c.Send(BuildRequest("POST", "/filter", filter3_))) << c.error();
    HttpReply next;
    ASSERT_TRUE(c.ReadReply(next)) << c.error();
    ExpectFilter3Passes(next);
  }
}

TEST_F(HttpServerTest, KeepAliveServesOneHundredRequestsOnOneConnection) {
  RawConnection c;
  ASSERT_TRUE(c.Connect(port())) << c.error();
  for (int i = 0; i < 100; ++i) {
    SCOPED_TRACE(i);
    const bool filter = i % 2 == 0;
    ASSERT_TRUE(c.Send(filter ? BuildRequest("POST", "/filter", filter3_,
                                             {{"Accept-Encoding", "gzip"}})
                              : BuildRequest("POST", "/labels/prioritize", prioritize4_,
                                             {{"Accept-Encoding", "gzip"}})))
        << c.error();
    HttpReply reply;
    ASSERT_TRUE(c.ReadReply(reply)) << c.error();
    ASSERT_EQ(reply.status, 200);
    ASSERT_NE(reply.Header("Connection"), "close");
    if (filter) {
      ExpectFilter3Passes(reply);
    } else {
      ASSERT_EQ(ParseJson(reply.body), kPrioritize4Labels);
    }
  }
  EXPECT_FALSE(c.PeerClosedWithin(0));
  // Still usable after the hundredth reply.
  ASSERT_TRUE(c.Send(BuildRequest("GET", "/healthz", ""))) << c.error();
  HttpReply reply;
  ASSERT_TRUE(c.ReadReply(reply)) << c.error();
  EXPECT_EQ(reply.status, 200);
}

TEST_F(HttpServerTest, ChunkedRequestBodyIsAccepted) {
  const HttpReply plain = Post("/filter", filter3_);
  ASSERT_EQ(plain.status, 200);
  RawConnection c;
  ASSERT_TRUE(c.Connect(port())) << c.error();
  for (size_t chunk : {size_t{1000}, size_t{7}, filter3_.size()}) {
    SCOPED_TRACE(chunk);
    ASSERT_TRUE(c.Send(BuildRequest("POST", "/filter", ChunkedBody(filter3_, chunk),
                                    {{"Transfer-Encoding", "chunked"}})))
        << c.error();
    HttpReply reply;
    ASSERT_TRUE(c.ReadReply(reply)) << c.error();
    ExpectFilter3Passes(reply);
    EXPECT_EQ(reply.body, plain.body);
  }
}

TEST_F(HttpServerTest, ClientClosingMidBodyDoesNotHurtTheServer) {
  {
    RawConnection c;
    ASSERT_TRUE(c.Connect(port())) << c.error();
    std::string request = "POST /filter HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                          "application/json\r\nContent-Length: 1000\r\n\r\n";
    request.append(filter3_.substr(0, 10));
    ASSERT_TRUE(c.Send(request)) << c.error();
    c.ShutdownWrite();
    // Whatever the server answers (if anything), it must then close.
    HttpReply reply;
    if (c.ReadReply(reply)) {
      EXPECT_GE(reply.status, 400);
    }
  }
  {
    // The same with a chunked body cut inside a chunk, and a hard close.
    RawConnection c;
    ASSERT_TRUE(c.Connect(port())) << c.error();
    std::string request = BuildRequest("POST", "/filter", "", {{"Transfer-Encoding", "chunked"}});
    request.append("400\r\n").append(filter3_.substr(0, 100));
    ASSERT_TRUE(c.Send(request)) << c.error();
  }
  ExpectFilter3Passes(Post("/filter", filter3_));
  EXPECT_EQ(Get("/healthz").status, 200);
}

TEST_F(HttpServerTest, ConcurrentFilterPrioritizeAndBindGetExactReplies) {
  // The exact reply of each request, taken one at a time first.
  struct Call {
    std::string target;
    const std::string* body;
    std::string want;
  };
  std::vector<Call> calls = {
      {"/filter", &filter3_, ""},
      {"/labels/prioritize", &prioritize4_, ""},
      {"/prioritize", &prioritize4_, ""},
      {"/bind", &bind1_, ""},
  };
  for (Call& call : calls) {
    const HttpReply reply = Post(call.target, *call.body);
    ASSERT_EQ(reply.status, 200) << call.target << ": " << reply.body;
    call.want = reply.body;
  }
  ExpectFilter3Passes(Post("/filter", filter3_));
  ASSERT_EQ(ParseJson(calls[1].want), kPrioritize4Labels);
  ASSERT_EQ(ParseJson(calls[3].want), json({{"Error", std::string(kNoApiMessage)}}));

  constexpr int kThreads = 8;
  constexpr int kRequests = 50;
  std::vector<std::vector<std::string>> failures(kThreads);
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      RawConnection c;
      for (int i = 0; i < kRequests; ++i) {
        const Call& call = calls[static_cast<size_t>(t + i) % calls.size()];
        // Odd threads reconnect every tenth request, so accepts overlap requests.
        if (!c.connected() || (t % 2 == 1 && i % 10 == 0)) {
          if (!c.Connect(port())) {
            failures[static_cast<size_t>(t)].push_back("connect: " + c.error());
            return;
          }
        }
        HttpReply reply;
        if (!c.Send(BuildRequest("POST", call.target, *call.body, {{"Accept-Encoding", "gzip"}})) ||
            !c.ReadReply(reply)) {
          failures[static_cast<size_t>(t)].push_back(call.target + ": " + c.error());
          return;
        }
        if (reply.status != 200 || reply.body != call.want) {
          failures[static_cast<size_t>(t)].push_back(call.target + ": status " +
                                                     std::to_string(reply.status) + " body " +
                                                     reply.body.substr(0, 200));
          continue;
        }
        ok.fetch_add(1);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_TRUE(failures[static_cast<size_t>(t)].empty())
        << "thread " << t << ": " << failures[static_cast<size_t>(t)].front();
  }
  EXPECT_EQ(ok.load(), kThreads * kRequests);
}

TEST_F(HttpServerTest, SecondServerOnTheSamePortFailsToBind) {
  const int taken = port();
  auto built = schedext::testing::MakeTestService({.config_yaml = kConfig});
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  HttpServerOptions options;
  options.server.host = "127.0.0.1";
  options.server.port = taken;
  HttpServer second(*built->service, built->metrics.get(), options);
  const Status s = second.Bind();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("127.0.0.1:" + std::to_string(taken)), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("cannot bind"), std::string::npos) << s.message();
  // The first server keeps every connection.
  for (int i = 0; i < 5; ++i) {
    ExpectFilter3Passes(Post("/filter", filter3_));
  }
}

// server.parallelDecodeBytes: a full-mode body decoded by two threads, cut
// between two nodes, gets byte for byte the reply of the one-thread decode,
// its echoed nodes spliced from the body across the cut.
TEST(HttpServerParallelDecodeTest, LargeFullBodiesGetTheOneThreadReply) {
  QuietLog quiet;
  std::vector<std::string> nodes;
  std::vector<std::string> passing;
  for (int i = 0; i < 60; ++i) {
    testing::NodeJson node("node-" + std::to_string(i));
    node.Realistic().Ready().Allocatable("cpu", "4");
    if (i % 3 == 1) {
      // Scores lower in TaintToleration: the others are listed by prioritize.
      node.Taint("spot", "true", "PreferNoSchedule");
    }
    if (i % 9 == 4) {
      node.Taint("dedicated", "db", "NoSchedule");  // fails TaintToleration
    } else {
      passing.push_back(node.name());
    }
    nodes.push_back(node.Build());
  }
  testing::PodJson pod("p");
  pod.Realistic().Request("cpu", "100m");
  const std::string body = testing::ExtenderArgsFullJson(pod.Build(), nodes);
  std::string want[2];
  for (const size_t parallel_bytes : {size_t{0}, size_t{1}}) {
    TestServer server([&](HttpServerOptions& o) { o.server.parallel_decode_bytes = parallel_bytes; });
    ASSERT_TRUE(server.init().ok()) << server.init().ToString();
    for (const char* verb : {"/filter", "/prioritize"}) {
      const HttpReply reply = Exchange(server.port(), BuildRequest("POST", verb, body));
      ASSERT_EQ(reply.status, 200) << verb << ": " << reply.body;
      std::string& expected = want[verb[1] == 'f' ? 0 : 1];
      if (parallel_bytes == 0) {
        expected = reply.body;
      } else {
        EXPECT_EQ(reply.body, expected) << verb;
      }
    }
  }
  // The body arriving in pieces, so its head is walked while the rest
  // arrives; and a connection that stops after 90 % of a body, which leaves
  // such a walk to be settled before its worker serves the next request.
  TestServer server([](HttpServerOptions& o) { o.server.parallel_decode_bytes = 1; });
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  for (int round = 0; round < 2; ++round) {
    {
      RawConnection abandoned;
      ASSERT_TRUE(abandoned.Connect(server.port())) << abandoned.error();
      const std::string request = BuildRequest("POST", "/filter", body);
      ASSERT_TRUE(abandoned.Send(std::string_view(request).substr(0, request.size() * 9 / 10)))
          << abandoned.error();
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
    }
    RawConnection c;
    ASSERT_TRUE(c.Connect(server.port())) << c.error();
    for (const char* verb : {"/filter", "/prioritize"}) {
      const std::string request = BuildRequest("POST", verb, body);
      size_t from = 0;
      for (const size_t permille : {100, 700, 800, 900, 1000}) {
        const size_t cut = request.size() * permille / 1000;
        ASSERT_TRUE(c.Send(std::string_view(request).substr(from, cut - from))) << c.error();
        from = cut;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      HttpReply reply;
      ASSERT_TRUE(c.ReadReply(reply)) << verb << ": " << c.error();
      EXPECT_EQ(reply.status, 200) << verb;
      EXPECT_EQ(reply.body, want[verb[1] == 'f' ? 0 : 1]) << verb << " in pieces";
    }
  }
  const json filtered = ParseJson(want[0]);
  EXPECT_EQ(ItemNames(filtered["Nodes"]), passing);
  EXPECT_EQ(filtered["Nodes"]["items"][0], ParseJson(nodes[0]));
  EXPECT_GT(ParseJson(want[1]).size(), nodes.size() / 2);
}

// Bodies of a MiB and more are read with the socket's low-water mark raised
// (SetReceiveLowWater). A body arriving in uneven pieces, its last ones far
// smaller than the mark, must still be read to its end, and the tiny request
// that follows on the same connection must be read too: a mark left above
// the bytes still due would stall either until the client gives up.
TEST(HttpServerLowWaterTest, LargeBodiesInPiecesAndTheTinyRequestAfterThemAreRead) {
  QuietLog quiet;
  std::vector<std::string> nodes;
  for (int i = 0; i < 3000; ++i) {
    testing::NodeJson node("node-" + std::to_string(i));
    node.Realistic().Ready().Allocatable("cpu", "4");
    nodes.push_back(node.Build());
  }
  testing::PodJson pod("p");
  pod.Realistic().Request("cpu", "100m");
  const std::string body = testing::ExtenderArgsFullJson(pod.Build(), nodes);
  ASSERT_GT(body.size(), size_t{3} << 20);  // several times the mark
  TestServer server([](HttpServerOptions& o) { o.server.max_body_bytes = size_t{16} << 20; });
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  const std::string request = BuildRequest("POST", "/filter", body);
  const HttpReply whole = Exchange(server.port(), request);
  ASSERT_EQ(whole.status, 200) << whole.body.substr(0, 200);
  EXPECT_EQ(ItemNames(ParseJson(whole.body)["Nodes"]).size(), nodes.size());
  RawConnection c;
  ASSERT_TRUE(c.Connect(server.port())) << c.error();
  for (int round = 0; round < 2; ++round) {
    size_t from = 0;
    for (const size_t per_10k : {300, 6000, 9900, 9990, 9999, 10000}) {
      const size_t cut = request.size() * per_10k / 10000;
      ASSERT_TRUE(c.Send(std::string_view(request).substr(from, cut - from))) << c.error();
      from = cut;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    HttpReply reply;
    ASSERT_TRUE(c.ReadReply(reply)) << "round " << round << ": " << c.error();
    EXPECT_EQ(reply.status, 200);
    EXPECT_EQ(reply.body, whole.body) << "round " << round;
    ASSERT_TRUE(c.Send(BuildRequest("GET", "/healthz", ""))) << c.error();
    ASSERT_TRUE(c.ReadReply(reply)) << "round " << round << ": " << c.error();
    EXPECT_EQ(reply.status, 200);
  }
}

// server.keepLargeBuffers: with keepBufferBytes far below the fixtures' size,
// every request borrows the one spare set of buffers and gives it back. Bodies
// of different sizes on different connections (so different workers), chunked
// bodies, refused bodies and concurrent requests must each get exactly the
// reply of a server that frees everything, never bytes of an earlier body.
TEST(HttpServerSpareBuffersTest, RequestsGetExactRepliesWhicheverBuffersTheyBorrow) {
  QuietLog quiet;
  const std::string filter3 = Fixture("nodecache-false", "filter-3");
  const std::string prioritize4 = Fixture("nodecache-false", "prioritize-4");
  ASSERT_FALSE(filter3.empty());
  ASSERT_FALSE(prioritize4.empty());
  // Trailing whitespace makes a larger body with the same document.
  const std::string filter3_padded = filter3 + std::string(60000, ' ');
  struct Call {
    std::string target;
    std::string request;
    std::string want;
  };
  std::vector<Call> calls = {
      {"/filter", BuildRequest("POST", "/filter", filter3_padded), ""},
      {"/filter", BuildRequest("POST", "/filter", filter3), ""},
      {"/labels/prioritize", BuildRequest("POST", "/labels/prioritize", prioritize4), ""},
      {"/filter", BuildRequest("POST", "/filter", ChunkedBody(filter3, 4096),
                               {{"Transfer-Encoding", "chunked"}}),
       ""},
      {"/prioritize", BuildRequest("POST", "/prioritize", prioritize4 + "\n\n"), ""},
  };
  {
    TestServer reference([](HttpServerOptions& o) {
      o.server.keep_buffer_bytes = 0;
      o.server.keep_large_buffers = false;
    });
    ASSERT_TRUE(reference.init().ok()) << reference.init().ToString();
    for (Call& call : calls) {
      const HttpReply reply = Exchange(reference.port(), call.request);
      ASSERT_EQ(reply.status, 200) << call.target << ": " << reply.body;
      call.want = reply.body;
    }
  }
  ASSERT_EQ(ItemNames(ParseJson(calls[0].want)["Nodes"]).size(), 5u);
  ASSERT_EQ(calls[0].want, calls[1].want);

  TestServer server([](HttpServerOptions& o) {
    o.server.keep_buffer_bytes = 512;
    o.server.keep_large_buffers = true;
  });
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  // Largest body first, then smaller ones that borrow its buffers, each on a
  // new connection; twice round, with a broken body in between.
  for (int round = 0; round < 2; ++round) {
    for (const Call& call : calls) {
      const HttpReply reply = Exchange(server.port(), call.request);
      EXPECT_EQ(reply.status, 200) << call.target;
      EXPECT_EQ(reply.body, call.want) << call.target << " round " << round;
    }
    const HttpReply broken =
        Exchange(server.port(), BuildRequest("POST", "/filter", filter3.substr(0, 9000)));
    EXPECT_EQ(broken.status, 400) << broken.body;
  }

  constexpr int kThreads = 4;
  constexpr int kRequests = 40;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      RawConnection c;
      if (!c.Connect(server.port())) {
        failures[static_cast<size_t>(t)] = "connect: " + c.error();
        return;
      }
      for (int i = 0; i < kRequests; ++i) {
        const Call& call = calls[static_cast<size_t>(t + i) % calls.size()];
        HttpReply reply;
        if (!c.Send(call.request) || !c.ReadReply(reply)) {
          failures[static_cast<size_t>(t)] = call.target + ": " + c.error();
          return;
        }
        if (reply.status != 200 || reply.body != call.want) {
          failures[static_cast<size_t>(t)] =
              call.target + ": status " + std::to_string(reply.status) + " request " +
              std::to_string(i) + " body " + reply.body.substr(0, 200);
          return;
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(failures[static_cast<size_t>(t)], "") << "thread " << t;
  }
}

// Content-Length bodies are read straight into the request buffer: the
// connection must stay in step with the requests whatever way the bytes
// arrive (whole, in pieces with pauses, two requests in one write), and a body
// that stops arriving is cut off at the body deadline.
TEST(HttpServerBodyReadTest, KeepAliveStaysInStepWhateverWayTheBodyArrives) {
  QuietLog quiet;
  const std::string filter3 = Fixture("nodecache-false", "filter-3");
  const std::string prioritize4 = Fixture("nodecache-false", "prioritize-4");
  ASSERT_FALSE(filter3.empty());
  ASSERT_FALSE(prioritize4.empty());
  const std::vector<std::pair<std::string, std::string>> calls = {
      {"/filter", filter3},
      {"/filter", filter3 + std::string(70000, ' ')},
      {"/labels/prioritize", prioritize4},
      {"/filter", filter3 + std::string(5000, '\n')},
  };
  std::vector<std::string> want;
  {
    TestServer reference;
    ASSERT_TRUE(reference.init().ok()) << reference.init().ToString();
    for (const auto& [target, body] : calls) {
      const HttpReply reply = Exchange(reference.port(), BuildRequest("POST", target, body));
      ASSERT_EQ(reply.status, 200) << target << ": " << reply.body;
      want.push_back(reply.body);
    }
  }
  TestServer server([](HttpServerOptions& o) { o.server.body_timeout_seconds = 1; });
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();

  RawConnection c;
  ASSERT_TRUE(c.Connect(server.port())) << c.error();
  auto expect_reply = [&](size_t call, const std::string& how) {
    HttpReply reply;
    ASSERT_TRUE(c.ReadReply(reply)) << how << ": " << c.error();
    EXPECT_EQ(reply.status, 200) << how;
    EXPECT_EQ(reply.body, want[call]) << how << " call " << call;
  };
  for (size_t i = 0; i < calls.size(); ++i) {
    ASSERT_TRUE(c.Send(BuildRequest("POST", calls[i].first, calls[i].second))) << c.error();
    expect_reply(i, "whole");
  }
  // In three pieces with pauses: the headers and a little of the body, most
  // of it, the rest.
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string request = BuildRequest("POST", calls[i].first, calls[i].second);
    const size_t header_end = request.find("\r\n\r\n") + 4;
    const std::vector<size_t> cuts = {header_end + 100, request.size() - 7, request.size()};
    size_t from = 0;
    for (size_t cut : cuts) {
      ASSERT_TRUE(c.Send(std::string_view(request).substr(from, cut - from))) << c.error();
      from = cut;
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
    }
    expect_reply(i, "in pieces");
  }
  // Two requests in one write: the first body must not swallow the second.
  ASSERT_TRUE(c.Send(BuildRequest("POST", calls[1].first, calls[1].second) +
                     BuildRequest("POST", calls[2].first, calls[2].second)))
      << c.error();
  expect_reply(1, "pipelined first");
  expect_reply(2, "pipelined second");

  // A body that stops halfway: once the body deadline passes, the server
  // closes the connection rather than wait or read the rest as a request.
  RawConnection stalled;
  ASSERT_TRUE(stalled.Connect(server.port())) << stalled.error();
  const std::string request = BuildRequest("POST", "/filter", calls[1].second);
  ASSERT_TRUE(stalled.Send(std::string_view(request).substr(0, request.size() / 2)))
      << stalled.error();
  EXPECT_TRUE(stalled.PeerClosedWithin(5000));
  HttpReply reply;
  EXPECT_FALSE(stalled.ReadReply(reply)) << reply.status;

  // The first connection is still served.
  ASSERT_TRUE(c.Send(BuildRequest("POST", calls[0].first, calls[0].second))) << c.error();
  expect_reply(0, "after the stalled client");
}

}  // namespace
}  // namespace schedext::server
