// The listener against slow, broken and hostile clients, over real loopback
// sockets: every limit and framing rule with its exact status, silent and
// slowloris connections held open while others are served, header floods,
// smuggling attempts, trickled bodies, resets mid-request, the connection
// limit, bind off the I/O threads, and the drain. Timeouts here bound
// liveness; nothing asserts speed.
#include <gtest/gtest.h>
#include <poll.h>
#include <spdlog/spdlog.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "schedext/cluster/binder.h"
#include "schedext/pipeline/bind_cycle.h"
#include "schedext/policy/policy.h"
#include "schedext/policy/registry.h"
#include "schedext/server/http_server.h"
#include "schedext/server/metrics.h"
#include "schedext/server/service.h"
#include "testing/loopback.h"
#include "testing/test_service.h"

namespace schedext::server {
namespace {

using nlohmann::json;
using schedext::testing::BuildRequest;
using schedext::testing::Exchange;
using schedext::testing::HttpReply;
using schedext::testing::RawConnection;
using schedext::testing::ReadFileToString;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr std::string_view kConfig = R"(
profiles:
  - name: default
    policies:
      - name: NodeHealth
      - name: TaintToleration
)";

std::string Filter3() {
  return ReadFileToString(std::string(SCHEDEXT_TESTDATA_DIR) +
                          "/kube-scheduler-1.26/nodecache-false/filter-3.json");
}
std::string Bind1() {
  return ReadFileToString(std::string(SCHEDEXT_TESTDATA_DIR) +
                          "/kube-scheduler-1.26/nodecache-false/bind-1.json");
}

// Whether `reply` is filter-3's: all five nodes pass.
bool Filter3Passed(const HttpReply& reply) {
  if (reply.status != 200) return false;
  const json body = json::parse(reply.body, nullptr, false);
  return body.is_object() && body.contains("Nodes") && body["Nodes"]["items"].size() == 5 &&
         body.value("Error", std::string("x")).empty();
}

// Holds every caller of Hold() until released: a filter policy (RegisterIn)
// whose request takes as long as the test likes, or a hanging API server.
class Gate {
 public:
  void Hold() const {
    std::unique_lock<std::mutex> lock(mu_);
    ++entered_;
    cv_.notify_all();
    cv_.wait_for(lock, std::chrono::seconds(20), [this] { return released_; });
  }
  bool WaitEntered(int n) const {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return entered_ >= n; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  bool released() const {
    std::lock_guard<std::mutex> lock(mu_);
    return released_;
  }
  int entered() const {
    std::lock_guard<std::mutex> lock(mu_);
    return entered_;
  }

  // Registers policy "Gate" in `registry`, held by this gate.
  void RegisterIn(policy::Registry& registry) const {
    class GatePolicy final : public policy::Policy, public policy::FilterHook {
     public:
      explicit GatePolicy(const Gate& gate) : gate_(gate) {}
      std::string_view Name() const override { return "Gate"; }
      const policy::FilterHook* AsFilter() const override { return this; }
      Status PreFilter(policy::RequestState&, const model::PodInfo&) const override {
        gate_.Hold();
        return OkStatus();
      }
      policy::Verdict Filter(const policy::RequestState&, const model::PodInfo&,
                             const model::NodeInfo&) const override {
        return {};
      }

     private:
      const Gate& gate_;
    };
    EXPECT_TRUE(registry
                    .Register("Gate",
                              [this](const json&, const policy::PolicyContext&)
                                  -> StatusOr<std::unique_ptr<policy::Policy>> {
                                return std::unique_ptr<policy::Policy>(new GatePolicy(*this));
                              })
                    .ok());
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable int entered_ = 0;
  bool released_ = false;
};

// A PodBinder that blocks every Bind until released, like an API server that
// hangs.
class BlockingBinder final : public cluster::PodBinder {
 public:
  Status Bind(const cluster::BindRequest&) override {
    gate_.Hold();
    return OkStatus();
  }
  bool WaitEntered(int n) { return gate_.WaitEntered(n); }
  int entered() const { return gate_.entered(); }
  void Release() { gate_.Release(); }

 private:
  Gate gate_;
};

// The service on 127.0.0.1:<free port> (testing/test_service.h), serving on
// its own thread until Stop() or destruction. With a `gate`, its profile is
// the Gate policy alone.
class Server : public schedext::testing::LoopbackServer {
 public:
  explicit Server(const std::function<void(HttpServerOptions&)>& tweak = nullptr,
                  cluster::PodBinder* binder = nullptr, const Gate* gate = nullptr)
      : LoopbackServer(
            {.config_yaml = gate != nullptr
                                ? "profiles:\n  - name: default\n    policies:\n      - name: Gate\n"
                                : kConfig,
             .binder = binder,
             .register_more =
                 [gate](policy::Registry& registry) {
                   if (gate != nullptr) {
                     gate->RegisterIn(registry);
                   }
                   return OkStatus();
                 }},
            [&tweak](HttpServerOptions& options) {
              options.server.max_body_bytes = size_t{4} << 20;
              options.version = "test";
              if (tweak) tweak(options);
            }) {}

  // The count of requests by verb and outcome, from /metrics.
  std::string MetricsText() { return Exchange(port(), BuildRequest("GET", "/metrics", "")).body; }
};

class QuietLog {
 public:
  QuietLog() : saved_(spdlog::get_level()) { spdlog::set_level(spdlog::level::off); }
  ~QuietLog() { spdlog::set_level(saved_); }

 private:
  spdlog::level::level_enum saved_;
};

// Sends `request`, reads one reply; status 0 when there is none.
HttpReply SendAndRead(RawConnection& c, std::string_view request) {
  HttpReply reply;
  if (!c.Send(request) || !c.ReadReply(reply)) {
    reply.status = 0;
    reply.reason = c.error();
  }
  return reply;
}

// Resident memory of this process, in KiB (VmRSS of /proc/self/status).
long ResidentKib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return std::stol(line.substr(6));
    }
  }
  return -1;
}

TEST(HttpAbuseTest, EveryFramingRuleHasItsStatusAndClosesTheConnection) {
  QuietLog quiet;
  Server server;
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  const std::string post = "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n";
  struct Case {
    std::string name;
    std::string request;  // head only: a refusal must not wait for a body
    int want;
  };
  const std::vector<Case> cases = {
      {"conflicting Content-Length", post + "Content-Length: 5\r\nContent-Length: 50\r\n\r\n", 400},
      {"Content-Length +N", post + "Content-Length: +5\r\n\r\n", 400},
      {"Content-Length -5", post + "Content-Length: -5\r\n\r\n", 400},
      {"Content-Length list", post + "Content-Length: 5,5\r\n\r\n", 400},
      {"Content-Length over the limit", post + "Content-Length: 4194305\r\n\r\n", 413},
      {"Transfer-Encoding gzip", post + "Transfer-Encoding: gzip\r\n\r\n", 501},
      {"Transfer-Encoding gzip, chunked", post + "Transfer-Encoding: gzip, chunked\r\n\r\n", 501},
      {"Content-Length and chunked",
       post + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"obs-fold", post + "X-A: 1\r\n continued\r\nContent-Length: 5\r\n\r\n", 400},
      {"space before the colon", post + "Content-Length : 5\r\n\r\n", 400},
      {"header without a colon", post + "JustAName\r\nContent-Length: 5\r\n\r\n", 400},
      {"HTTP/1.1 without Host",
       "POST /filter HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\n", 400},
      {"Content-Encoding gzip", post + "Content-Encoding: gzip\r\nContent-Length: 5\r\n\r\n", 415},
      {"HTTP/2.0", "GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n", 505},
      {"garbage request line", "\x16\x03\x01\x02\x01\x01\xfc\x03\x03\r\n\r\n", 400},
      {"too many fields",
       "GET /healthz HTTP/1.1\r\nHost: x\r\n" +
           [] {
             std::string f;
             for (int i = 0; i < 101; ++i) f += "X-" + std::to_string(i) + ": 1\r\n";
             return f;
           }() +
           "\r\n",
       431},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    RawConnection conn;
    ASSERT_TRUE(conn.Connect(server.port())) << conn.error();
    const HttpReply reply = SendAndRead(conn, c.request);
    EXPECT_EQ(reply.status, c.want) << reply.reason << " " << reply.body;
    EXPECT_EQ(reply.Header("Connection"), "close");
    EXPECT_TRUE(json::parse(reply.body, nullptr, false).contains("Error")) << reply.body;
    EXPECT_TRUE(conn.PeerClosedWithin(5000));
  }
  // The server is unharmed.
  EXPECT_TRUE(Filter3Passed(Exchange(server.port(), BuildRequest("POST", "/filter", Filter3()))));
}

TEST(HttpAbuseTest, HeaderFloodOfTwoMiBGets431AtOnce) {
  QuietLog quiet;
  Server server;
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  RawConnection c;
  ASSERT_TRUE(c.Connect(server.port())) << c.error();
  ASSERT_TRUE(c.Send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Flood: ")) << c.error();
  c.SendRepeated('a', size_t{2} << 20);  // may stop early once refused
  HttpReply reply;
  ASSERT_TRUE(c.ReadReply(reply)) << c.error();
  EXPECT_EQ(reply.status, 431);
  EXPECT_EQ(reply.Header("Connection"), "close");
  EXPECT_TRUE(c.PeerClosedWithin(5000));
}

TEST(HttpAbuseTest, EightParallelHeaderFloodsOfEightMiBKeepMemoryFlat) {
  QuietLog quiet;
  Server server;
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  EXPECT_EQ(Exchange(server.port(), BuildRequest("GET", "/healthz", "")).status, 200);
  const long before = ResidentKib();
  ASSERT_GT(before, 0);
  std::vector<int> statuses(8, -1);
  std::vector<std::thread> floods;
  for (size_t i = 0; i < statuses.size(); ++i) {
    floods.emplace_back([&, i] {
      RawConnection c;
      if (!c.Connect(server.port())) return;
      c.Send("POST /filter HTTP/1.1\r\nHost: x\r\nX-Flood: ");
      c.SendRepeated('b', size_t{8} << 20);
      HttpReply reply;
      statuses[i] = c.ReadReply(reply) ? reply.status : 0;
    });
  }
  for (std::thread& t : floods) t.join();
  const long after = ResidentKib();
  for (int s : statuses) EXPECT_EQ(s, 431);
  EXPECT_LE(after - before, 64 * 1024) << "VmRSS " << before << " -> " << after << " KiB";
  EXPECT_EQ(Exchange(server.port(), BuildRequest("GET", "/healthz", "")).status, 200);
}

// The smuggling of issue 10: a compressed body carrying raw requests. It gets
// one refusal and none of the hidden requests runs.
TEST(HttpAbuseTest, CompressedBodyHidingRequestsGetsOneRefusalAndRunsNothing) {
  QuietLog quiet;
  Server server;
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  std::string hidden;
  for (int i = 0; i < 4; ++i) {
    hidden += BuildRequest("POST", "/filter", Filter3());
  }
  hidden.append(size_t{16} << 10, ' ');
  RawConnection c;
  ASSERT_TRUE(c.Connect(server.port())) << c.error();
  ASSERT_TRUE(c.Send(BuildRequest("POST", "/filter", hidden, {{"Content-Encoding", "gzip"}})))
      << c.error();
  HttpReply reply;
  ASSERT_TRUE(c.ReadReply(reply)) << c.error();
  EXPECT_EQ(reply.status, 415) << reply.body;
  // Nothing more comes: the connection closes after the one reply.
  HttpReply more;
  EXPECT_FALSE(c.ReadReply(more)) << "a second reply: " << more.status;
  const std::string metrics = server.MetricsText();
  EXPECT_NE(metrics.find("schedext_requests_total{profile=\"default\",verb=\"filter\","
                         "outcome=\"ok\"} 0\n"),
            std::string::npos)
      << metrics;
}

TEST(HttpAbuseTest, BodyLimitIsDecidedFromContentLengthBeforeTheBody) {
  QuietLog quiet;
  Server server;
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  RawConnection c;
  ASSERT_TRUE(c.Connect(server.port())) << c.error();
  // Only the head: the 413 must not wait for the 100 MB it announces.
  const HttpReply reply =
      SendAndRead(c, "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n");
  EXPECT_EQ(reply.status, 413) << reply.reason;
  EXPECT_NE(reply.body.find("too large"), std::string::npos) << reply.body;
}

TEST(HttpAbuseTest, PipelinedRequestsAreAnsweredInOrder) {
  QuietLog quiet;
  Server server;
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  const std::string filter3 = Filter3();
  RawConnection c;
  ASSERT_TRUE(c.Connect(server.port())) << c.error();
  ASSERT_TRUE(c.Send(BuildRequest("GET", "/version", "") +
                     BuildRequest("POST", "/filter", filter3) + BuildRequest("GET", "/nope", "") +
                     BuildRequest("POST", "/filter", "{") + BuildRequest("HEAD", "/healthz", "") +
                     BuildRequest("POST", "/filter", filter3)))
      << c.error();
  HttpReply r;
  ASSERT_TRUE(c.ReadReply(r)) << c.error();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "{\"version\":\"test\"}\n");
  ASSERT_TRUE(c.ReadReply(r)) << c.error();
  EXPECT_TRUE(Filter3Passed(r)) << r.body;
  ASSERT_TRUE(c.ReadReply(r)) << c.error();
  EXPECT_EQ(r.status, 404);
  ASSERT_TRUE(c.ReadReply(r)) << c.error();
  EXPECT_EQ(r.status, 400);
  // HEAD: the head GET's reply would have, and no body: the filter's reply
  // follows right after the blank line.
  ASSERT_TRUE(c.Send(BuildRequest("GET", "/healthz", "", {{"Connection", "close"}})));
  std::string rest;
  ASSERT_TRUE(c.ReadToEnd(rest)) << c.error();
  const size_t blank = rest.find("\r\n\r\n");
  ASSERT_NE(blank, std::string::npos) << rest.substr(0, 300);
  EXPECT_EQ(rest.substr(0, 15), "HTTP/1.1 200 OK") << rest.substr(0, 300);
  EXPECT_NE(rest.substr(0, blank + 2).find("Content-Length: 3\r\n"), std::string::npos)
      << rest.substr(0, 300);
  EXPECT_EQ(rest.substr(blank + 4, 15), "HTTP/1.1 200 OK") << rest.substr(0, 300);
  // The last request said Connection: close: its reply ends the stream.
  EXPECT_EQ(rest.substr(rest.size() - 3), "ok\n");
  const size_t filter_at = blank + 4;
  EXPECT_NE(rest.find("\"Nodes\"", filter_at), std::string::npos);
}

// A chunk-size line must be exactly 1*HEXDIG and chunk extensions (RFC 9112
// §7.1): "5 junk" is a smuggling vector (a proxy in front may read the line
// differently), so it gets 400 and the connection closes, and what was sent
// behind it is never run. Valid extensions are accepted and ignored.
TEST(HttpAbuseTest, ChunkSizeLineWithJunkIs400AndValidExtensionsAreServed) {
  QuietLog quiet;
  Server server;
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  const std::string chunked_head =
      "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\n\r\n";
  const std::string filter3 = Filter3();
  ASSERT_GT(filter3.size(), 5u);
  char rest_size[32];
  std::snprintf(rest_size, sizeof(rest_size), "%zx", filter3.size() - 5);

  {
    SCOPED_TRACE("5 junk");
    RawConnection c;
    ASSERT_TRUE(c.Connect(server.port())) << c.error();
    // Behind the bad line: the rest of a body, then a whole pipelined filter
    // that must not run.
    const HttpReply reply = SendAndRead(
        c, chunked_head + "5 junk\r\n" + filter3.substr(0, 5) + "\r\n" + rest_size + "\r\n" +
               filter3.substr(5) + "\r\n0\r\n\r\n" + BuildRequest("POST", "/filter", filter3));
    EXPECT_EQ(reply.status, 400) << reply.reason;
    EXPECT_EQ(reply.Header("Connection"), "close");
    const json body = json::parse(reply.body, nullptr, false);
    ASSERT_TRUE(body.contains("Error")) << reply.body;
    EXPECT_EQ(body["Error"],
              "junk after the chunk size: only ';' and a chunk extension may follow it");
    HttpReply more;
    EXPECT_FALSE(c.ReadReply(more)) << "a second reply: " << more.status;
    EXPECT_TRUE(c.PeerClosedWithin(5000));
  }
  for (const char* bad : {"5 ;x y", "0x5", "5\n", "10000000000000000"}) {
    SCOPED_TRACE(bad);
    RawConnection c;
    ASSERT_TRUE(c.Connect(server.port())) << c.error();
    const HttpReply reply = SendAndRead(c, chunked_head + bad + "\r\n");
    EXPECT_EQ(reply.status, 400) << reply.reason;
    EXPECT_EQ(reply.Header("Connection"), "close");
    EXPECT_TRUE(c.PeerClosedWithin(5000));
  }
  const std::string metrics = server.MetricsText();
  EXPECT_NE(metrics.find("schedext_requests_total{profile=\"default\",verb=\"filter\","
                         "outcome=\"ok\"} 0\n"),
            std::string::npos)
      << metrics;

  {
    SCOPED_TRACE("5;ext=1");
    RawConnection c;
    ASSERT_TRUE(c.Connect(server.port())) << c.error();
    HttpReply reply = SendAndRead(c, chunked_head + "5;ext=1\r\n" + filter3.substr(0, 5) + "\r\n" +
                                         rest_size + " ; a = \"b;c\" ;d\r\n" + filter3.substr(5) +
                                         "\r\n0;last\r\nX-Trailer: 1\r\n\r\n");
    EXPECT_TRUE(Filter3Passed(reply)) << reply.status << " " << reply.body;
    EXPECT_NE(reply.Header("Connection"), "close");
    // The connection stays usable.
    reply = SendAndRead(c, BuildRequest("GET", "/healthz", ""));
    EXPECT_EQ(reply.status, 200);
  }
}

TEST(HttpAbuseTest, TrickledBodyIsCutAtTheBodyDeadline) {
  QuietLog quiet;
  Server server([](HttpServerOptions& o) { o.server.body_timeout_seconds = 1; });
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  RawConnection c;
  ASSERT_TRUE(c.Connect(server.port())) << c.error();
  ASSERT_TRUE(c.Send("POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"));
  // A byte every 100 ms would take 100 s; the deadline is for the whole body.
  bool closed = false;
  for (int i = 0; i < 50 && !closed; ++i) {
    c.Send("{");
    closed = c.PeerClosedWithin(100);
  }
  EXPECT_TRUE(closed) << "still open after 5 s of trickling";
  EXPECT_TRUE(Filter3Passed(Exchange(server.port(), BuildRequest("POST", "/filter", Filter3()))));
}

TEST(HttpAbuseTest, SlowlorisHeadIsCutAtTheHeaderDeadline) {
  QuietLog quiet;
  Server server([](HttpServerOptions& o) { o.server.header_timeout_seconds = 1; });
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  RawConnection slow;
  ASSERT_TRUE(slow.Connect(server.port())) << slow.error();
  slow.Send("GET /healthz HTTP/1.1\r\n");
  bool closed = false;
  for (int i = 0; i < 50 && !closed; ++i) {
    slow.Send("X");
    closed = slow.PeerClosedWithin(100);
  }
  EXPECT_TRUE(closed) << "a head trickled for 5 s was not cut";
  // A connection that never sends is cut too.
  RawConnection silent;
  ASSERT_TRUE(silent.Connect(server.port())) << silent.error();
  EXPECT_TRUE(silent.PeerClosedWithin(5000));
}

TEST(HttpAbuseTest, IdleKeepAliveConnectionIsClosedAfterItsTimeout) {
  QuietLog quiet;
  Server server([](HttpServerOptions& o) { o.server.keep_alive_timeout_seconds = 1; });
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  RawConnection c;
  ASSERT_TRUE(c.Connect(server.port())) << c.error();
  EXPECT_EQ(SendAndRead(c, BuildRequest("GET", "/healthz", "")).status, 200);
  EXPECT_FALSE(c.PeerClosedWithin(200));
  EXPECT_TRUE(c.PeerClosedWithin(5000));
}

// Issue 10's done-when: while 60 idle keep-alive, 200 silent and 30 slowloris
// connections are held open, /healthz and a 5-node full-mode filter are each
// answered (5 s bounds liveness, not speed).
TEST(HttpAbuseTest, HeldConnectionsDoNotTakeTheServerOffTheAir) {
  QuietLog quiet;
  Server server([](HttpServerOptions& o) {
    o.server.header_timeout_seconds = 60;  // the slowloris stay open throughout
  });
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  const std::string filter3 = Filter3();
  std::vector<std::unique_ptr<RawConnection>> idle, silent, slow;
  for (int i = 0; i < 60; ++i) {
    idle.push_back(std::make_unique<RawConnection>());
    ASSERT_TRUE(idle.back()->Connect(server.port())) << idle.back()->error();
    ASSERT_EQ(SendAndRead(*idle.back(), BuildRequest("GET", "/healthz", "")).status, 200);
  }
  for (int i = 0; i < 200; ++i) {
    silent.push_back(std::make_unique<RawConnection>());
    ASSERT_TRUE(silent.back()->Connect(server.port())) << silent.back()->error();
  }
  for (int i = 0; i < 30; ++i) {
    slow.push_back(std::make_unique<RawConnection>());
    ASSERT_TRUE(slow.back()->Connect(server.port())) << slow.back()->error();
    ASSERT_TRUE(slow.back()->Send("POST /filter HTTP/1.1\r\nHo"));
  }
  std::atomic<bool> stop{false};
  std::thread loris([&] {
    while (!stop.load()) {
      for (auto& c : slow) c->Send("X");
      std::this_thread::sleep_for(milliseconds(100));
    }
  });
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    const auto t0 = steady_clock::now();
    const HttpReply health = Exchange(server.port(), BuildRequest("GET", "/healthz", ""));
    EXPECT_EQ(health.status, 200) << health.reason;
    const HttpReply filter = Exchange(server.port(), BuildRequest("POST", "/filter", filter3));
    EXPECT_TRUE(Filter3Passed(filter)) << filter.status << " " << filter.reason;
    EXPECT_LT(steady_clock::now() - t0, std::chrono::seconds(5));
  }
  stop = true;
  loris.join();
  // They were held open all along.
  for (auto* group : {&idle, &silent, &slow}) {
    for (auto& c : *group) EXPECT_FALSE(c->PeerClosedWithin(0));
  }
  // An idle one is still served.
  EXPECT_EQ(SendAndRead(*idle.front(), BuildRequest("GET", "/healthz", "")).status, 200);
}

TEST(HttpAbuseTest, ResetsMidRequestDoNotHurtTheServer) {
  QuietLog quiet;
  BlockingBinder binder;
  Server server(nullptr, &binder);
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  const std::string filter3 = Filter3();
  const std::string request = BuildRequest("POST", "/filter", filter3);
  for (size_t cut : {size_t{5}, request.find("\r\n\r\n"), request.size() / 2, request.size()}) {
    SCOPED_TRACE(cut);
    RawConnection c;
    ASSERT_TRUE(c.Connect(server.port())) << c.error();
    ASSERT_TRUE(c.Send(std::string_view(request).substr(0, cut)));
    c.Reset();
  }
  // Reset while a bind is in flight; its reply then has nowhere to go.
  {
    RawConnection c;
    ASSERT_TRUE(c.Connect(server.port())) << c.error();
    ASSERT_TRUE(c.Send(BuildRequest("POST", "/bind", Bind1())));
    ASSERT_TRUE(binder.WaitEntered(1));
    c.Reset();
  }
  binder.Release();
  EXPECT_TRUE(Filter3Passed(Exchange(server.port(), request)));
  EXPECT_EQ(Exchange(server.port(), BuildRequest("POST", "/bind", Bind1())).status, 200);
}

// bind waits on the API server on its own threads: with a hung API server
// and one I/O thread, filters and health checks are still answered.
TEST(HttpAbuseTest, SlowBindNeverDelaysAFilter) {
  QuietLog quiet;
  BlockingBinder binder;
  Server server([](HttpServerOptions& o) { o.server.threads = 1; }, &binder);
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  RawConnection bind;
  ASSERT_TRUE(bind.Connect(server.port())) << bind.error();
  ASSERT_TRUE(bind.Send(BuildRequest("POST", "/bind", Bind1())));
  ASSERT_TRUE(binder.WaitEntered(1));
  EXPECT_TRUE(Filter3Passed(Exchange(server.port(), BuildRequest("POST", "/filter", Filter3()))));
  EXPECT_EQ(Exchange(server.port(), BuildRequest("GET", "/healthz", "")).status, 200);
  binder.Release();
  HttpReply reply;
  ASSERT_TRUE(bind.ReadReply(reply)) << bind.error();
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(json::parse(reply.body, nullptr, false), json({{"Error", ""}})) << reply.body;
}

// One I/O thread, and a filter held in its policy for as long as the test
// likes: a request with a large body runs off the I/O thread, so new
// connections are accepted and answered meanwhile. Proven by order, not by
// time: /healthz answers while the filter is still held.
TEST(HttpAbuseTest, ALongRequestHoldsUpNeitherAcceptsNorItsIoThread) {
  QuietLog quiet;
  Gate gate;
  Server server(
      [](HttpServerOptions& o) {
        o.server.threads = 1;
        o.server.offload_body_bytes = 1024;
      },
      nullptr, &gate);
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  const std::string body = Filter3();
  ASSERT_GE(body.size(), 1024u);
  RawConnection held;
  ASSERT_TRUE(held.Connect(server.port())) << held.error();
  ASSERT_TRUE(held.Send(BuildRequest("POST", "/filter", body)));
  ASSERT_TRUE(gate.WaitEntered(1));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Exchange(server.port(), BuildRequest("GET", "/healthz", "")).status, 200);
  }
  EXPECT_FALSE(gate.released());
  gate.Release();
  HttpReply reply;
  ASSERT_TRUE(held.ReadReply(reply)) << held.error();
  EXPECT_TRUE(Filter3Passed(reply)) << reply.body;
}

TEST(HttpAbuseTest, BareLineFeedsAreRefusedAtOnce) {
  QuietLog quiet;
  // A header deadline far beyond the client's read timeout (10 s): an
  // answer at all means the server did not wait for it.
  Server server([](HttpServerOptions& o) { o.server.header_timeout_seconds = 600; });
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  for (const std::string_view request :
       {std::string_view("GET /healthz HTTP/1.1\nHost: a\n\n"),
        std::string_view("GET /healthz HTTP/1.1\r\nHost: a\n\r\n"),
        std::string_view("\nGET /healthz HTTP/1.1\r\n\r\n")}) {
    RawConnection c;
    ASSERT_TRUE(c.Connect(server.port())) << c.error();
    const HttpReply reply = SendAndRead(c, request);
    EXPECT_EQ(reply.status, 400) << request << ": " << reply.reason;
    EXPECT_NE(reply.body.find("LF without CR"), std::string::npos) << reply.body;
  }
  EXPECT_EQ(Exchange(server.port(), BuildRequest("GET", "/healthz", "")).status, 200);
}

TEST(HttpAbuseTest, BindsBeyondTheQueueAre503) {
  QuietLog quiet;
  BlockingBinder binder;
  Server server(
      [](HttpServerOptions& o) {
        o.server.bind_threads = 1;
        o.server.max_pending_binds = 1;
      },
      &binder);
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  RawConnection running;
  ASSERT_TRUE(running.Connect(server.port()));
  ASSERT_TRUE(running.Send(BuildRequest("POST", "/bind", Bind1())));
  ASSERT_TRUE(binder.WaitEntered(1));
  // Two more while the first blocks: one waits in the queue (its one place),
  // the other is refused at once; which is which depends on arrival order.
  std::atomic<int> statuses[2] = {-1, -1};
  std::vector<std::thread> clients;
  for (int i = 0; i < 2; ++i) {
    clients.emplace_back([&, i] {
      RawConnection c;
      statuses[i] = c.Connect(server.port())
                        ? SendAndRead(c, BuildRequest("POST", "/bind", Bind1())).status
                        : 0;
    });
  }
  int first = -1;
  for (int i = 0; i < 500 && first < 0; ++i) {
    for (int j = 0; j < 2; ++j) {
      if (statuses[j].load() >= 0) first = j;
    }
    if (first < 0) std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_GE(first, 0) << "neither bind was refused while the queue was full";
  EXPECT_EQ(statuses[first].load(), 503);
  EXPECT_EQ(statuses[1 - first].load(), -1) << "the queued bind answered before the API server";
  binder.Release();
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(statuses[1 - first].load(), 200);
  HttpReply reply;
  ASSERT_TRUE(running.ReadReply(reply));
  EXPECT_EQ(reply.status, 200);
}

// A bind that waited in the queue past server.bindDeadlineMillis is answered
// with an error and never reaches the binder: kube-scheduler has stopped
// waiting for it and retries the pod, so binding it now would act behind the
// scheduler's back.
TEST(HttpAbuseTest, ABindQueuedPastItsDeadlineIsNeverMade) {
  QuietLog quiet;
  BlockingBinder binder;
  Server server(
      [](HttpServerOptions& o) {
        o.server.bind_threads = 1;
        o.server.bind_deadline_millis = 200;
      },
      &binder);
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  RawConnection running;
  ASSERT_TRUE(running.Connect(server.port()));
  ASSERT_TRUE(running.Send(BuildRequest("POST", "/bind", Bind1())));
  ASSERT_TRUE(binder.WaitEntered(1));
  RawConnection queued;
  ASSERT_TRUE(queued.Connect(server.port()));
  ASSERT_TRUE(queued.Send(BuildRequest("POST", "/bind", Bind1())));
  // Long enough for the queued bind's deadline to pass behind the first.
  std::this_thread::sleep_for(milliseconds(400));
  binder.Release();
  HttpReply first;
  ASSERT_TRUE(running.ReadReply(first));
  EXPECT_EQ(json::parse(first.body, nullptr, false), json({{"Error", ""}})) << first.body;
  HttpReply late;
  ASSERT_TRUE(queued.ReadReply(late)) << queued.error();
  EXPECT_EQ(late.status, 200);
  const json body = json::parse(late.body, nullptr, false);
  ASSERT_TRUE(body.is_object()) << late.body;
  EXPECT_NE(body.value("Error", "").find(pipeline::kTooLate), std::string::npos) << late.body;
  EXPECT_EQ(binder.entered(), 1);
}

TEST(HttpAbuseTest, ConnectionsBeyondTheLimitAreClosedAtOnce) {
  QuietLog quiet;
  Server server([](HttpServerOptions& o) { o.server.max_connections = 4; });
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  std::vector<std::unique_ptr<RawConnection>> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(std::make_unique<RawConnection>());
    ASSERT_TRUE(held.back()->Connect(server.port()));
    ASSERT_EQ(SendAndRead(*held.back(), BuildRequest("GET", "/healthz", "")).status, 200);
  }
  RawConnection extra;
  ASSERT_TRUE(extra.Connect(server.port()));  // the kernel accepts; the server closes
  EXPECT_TRUE(extra.PeerClosedWithin(5000));
  // Held ones are still served; once one closes, a new one is (bounded retries:
  // the server notices the close asynchronously).
  EXPECT_EQ(SendAndRead(*held.front(), BuildRequest("GET", "/healthz", "")).status, 200);
  held.pop_back();
  int status = 0;
  for (int i = 0; i < 100 && status != 200; ++i) {
    status = Exchange(server.port(), BuildRequest("GET", "/healthz", "")).status;
    if (status != 200) std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(status, 200);
}

TEST(HttpAbuseTest, ExpectContinueGets100BeforeTheBody) {
  QuietLog quiet;
  Server server;
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  const std::string filter3 = Filter3();
  const std::string request =
      BuildRequest("POST", "/filter", filter3, {{"Expect", "100-continue"}});
  const size_t head = request.find("\r\n\r\n") + 4;
  RawConnection c;
  ASSERT_TRUE(c.Connect(server.port()));
  ASSERT_TRUE(c.Send(std::string_view(request).substr(0, head)));
  HttpReply interim;
  ASSERT_TRUE(c.ReadReply(interim)) << c.error();
  EXPECT_EQ(interim.status, 100);
  ASSERT_TRUE(c.Send(std::string_view(request).substr(head)));
  HttpReply reply;
  ASSERT_TRUE(c.ReadReply(reply)) << c.error();
  EXPECT_TRUE(Filter3Passed(reply));
}

TEST(HttpAbuseTest, StatusListenerServesOnlyTheStatusRoutes) {
  QuietLog quiet;
  Server server([](HttpServerOptions& o) {
    o.server.status_host = "127.0.0.1";
    o.server.status_port = 0;
  });
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  ASSERT_GT(server.status_port(), 0);
  ASSERT_NE(server.status_port(), server.port());
  for (const char* path : {"/healthz", "/readyz", "/version", "/metrics"}) {
    SCOPED_TRACE(path);
    EXPECT_EQ(Exchange(server.status_port(), BuildRequest("GET", path, "")).status, 200);
  }
  const HttpReply filter =
      Exchange(server.status_port(), BuildRequest("POST", "/filter", Filter3()));
  EXPECT_EQ(filter.status, 404);
  EXPECT_NE(filter.body.find("status listener"), std::string::npos) << filter.body;
  EXPECT_TRUE(Filter3Passed(Exchange(server.port(), BuildRequest("POST", "/filter", Filter3()))));
}

// The drain: a request in flight during Stop completes (with Connection:
// close), a request whose head is arriving is answered with Connection: close,
// an idle keep-alive connection is closed, and Serve returns.
TEST(HttpAbuseTest, DrainFinishesInFlightRequestsAndClosesIdleConnections) {
  QuietLog quiet;
  BlockingBinder binder;
  Server server(nullptr, &binder);
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  const std::string filter3 = Filter3();
  const std::string request = BuildRequest("POST", "/filter", filter3);
  const size_t head = request.find("\r\n\r\n") + 4;

  RawConnection idle, body, partial_head, binding;
  ASSERT_TRUE(idle.Connect(server.port()) && body.Connect(server.port()) &&
              partial_head.Connect(server.port()) && binding.Connect(server.port()));
  ASSERT_EQ(SendAndRead(idle, BuildRequest("GET", "/healthz", "")).status, 200);
  ASSERT_TRUE(body.Send(std::string_view(request).substr(0, head + 100)));
  ASSERT_TRUE(partial_head.Send(std::string_view(request).substr(0, head / 2)));
  ASSERT_TRUE(binding.Send(BuildRequest("POST", "/bind", Bind1())));
  ASSERT_TRUE(binder.WaitEntered(1));
  // Nothing on the wire says when the server has read the partial head and
  // body; a pause lets it (the bind above proves the server is running).
  std::this_thread::sleep_for(milliseconds(500));

  server.StartStop();
  EXPECT_TRUE(idle.PeerClosedWithin(5000)) << "idle keep-alive connection not closed";

  ASSERT_TRUE(body.Send(std::string_view(request).substr(head + 100)));
  HttpReply reply;
  ASSERT_TRUE(body.ReadReply(reply)) << body.error();
  EXPECT_TRUE(Filter3Passed(reply));
  EXPECT_EQ(reply.Header("Connection"), "close");
  EXPECT_TRUE(body.PeerClosedWithin(5000));

  ASSERT_TRUE(partial_head.Send(std::string_view(request).substr(head / 2)));
  ASSERT_TRUE(partial_head.ReadReply(reply)) << partial_head.error();
  EXPECT_TRUE(Filter3Passed(reply));
  EXPECT_EQ(reply.Header("Connection"), "close");

  binder.Release();
  ASSERT_TRUE(binding.ReadReply(reply)) << binding.error();
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.Header("Connection"), "close");

  EXPECT_TRUE(server.Stop(milliseconds(5000)));
  RawConnection late;
  EXPECT_FALSE(late.Connect(server.port()));
}

// Each I/O thread runs its own io_context and a connection stays on the one
// it was given at accept: with more threads than connections, some never
// serve anything, and the drain must still end Serve() once the connections
// (here one waiting on a bind in the pool) have closed.
TEST(HttpAbuseTest, DrainEndsServeWithMoreIoThreadsThanConnections) {
  QuietLog quiet;
  BlockingBinder binder;
  Server server([](HttpServerOptions& o) { o.server.threads = 8; }, &binder);
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  // Three connections, each answered on whichever thread it was given; the
  // last stays open, idle.
  std::array<RawConnection, 3> connections;
  for (RawConnection& c : connections) {
    ASSERT_TRUE(c.Connect(server.port())) << c.error();
    EXPECT_TRUE(Filter3Passed(SendAndRead(c, BuildRequest("POST", "/filter", Filter3()))));
    EXPECT_EQ(SendAndRead(c, BuildRequest("GET", "/healthz", "")).status, 200);
  }
  connections[0].Close();
  connections[1].Close();
  RawConnection& idle = connections[2];
  RawConnection binding;
  ASSERT_TRUE(binding.Connect(server.port())) << binding.error();
  ASSERT_TRUE(binding.Send(BuildRequest("POST", "/bind", Bind1())));
  ASSERT_TRUE(binder.WaitEntered(1));

  server.StartStop();
  // Stop() only posts the drain to the accepting io_context. The idle
  // connection closing shows it has begun (ServerCore::draining is set before
  // any session is told), so the bind released now is answered with
  // Connection: close; released earlier, it could answer first and keep the
  // connection (as a CI run did).
  EXPECT_TRUE(idle.PeerClosedWithin(5000)) << "idle keep-alive connection not closed";
  binder.Release();
  HttpReply reply;
  ASSERT_TRUE(binding.ReadReply(reply)) << binding.error();
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.Header("Connection"), "close");
  EXPECT_TRUE(binding.PeerClosedWithin(5000));
  EXPECT_TRUE(server.Stop(milliseconds(5000)));
}

// server.ioSpinMicros: the I/O threads poll between requests instead of
// sleeping. Requests on keep-alive connections still get their exact replies
// (every handler runs, none twice), and the drain still closes the idle
// connection and ends Serve() while the threads spin.
TEST(HttpAbuseTest, SpinningIoThreadsServeAndDrain) {
  QuietLog quiet;
  Server server([](HttpServerOptions& o) { o.server.io_spin_micros = 10000; });
  ASSERT_TRUE(server.init().ok()) << server.init().ToString();
  std::array<RawConnection, 3> connections;
  for (RawConnection& c : connections) {
    ASSERT_TRUE(c.Connect(server.port())) << c.error();
  }
  for (int i = 0; i < 20; ++i) {
    for (RawConnection& c : connections) {
      EXPECT_TRUE(Filter3Passed(SendAndRead(c, BuildRequest("POST", "/filter", Filter3()))));
    }
  }
  const HttpReply bad = SendAndRead(connections[0], BuildRequest("POST", "/filter", "{"));
  EXPECT_EQ(bad.status, 400) << bad.body;
  connections[2].Close();
  server.StartStop();
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(connections[i].PeerClosedWithin(5000)) << "idle connection " << i << " not closed";
  }
  EXPECT_TRUE(server.Stop(milliseconds(5000)));
}

}  // namespace
}  // namespace schedext::server
