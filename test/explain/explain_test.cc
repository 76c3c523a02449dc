// POST /<profile>/explain: exact documents in both node modes for the built-in
// policies (every value below is worked out by hand from the policies'
// documented formulas), agreement with the verbs on kube-scheduler's recorded
// requests, the text table, and a loopback HTTP round trip.
#include "schedext/explain/explain.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "explain/explain_fixture.h"
#include "schedext/server/http_server.h"
#include "schedext/server/service.h"
#include "testing/loopback.h"

namespace schedext::explain {
namespace {

using nlohmann::json;
using server::Verb;
using namespace explain_testing;  // NOLINT: test vocabulary
using schedext::testing::ArgsShape;
using schedext::testing::ExtenderArgsJson;
using schedext::testing::ExtenderArgsNamesJson;

class ExplainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_ = CacheWith(Nodes(), {BoundPod()});
    auto profiles = BuildProfiles(kConfig);
    ASSERT_EQ(profiles.size(), 2U);
    metrics_ = std::make_unique<server::Metrics>(std::vector<std::string>{"all", "packing"});
    service_ = std::make_unique<server::ExtenderService>(profiles, 0, cache_.get(), nullptr,
                                                         metrics_.get());
    service_->SetExplain(&explain_verb_);
  }

  int Call(Verb verb, std::string_view profile, const std::string& body) {
    const int index = service_->FindProfile(profile);
    EXPECT_GE(index, 0) << profile;
    wire::RequestBuffer buffer = wire::RequestBuffer::CopyOf(body);
    server::RequestSummary summary;
    return service_->Handle(verb, static_cast<size_t>(index), buffer, scratch_, out_, summary);
  }

  std::unique_ptr<cluster::ClusterCache> cache_;
  std::unique_ptr<server::Metrics> metrics_;
  const explain::ExplainVerb explain_verb_;
  std::unique_ptr<server::ExtenderService> service_;
  server::Scratch scratch_;
  std::string out_;
};

// Profile "all" on n1..n4. Filters run in configured order: NodeHealth,
// TaintToleration, NodeLabel, NodeNumeric, NodeResourcesFit. Only n1 and n2
// pass, so only they are scored (total weight 1 + 2 + 1 + 2 + 1 = 7):
//   TaintToleration   raw = untolerated PreferNoSchedule taints: n1 0, n2 1;
//                     reversed DefaultNormalize → n1 100, n2 0.
//   NodeLabel (w2)    raw = preferred weights matched: n1 3 (zone a), n2 0
//                     → n1 100, n2 0; weighted 200, 0.
//   NodeNumeric       raw = load × 1e6: 20e6, 60e6; min-max, lower better →
//                     100, 0.
//   LeastAllocated(w2) n1: cpu (4000-1000)·100/4000 = 75, memory
//                     (8Gi-2Gi)·100/8Gi = 75 → 75; n2 (db-1 adds 1 cpu, 2Gi):
//                     cpu 2000/4000 free → 50, memory 50 → 50; weighted 150, 100.
//   BalancedAllocation fractions equal on both (.25/.25, .5/.5) → 100.
//   n1: 100 + 200 + 100 + 150 + 100 = 650 → round(650·10 / 700) = 9.
//   n2:   0 +   0 +   0 + 100 + 100 = 200 → round(200·10 / 700) = 3.
json ExpectedAll(bool with_ghost) {
  json n1 = json::parse(R"({"name":"n1","verdict":"pass","reason":null,"detail":null,"rejectedBy":null,
    "filters":[{"policy":"NodeHealth","verdict":"pass","reason":null,"detail":null},
               {"policy":"TaintToleration","verdict":"pass","reason":null,"detail":null},
               {"policy":"NodeLabel","verdict":"pass","reason":null,"detail":null},
               {"policy":"NodeNumeric","verdict":"pass","reason":null,"detail":null},
               {"policy":"NodeResourcesFit","verdict":"pass","reason":null,"detail":null}],
    "scores":[{"policy":"TaintToleration","weight":1,"raw":0,"normalized":100,"weighted":100},
              {"policy":"NodeLabel","weight":2,"raw":3,"normalized":100,"weighted":200},
              {"policy":"NodeNumeric","weight":1,"raw":20000000,"normalized":100,"weighted":100},
              {"policy":"LeastAllocated","weight":2,"raw":75,"normalized":75,"weighted":150},
              {"policy":"BalancedAllocation","weight":1,"raw":100,"normalized":100,"weighted":100}],
    "weightedTotal":650,"score":9,"rank":1})");
  json n2 = json::parse(R"({"name":"n2","verdict":"pass","reason":null,"detail":null,"rejectedBy":null,
    "filters":[{"policy":"NodeHealth","verdict":"pass","reason":null,"detail":null},
               {"policy":"TaintToleration","verdict":"pass","reason":null,"detail":null},
               {"policy":"NodeLabel","verdict":"pass","reason":null,"detail":null},
               {"policy":"NodeNumeric","verdict":"pass","reason":null,"detail":null},
               {"policy":"NodeResourcesFit","verdict":"pass","reason":null,"detail":null}],
    "scores":[{"policy":"TaintToleration","weight":1,"raw":1,"normalized":0,"weighted":0},
              {"policy":"NodeLabel","weight":2,"raw":0,"normalized":0,"weighted":0},
              {"policy":"NodeNumeric","weight":1,"raw":60000000,"normalized":0,"weighted":0},
              {"policy":"LeastAllocated","weight":2,"raw":50,"normalized":50,"weighted":100},
              {"policy":"BalancedAllocation","weight":1,"raw":100,"normalized":100,"weighted":100}],
    "weightedTotal":200,"score":3,"rank":2})");
  json n3 = json::parse(R"({"name":"n3","verdict":"unresolvable",
    "reason":"node(s) had untolerated taint","detail":"untolerated taint {dedicated: gpu}",
    "rejectedBy":"TaintToleration",
    "filters":[{"policy":"NodeHealth","verdict":"pass","reason":null,"detail":null},
               {"policy":"TaintToleration","verdict":"unresolvable",
                "reason":"node(s) had untolerated taint",
                "detail":"untolerated taint {dedicated: gpu}"},
               {"policy":"NodeLabel","verdict":"pass","reason":null,"detail":null},
               {"policy":"NodeNumeric","verdict":"unresolvable",
                "reason":"node(s) had example.com/load above 80",
                "detail":"example.com/load is 90"},
               {"policy":"NodeResourcesFit","verdict":"pass","reason":null,"detail":null}],
    "scores":null,"weightedTotal":null,"score":null,"rank":null})");
  json n4 = json::parse(R"({"name":"n4","verdict":"unresolvable",
    "reason":"node(s) were not ready","detail":null,"rejectedBy":"NodeHealth",
    "filters":[{"policy":"NodeHealth","verdict":"unresolvable","reason":"node(s) were not ready",
                "detail":null},
               {"policy":"TaintToleration","verdict":"pass","reason":null,"detail":null},
               {"policy":"NodeLabel","verdict":"unresolvable",
                "reason":"node(s) had forbidden labels","detail":null},
               {"policy":"NodeNumeric","verdict":"pass","reason":null,"detail":null},
               {"policy":"NodeResourcesFit","verdict":"pass","reason":null,"detail":null}],
    "scores":null,"weightedTotal":null,"score":null,"rank":null})");
  json ghost = json::parse(R"({"name":"ghost","verdict":"unresolvable",
    "reason":"node(s) unknown to schedext","detail":null,"rejectedBy":null,"filters":[],
    "scores":null,"weightedTotal":null,"score":null,"rank":null})");
  json doc = json::parse(R"({"profile":"all",
    "pod":{"namespace":"shop","name":"web-1","uid":"uid-web-1"},
    "nodeMode":"Nodes","scoring":"passing",
    "policies":[{"name":"NodeHealth","weight":null,"filter":true,"score":false},
                {"name":"TaintToleration","weight":1,"filter":true,"score":true},
                {"name":"NodeLabel","weight":2,"filter":true,"score":true},
                {"name":"NodeNumeric","weight":1,"filter":true,"score":true},
                {"name":"NodeResourcesFit","weight":null,"filter":true,"score":false},
                {"name":"LeastAllocated","weight":2,"filter":false,"score":true},
                {"name":"BalancedAllocation","weight":1,"filter":false,"score":true}],
    "totalWeight":7,"filterError":null,"prioritizeError":null,
    "ranking":["n1","n2"]})");
  doc["nodes"] = with_ghost ? json::array({n1, n2, ghost, n3, n4}) : json::array({n1, n2, n3, n4});
  if (with_ghost) {
    doc["nodeMode"] = "NodeNames";
  }
  return doc;
}

TEST_F(ExplainTest, FullNodesEveryFilterAndScorer) {
  ASSERT_EQ(Call(Verb::kExplain, "all", ExtenderArgsJson(Pod(), Nodes(), ArgsShape::kFullNodes)),
            200)
      << out_;
  EXPECT_EQ(json::parse(out_), ExpectedAll(false)) << out_;
}

TEST_F(ExplainTest, NodeNamesFromTheCacheWithAnUnknownName) {
  const std::string body = ExtenderArgsNamesJson(Pod().Build(), {"n1", "n2", "ghost", "n3", "n4"});
  ASSERT_EQ(Call(Verb::kExplain, "all", body), 200) << out_;
  EXPECT_EQ(json::parse(out_), ExpectedAll(true)) << out_;
}

// GET /explain/pod/shop/web-1: the pending pod as the cache holds it, against
// every node of the cache (name order): the same answer as the request body
// with those nodes, in node mode "cache".
TEST_F(ExplainTest, CachedPendingPodAgainstEveryCachedNode) {
  auto cache = CacheWith(Nodes(), {BoundPod(), Pod()});
  const auto profiles = BuildProfiles(kConfig);
  std::string body;
  ASSERT_EQ(ExplainCachedPod(*cache, profiles, 0, "shop/web-1", body), 200) << body;
  json want = ExpectedAll(false);
  want["nodeMode"] = "cache";
  EXPECT_EQ(json::parse(body), want) << body;

  // The profile named in the path.
  body.clear();
  ASSERT_EQ(ExplainCachedPod(*cache, profiles, 0, "shop/web-1/packing", body), 200) << body;
  EXPECT_EQ(json::parse(body)["profile"], "packing") << body;

  struct Refused {
    std::string rest;
    int status;
    std::string error;
  };
  const std::vector<Refused> refused = {
      {"shop", 400, "explain: want GET /explain/pod/<namespace>/<name>[/<profile>]"},
      {"shop//x", 400, "explain: want GET /explain/pod/<namespace>/<name>[/<profile>]"},
      {"shop/web-1/all/x", 400, "explain: want GET /explain/pod/<namespace>/<name>[/<profile>]"},
      {"shop/web-2", 404, "explain: the cluster cache has no pod shop/web-2"},
      {"other/web-1", 404, "explain: the cluster cache has no pod other/web-1"},
      {"shop/web-1/nope", 404, "explain: no such profile"},
  };
  for (const Refused& r : refused) {
    SCOPED_TRACE(r.rest);
    body.clear();
    EXPECT_EQ(ExplainCachedPod(*cache, profiles, 0, r.rest, body), r.status);
    EXPECT_EQ(json::parse(body).value("Error", ""), r.error) << body;
  }

  // Before the cache has synced there is nothing to explain against.
  cluster::ClusterCache empty;
  body.clear();
  EXPECT_EQ(ExplainCachedPod(empty, profiles, 0, "shop/web-1", body), 503);
}

// Profile "packing", no filter: every node is scored (total weight 2).
//   MostAllocated: Σ requested·100/alloc per resource, averaged:
//     n1 (1 cpu of 4, 2Gi of 8Gi) 25; n2 (db-1 doubles it) 50; n3 (half
//     size) 50; n4 25.
//   RequestedToCapacityRatio with the line (0,0)-(100,100): the same
//     utilizations → 25, 50, 50, 25.
//   score = round((m + r)·10 / 200): n1 round(2.5) = 3, n2 5, n3 5, n4 3;
//   equal scores share a rank and keep request order in the ranking.
TEST_F(ExplainTest, PackingScorersRankTiesTogether) {
  ASSERT_EQ(
      Call(Verb::kExplain, "packing", ExtenderArgsJson(Pod(), Nodes(), ArgsShape::kNodeNames)), 200)
      << out_;
  auto node = [](std::string name, int64_t used, int64_t score, int64_t rank) {
    return json{{"name", name},
                {"verdict", "pass"},
                {"reason", nullptr},
                {"detail", nullptr},
                {"rejectedBy", nullptr},
                {"filters", json::array()},
                {"scores",
                 {{{"policy", "MostAllocated"},
                   {"weight", 1},
                   {"raw", used},
                   {"normalized", used},
                   {"weighted", used}},
                  {{"policy", "RequestedToCapacityRatio"},
                   {"weight", 1},
                   {"raw", used},
                   {"normalized", used},
                   {"weighted", used}}}},
                {"weightedTotal", 2 * used},
                {"score", score},
                {"rank", rank}};
  };
  json want = json::parse(R"({"profile":"packing",
    "pod":{"namespace":"shop","name":"web-1","uid":"uid-web-1"},
    "nodeMode":"NodeNames","scoring":"passing",
    "policies":[{"name":"MostAllocated","weight":1,"filter":false,"score":true},
                {"name":"RequestedToCapacityRatio","weight":1,"filter":false,"score":true}],
    "totalWeight":2,"filterError":null,"prioritizeError":null,
    "ranking":["n2","n3","n1","n4"]})");
  want["nodes"] = {node("n1", 25, 3, 3), node("n2", 50, 5, 1), node("n3", 50, 5, 1),
                   node("n4", 25, 3, 3)};
  EXPECT_EQ(json::parse(out_), want) << out_;
}

TEST_F(ExplainTest, WithoutTheCacheResourceScorersFailAsPrioritizeWould) {
  // No cluster: full nodes carry no usage, and the resource scorers refuse in
  // PreScore; explain reports prioritize's error and ranks nothing.
  auto profiles = BuildProfiles(kConfig);
  server::ExtenderService service(profiles, 0, nullptr, nullptr, nullptr);
  service.SetExplain(&explain_verb_);
  wire::RequestBuffer body =
      wire::RequestBuffer::CopyOf(ExtenderArgsJson(Pod(), Nodes(), ArgsShape::kFullNodes));
  server::RequestSummary summary;
  ASSERT_EQ(service.Handle(Verb::kExplain, 1, body, scratch_, out_, summary), 200) << out_;
  const json doc = json::parse(out_);
  ASSERT_TRUE(doc["prioritizeError"].is_string()) << out_;
  EXPECT_NE(doc["prioritizeError"].get<std::string>().find("MostAllocated"), std::string::npos);
  EXPECT_EQ(doc["ranking"], json::array());
  EXPECT_TRUE(doc["nodes"][0]["score"].is_null());
  // And prioritize itself fails with the same words.
  body = wire::RequestBuffer::CopyOf(ExtenderArgsJson(Pod(), Nodes(), ArgsShape::kFullNodes));
  EXPECT_EQ(service.Handle(Verb::kPrioritize, 1, body, scratch_, out_, summary), 500);
  EXPECT_EQ(json::parse(out_)["Error"], "prioritize: " + doc["prioritizeError"].get<std::string>())
      << out_;
  // Node-cache mode without a cache cannot be explained at all: 503, as the
  // verbs answer.
  body = wire::RequestBuffer::CopyOf(ExtenderArgsNamesJson(Pod().Build(), {"n1"}));
  EXPECT_EQ(service.Handle(Verb::kExplain, 0, body, scratch_, out_, summary), 503) << out_;
}

TEST_F(ExplainTest, BadBodiesAnswer400) {
  EXPECT_EQ(Call(Verb::kExplain, "all", "{"), 400);
  EXPECT_NE(out_.find("decode ExtenderArgs"), std::string::npos) << out_;
  EXPECT_EQ(Call(Verb::kExplain, "all", R"({"Pod":null,"Nodes":null,"NodeNames":["n1"]})"), 400);
}

std::string ReadFixture(std::string_view mode, std::string_view name) {
  std::ifstream in(std::string(SCHEDEXT_TESTDATA_DIR) + "/kube-scheduler-1.26/" +
                       std::string(mode) + "/" + std::string(name) + ".json",
                   std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Explain decides as the verbs do, on every filter and prioritize body
// kube-scheduler sent (both modes): the same partition and reasons as filter,
// and, on the passing nodes, the same scores as prioritize.
TEST(ExplainAgreesTest, WithTheVerbsOnRecordedRequests) {
  // The cluster: the five nodes of the largest full-mode body.
  const json full = json::parse(ReadFixture("nodecache-false", "filter-3"));
  auto cache = std::make_unique<cluster::ClusterCache>();
  {
    wire::ObjectDecoder decoder;
    wire::ListMeta meta;
    std::vector<cluster::InformerObject> nodes;
    wire::RequestBuffer list = wire::RequestBuffer::CopyOf(
        json{{"metadata", {{"resourceVersion", "1"}}}, {"items", full["Nodes"]["items"]}}.dump());
    ASSERT_TRUE(decoder
                    .DecodeNodeList(list, meta,
                                    [&](const wire::NodeObject& o) {
                                      nodes.push_back({std::make_shared<const model::OwnedNode>(
                                                           o.info, o.resource_version),
                                                       {},
                                                       {}});
                                      return true;
                                    })
                    .ok());
    cache->OnReplace(cluster::ResourceKind::kNodes, std::move(nodes));
    cache->OnReplace(cluster::ResourceKind::kPods, {});
  }
  auto profiles = BuildProfiles(kConfig);
  server::ExtenderService service(profiles, 0, cache.get(), nullptr, nullptr);
  const explain::ExplainVerb explain_verb;
  service.SetExplain(&explain_verb);
  server::Scratch scratch;
  std::string out;
  server::RequestSummary summary;
  auto call = [&](Verb verb, size_t profile, const std::string& text) {
    wire::RequestBuffer body = wire::RequestBuffer::CopyOf(text);
    return service.Handle(verb, profile, body, scratch, out, summary);
  };
  int compared_scores = 0;
  for (std::string_view mode : {"nodecache-false", "nodecache-true"}) {
    for (std::string_view verb : {"filter", "prioritize"}) {
      for (int i = 1; i <= 11; ++i) {
        const std::string body = ReadFixture(mode, std::string(verb) + "-" + std::to_string(i));
        if (body.empty()) {
          continue;
        }
        for (size_t p = 0; p < profiles.size(); ++p) {
          SCOPED_TRACE(std::string(mode) + " " + std::string(verb) + "-" + std::to_string(i) +
                       " profile " + profiles[p]->name());
          ASSERT_EQ(call(Verb::kExplain, p, body), 200) << out;
          const json explained = json::parse(out);
          ASSERT_EQ(call(Verb::kFilter, p, body), 200) << out;
          const json filtered = json::parse(out);
          std::vector<std::string> passing;
          for (const json& n : explained["nodes"]) {
            const std::string name = n["name"];
            const std::string verdict = n["verdict"];
            if (verdict == "pass") {
              passing.push_back(name);
            } else if (verdict == "unschedulable") {
              EXPECT_EQ(filtered["FailedNodes"][name], n["reason"]) << name;
            } else {
              EXPECT_EQ(filtered["FailedAndUnresolvableNodes"][name], n["reason"]) << name;
            }
          }
          std::vector<std::string> filter_passing;
          if (filtered["NodeNames"].is_array()) {
            filter_passing = filtered["NodeNames"].get<std::vector<std::string>>();
          } else {
            for (const json& item : filtered["Nodes"]["items"]) {
              filter_passing.push_back(item["metadata"]["name"]);
            }
          }
          EXPECT_EQ(passing, filter_passing);
          if (passing.empty()) {
            continue;
          }
          // prioritize with exactly the passing nodes, as the scheduler would.
          json names_body = json::parse(body);
          names_body["Nodes"] = nullptr;
          names_body["NodeNames"] = passing;
          ASSERT_EQ(call(Verb::kPrioritize, p, names_body.dump()), 200) << out;
          // Its reply lists each score above the lowest, less the lowest.
          std::map<std::string, int64_t> explained_scores;
          int64_t lowest = std::numeric_limits<int64_t>::max();
          for (const json& n : explained["nodes"]) {
            if (n["verdict"] == "pass") {
              explained_scores[n["name"]] = n["score"].get<int64_t>();
              lowest = std::min(lowest, n["score"].get<int64_t>());
            }
          }
          std::map<std::string, int64_t> want_scores;
          for (const auto& [name, score] : explained_scores) {
            if (score > lowest) want_scores[name] = score - lowest;
          }
          std::map<std::string, int64_t> prioritized;
          for (const json& host : json::parse(out)) {
            prioritized[host["Host"]] = host["Score"].get<int64_t>();
          }
          EXPECT_EQ(prioritized, want_scores);
          compared_scores += explained_scores.size();
        }
      }
    }
  }
  EXPECT_GT(compared_scores, 40);
}

TEST_F(ExplainTest, TextTable) {
  ASSERT_EQ(Call(Verb::kExplain, "all", ExtenderArgsJson(Pod(), Nodes(), ArgsShape::kFullNodes)),
            200);
  StatusOr<std::string> text = FormatExplanationText(out_);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  const std::string want =
      "profile all, pod shop/web-1: 4 node(s) (Nodes), 2 pass\n"
      "RANK  NODE  SCORE  VERDICT       NodeHealth    TaintToleration (w1)  NodeLabel (w2)     "
      "NodeNumeric (w1)    NodeResourcesFit  LeastAllocated (w2)  BalancedAllocation (w1)\n"
      "1     n1    9      pass          pass          pass 0->100           pass 3->100 (200)  "
      "pass 20000000->100  pass              75->75 (150)         100->100\n"
      "2     n2    3      pass          pass          pass 1->0             pass 0->0 (0)      "
      "pass 60000000->0    pass              50->50 (100)         100->100\n"
      "-     n3    -      unresolvable  pass          unresolvable          pass               "
      "unresolvable        pass              -                    -\n"
      "-     n4    -      unresolvable  unresolvable  pass                  unresolvable       "
      "pass                pass              -                    -\n"
      "rejected:\n"
      "  n3: TaintToleration: node(s) had untolerated taint (untolerated taint {dedicated: "
      "gpu})\n"
      "  n4: NodeHealth: node(s) were not ready\n"
      "ranking: n1 > n2\n"
      "score = round(sum of weighted / (10 x total weight 7)); kube-scheduler adds score x "
      "extender weight x 10 to its own scores\n";
  EXPECT_EQ(*text, want) << *text;
  EXPECT_FALSE(FormatExplanationText("[1,2]").ok());
}

// POST /all/explain over a real loopback connection.
TEST_F(ExplainTest, LoopbackRoundTrip) {
  server::HttpServerOptions options;
  options.server.host = "127.0.0.1";
  options.server.port = 0;
  options.server.threads = 1;
  server::HttpServer http(*service_, metrics_.get(), options);
  ASSERT_TRUE(http.Bind().ok());
  Status served;
  std::thread thread([&] { served = http.Serve(); });
  const std::string body = ExtenderArgsNamesJson(Pod().Build(), {"n1", "n2", "ghost", "n3", "n4"});
  const schedext::testing::HttpReply reply = schedext::testing::Exchange(
      http.port(), schedext::testing::BuildRequest("POST", "/all/explain", body));
  const schedext::testing::HttpReply wrong = schedext::testing::Exchange(
      http.port(), schedext::testing::BuildRequest("GET", "/all/explain", ""));
  http.Stop();
  thread.join();
  EXPECT_TRUE(served.ok()) << served.ToString();
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(reply.Header("Content-Type").value_or(""), "application/json");
  EXPECT_EQ(json::parse(reply.body), ExpectedAll(true)) << reply.body;
  EXPECT_EQ(wrong.status, 405);
  // Explain requests are counted under their own verb label.
  std::string metrics;
  metrics_->Render(metrics);
  EXPECT_NE(metrics.find(R"(schedext_requests_total{profile="all",verb="explain",outcome="ok"} 1)"),
            std::string::npos)
      << metrics;
}

}  // namespace
}  // namespace schedext::explain
