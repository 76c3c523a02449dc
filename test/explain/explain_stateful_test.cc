// POST /<profile>/explain for the two policies with state of their own: exact
// documents, both node modes, every value worked out by hand.
//   GpuShare: per-device GPU memory the cluster cache counted (the policy's
//     NodeAccounting, fed pods with device annotations and an unhealthy-GPU
//     ConfigMap, as the informers feed it), binpack and spread scoring.
//   NodeLoad: a fixed Prometheus snapshot (the policy over LoadSources the
//     test sets, registered under its own name), TargetLoadPacking with the
//     hot-CPU filter, and LoadVariationRiskBalancing.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "explain/explain_fixture.h"
#include "policy/builtin/nodeload/bind_ledger.h"
#include "policy/builtin/nodeload/load_poller.h"
#include "policy/builtin/nodeload/nodeload.h"
#include "schedext/explain/explain.h"
#include "schedext/policy/policy_host.h"
#include "schedext/server/service.h"

namespace schedext::explain {
namespace {

using nlohmann::json;
using server::Verb;
using namespace explain_testing;  // NOLINT: test vocabulary
using schedext::testing::ArgsShape;
using schedext::testing::ExtenderArgsJson;
using schedext::testing::ExtenderArgsNamesJson;

// Runs `verb` of profile `profile` through `service`; the reply in `out`.
int Call(server::ExtenderService& service, Verb verb, std::string_view profile,
         const std::string& body, std::string& out) {
  const int index = service.FindProfile(profile);
  EXPECT_GE(index, 0) << profile;
  wire::RequestBuffer buffer = wire::RequestBuffer::CopyOf(body);
  server::Scratch scratch;
  server::RequestSummary summary;
  return service.Handle(verb, static_cast<size_t>(index), buffer, scratch, out, summary);
}

// One node of an expected document: its single policy's filter verdict and,
// when it passes, that policy's score.
json PassingNode(std::string_view name, std::string_view policy, int64_t raw, int64_t score,
                 int64_t rank, bool filter = true) {
  json filters = json::array();
  if (filter) {
    filters.push_back(
        {{"policy", policy}, {"verdict", "pass"}, {"reason", nullptr}, {"detail", nullptr}});
  }
  return {
      {"name", name},
      {"verdict", "pass"},
      {"reason", nullptr},
      {"detail", nullptr},
      {"rejectedBy", nullptr},
      {"filters", filters},
      {"scores",
       {{{"policy", policy}, {"weight", 1}, {"raw", raw}, {"normalized", raw}, {"weighted", raw}}}},
      {"weightedTotal", raw},
      {"score", score},
      {"rank", rank}};
}

json RejectedNode(std::string_view name, std::string_view policy, std::string_view verdict,
                  std::string_view reason, std::string_view detail) {
  const json detail_json = detail.empty() ? json(nullptr) : json(detail);
  return {{"name", name},
          {"verdict", verdict},
          {"reason", reason},
          {"detail", detail_json},
          {"rejectedBy", policy},
          {"filters",
           {{{"policy", policy}, {"verdict", verdict}, {"reason", reason}, {"detail", detail_json}}}},
          {"scores", nullptr},
          {"weightedTotal", nullptr},
          {"score", nullptr},
          {"rank", nullptr}};
}

const json kGhost = json::parse(R"({"name":"ghost","verdict":"unresolvable",
    "reason":"node(s) unknown to schedext","detail":null,"rejectedBy":null,"filters":[],
    "scores":null,"weightedTotal":null,"score":null,"rank":null})");

// The document of one profile of one policy (weight 1) explaining web-1.
json Document(std::string_view profile, std::string_view policy, bool filter,
              const std::vector<json>& nodes, const std::vector<std::string>& ranking,
              ArgsShape shape) {
  return {{"profile", profile},
          {"pod", {{"namespace", "shop"}, {"name", "web-1"}, {"uid", "uid-web-1"}}},
          {"nodeMode", shape == ArgsShape::kFullNodes ? "Nodes" : "NodeNames"},
          {"scoring", "passing"},
          {"policies", {{{"name", policy}, {"weight", 1}, {"filter", filter}, {"score", true}}}},
          {"totalWeight", 1},
          {"filterError", nullptr},
          {"prioritizeError", nullptr},
          {"nodes", nodes},
          {"ranking", ranking}};
}

// ---------------------------------------------------------------- GpuShare

// The pod to place: 5 GiB of GPU memory (the fixture's web-1 plus a limit).
PodJson GpuPod() {
  PodJson pod = Pod();
  pod.Limit("aliyun.com/gpu-mem", "5");
  return pod;
}

class ExplainGpuShareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto config = config::LoadConfigText(kGpuConfig, "test");
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    policy::Registry registry;
    ASSERT_TRUE(policy::RegisterBuiltinPolicies(registry).ok());
    std::vector<std::shared_ptr<const pipeline::Profile>> profiles;
    for (size_t i = 0; i < config->profiles.size(); ++i) {
      auto p = pipeline::Profile::Build(config->profiles[i], registry,
                                        "profiles[" + std::to_string(i) + "]", &host_);
      ASSERT_TRUE(p.ok()) << p.status().ToString();
      profiles.push_back(*p);
    }
    // The cache with GpuShare's accounting and ConfigMap watch, as main
    // builds it from the host.
    cluster::CacheOptions options;
    options.accountings = host_.accountings();
    options.summaries = host_.summaries();
    ASSERT_EQ(host_.watches().size(), 1U);
    options.watches.push_back(host_.watches()[0].handler);
    cache_ = std::make_unique<cluster::ClusterCache>(options);
    ASSERT_NO_FATAL_FAILURE(Feed());
    service_ =
        std::make_unique<server::ExtenderService>(profiles, 0, cache_.get(), nullptr, nullptr);
    service_->SetExplain(&explain_verb_);
  }

  // g1: a 6 GiB on device 0, b 3 GiB on device 1; g2: c 7 GiB on device 0.
  void Feed() {
    FeedGpuCluster(*cache_, {GpuPodOn("a", "g1", "6", "0"), GpuPodOn("b", "g1", "3", "1"),
                             GpuPodOn("c", "g2", "7", "0")});
    ASSERT_TRUE(cache_->Synced());
  }

  policy::PolicyHost host_;
  std::unique_ptr<cluster::ClusterCache> cache_;
  const explain::ExplainVerb explain_verb_;
  std::unique_ptr<server::ExtenderService> service_;
  std::string out_;
};

// The pod asks for 5 GiB on one device. Free per healthy device:
//   g1 [8-6, 8-3, 8, 8] = [2, 5, 8, 8]: best fit is device 1 (the least free
//      that holds 5), 0 left. binpack 100 × (8 - 0) / 8 = 100; spread
//      100 × (23 - 5) / 32 = 56.25 → 56.
//   g2 [8-7] = [1] (device 1 unhealthy): some healthy device is large enough,
//      none has room: Unschedulable, largest free 1 GiB.
//   g3 one device of 4 GiB: never large enough: Unresolvable.
//   g4 [8, 8]: device 0 (ties to the lowest index), 3 left. binpack
//      100 × 5 / 8 = 62.5 → 62; spread 100 × (16 - 5) / 16 = 68.75 → 68.
//   cpu: no shared GPU.
// Scores (one policy of weight 1): round(raw / 10): binpack g1 10, g4 6;
// spread g1 6, g4 7 — the ranking flips.
std::vector<json> ExpectedGpuNodes(bool spread, bool ghost) {
  constexpr std::string_view kPolicy = "GpuShare";
  std::vector<json> nodes;
  nodes.push_back(spread ? PassingNode("g1", kPolicy, 56, 6, 2)
                         : PassingNode("g1", kPolicy, 100, 10, 1));
  nodes.push_back(RejectedNode("g2", kPolicy, "unschedulable",
                               "Insufficient aliyun.com/gpu-mem on any one GPU",
                               "needs 5 GiB on one GPU; largest free 1 GiB, short by 4 GiB"));
  if (ghost) {
    nodes.push_back(kGhost);
  }
  nodes.push_back(RejectedNode(
      "g3", kPolicy, "unresolvable",
      "node(s) had no healthy GPU large enough for the pod's aliyun.com/gpu-mem",
      "needs 5 GiB on one GPU; its 1 GPU(s) hold 4 GiB each"));
  nodes.push_back(spread ? PassingNode("g4", kPolicy, 68, 7, 1)
                         : PassingNode("g4", kPolicy, 62, 6, 2));
  nodes.push_back(RejectedNode("cpu", kPolicy, "unresolvable", "node(s) had no shared GPU", ""));
  return nodes;
}

TEST_F(ExplainGpuShareTest, BinpackAndSpreadInBothNodeModes) {
  for (bool spread : {false, true}) {
    const std::string profile = spread ? "spread" : "binpack";
    const std::vector<std::string> ranking =
        spread ? std::vector<std::string>{"g4", "g1"} : std::vector<std::string>{"g1", "g4"};
    SCOPED_TRACE(profile);
    // Full nodes: the objects from the request, the GPU usage from the cache.
    ASSERT_EQ(Call(*service_, Verb::kExplain, profile,
                   ExtenderArgsJson(GpuPod(), GpuNodes(), ArgsShape::kFullNodes), out_),
              200)
        << out_;
    EXPECT_EQ(json::parse(out_),
              Document(profile, "GpuShare", true, ExpectedGpuNodes(spread, false), ranking,
                       ArgsShape::kFullNodes))
        << out_;
    // Node names: everything from the cache; an unknown name is unresolvable.
    ASSERT_EQ(
        Call(*service_, Verb::kExplain, profile,
             ExtenderArgsNamesJson(GpuPod().Build(), {"g1", "g2", "ghost", "g3", "g4", "cpu"}),
             out_),
        200)
        << out_;
    EXPECT_EQ(json::parse(out_), Document(profile, "GpuShare", true, ExpectedGpuNodes(spread, true),
                                          ranking, ArgsShape::kNodeNames))
        << out_;
    // The verbs agree: prioritize of the passing nodes answers those scores
    // less the lowest (binpack g1 10, g4 6; spread g1 6, g4 7).
    ASSERT_EQ(Call(*service_, Verb::kPrioritize, profile,
                   ExtenderArgsNamesJson(GpuPod().Build(), {"g1", "g4"}), out_),
              200);
    EXPECT_EQ(out_, spread ? R"([{"Host":"g4","Score":1}])" : R"([{"Host":"g1","Score":4}])");
  }
}

// ---------------------------------------------------------------- NodeLoad

using policy::nodeload::BindLedger;
using policy::nodeload::Clock;
using policy::nodeload::LoadSnapshot;
using policy::nodeload::LoadSources;
using policy::nodeload::NodeLoadSample;

constexpr std::string_view kLoadConfig = R"(
profiles:
  - name: tlp
    policies:
      - name: NodeLoad
        args:
          prometheus: {url: "http://127.0.0.1:1"}
          hotCpuPercent: 80
  - name: risk
    policies:
      - name: NodeLoad
        args:
          mode: LoadVariationRiskBalancing
          prometheus: {url: "http://127.0.0.1:1"}
)";

NodeLoadSample Sample(double cpu, double cpu_stddev, double memory) {
  NodeLoadSample s;
  s.cpu = cpu;
  s.cpu_stddev = cpu_stddev;
  s.memory = memory;
  return s;
}

class ExplainNodeLoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The fixture's nodes (n1, n2, n4: 4 cpu / 8 Gi; n3: 2 cpu / 4 Gi); n4
    // has no data.
    const Clock::time_point taken = Clock::time_point() + std::chrono::hours(1);
    auto snapshot = std::make_shared<const LoadSnapshot>(
        std::vector<std::pair<std::string, NodeLoadSample>>{
            {"n1", Sample(10, 5, 25)}, {"n2", Sample(50, 15, 45)}, {"n3", Sample(85, 0, 10)}},
        taken);
    // NodeLoad as registered by the built-ins, but over this snapshot and a
    // clock at the time it was taken (fresh), with no recent binds.
    policy::Registry registry;
    ASSERT_TRUE(
        registry
            .Register(
                "NodeLoad",
                [snapshot, taken](const nlohmann::json& args, const policy::PolicyContext& context)
                    -> StatusOr<std::unique_ptr<policy::Policy>> {
                  SCHEDEXT_ASSIGN_OR_RETURN(policy::nodeload::NodeLoadSpec spec,
                                            policy::nodeload::ParseNodeLoadArgs(args, context));
                  LoadSources sources;
                  sources.snapshot = [snapshot] { return snapshot; };
                  sources.now = [taken] { return taken; };
                  auto ledger = std::make_shared<BindLedger>(std::chrono::minutes(10),
                                                             [taken] { return taken; });
                  return policy::nodeload::MakeNodeLoad(std::move(spec), std::move(sources),
                                                        std::move(ledger), nullptr);
                })
            .ok());
    auto config = config::LoadConfigText(kLoadConfig, "test");
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    std::vector<std::shared_ptr<const pipeline::Profile>> profiles;
    for (size_t i = 0; i < config->profiles.size(); ++i) {
      auto p = pipeline::Profile::Build(config->profiles[i], registry,
                                        "profiles[" + std::to_string(i) + "]");
      ASSERT_TRUE(p.ok()) << p.status().ToString();
      profiles.push_back(*p);
    }
    cache_ = CacheWith(Nodes(), {BoundPod()});
    service_ =
        std::make_unique<server::ExtenderService>(profiles, 0, cache_.get(), nullptr, nullptr);
    service_->SetExplain(&explain_verb_);
  }

  std::unique_ptr<cluster::ClusterCache> cache_;
  const explain::ExplainVerb explain_verb_;
  std::unique_ptr<server::ExtenderService> service_;
  std::string out_;
};

// TargetLoadPacking (target 40), the pod (1 cpu requested, no limit)
// predicted at 1.5 × 1000m = 1500m:
//   n1 (10 % of 4000m = 400m): 100 × 1900 / 4000 = 47.5 % > 40 →
//      40 × (100 - 47.5) / 60 = 35 → score round(3.5) = 4
//   n2 (2000m): 87.5 % → 40 × 12.5 / 60 = 8.33 → 8 → score 1
//   n3: measured 85 % > hotCpuPercent 80 → Unresolvable (the pod's own
//      prediction does not count in the filter, only recent binds)
//   n4: no data → passes, neutral 50 → score 5
// Ranking n4, n1, n2. The bound pod db-1 on n2 is not NodeLoad's concern.
TEST_F(ExplainNodeLoadTest, TargetLoadPackingWithTheHotFilterInBothNodeModes) {
  auto nodes = [](bool ghost) {
    std::vector<json> out = {PassingNode("n1", "NodeLoad", 35, 4, 2),
                             PassingNode("n2", "NodeLoad", 8, 1, 3)};
    if (ghost) {
      out.push_back(kGhost);
    }
    out.push_back(RejectedNode("n3", "NodeLoad", "unresolvable",
                               "node(s) were too hot: CPU use above 80%",
                               "CPU use 85%, memory use 10% (with binds since the sample)"));
    out.push_back(PassingNode("n4", "NodeLoad", 50, 5, 1));
    return out;
  };
  const std::vector<std::string> ranking = {"n4", "n1", "n2"};
  ASSERT_EQ(Call(*service_, Verb::kExplain, "tlp",
                 ExtenderArgsJson(Pod(), Nodes(), ArgsShape::kFullNodes), out_),
            200)
      << out_;
  EXPECT_EQ(json::parse(out_),
            Document("tlp", "NodeLoad", true, nodes(false), ranking, ArgsShape::kFullNodes))
      << out_;
  ASSERT_EQ(Call(*service_, Verb::kExplain, "tlp",
                 ExtenderArgsNamesJson(Pod().Build(), {"n1", "n2", "ghost", "n3", "n4"}), out_),
            200)
      << out_;
  EXPECT_EQ(json::parse(out_),
            Document("tlp", "NodeLoad", true, nodes(true), ranking, ArgsShape::kNodeNames))
      << out_;
}

// LoadVariationRiskBalancing (margin 1, sensitivity 1; no filter): per
// resource (1 - (mu + sigma) / 2) × 100 with mu = (avg + request) / capacity,
// sigma = stddev / capacity; the node's score is the worse resource. The pod
// requests 1 cpu and 2 Gi.
//   n1: cpu (400 + 1000) / 4000 = 0.35, sigma 200 / 4000 = 0.05 → 80;
//       memory (2 Gi + 2 Gi) / 8 Gi = 0.5, no stddev → 75. 75 → score 8
//   n2: cpu (2000 + 1000) / 4000 = 0.75, sigma 0.15 → 55; memory
//       (3.6 Gi + 2 Gi) / 8 Gi = 0.7 → 65. 55 → score round(5.5) = 6
//   n3: cpu (1700 + 1000) / 2000 → clamped to 1 → 50; memory
//       (0.4 Gi + 2 Gi) / 4 Gi = 0.6 → 70. 50 → score 5
//   n4: no data → neutral 50 → score 5 (shares rank 3 with n3)
TEST_F(ExplainNodeLoadTest, RiskBalancingInBothNodeModes) {
  for (ArgsShape shape : {ArgsShape::kFullNodes, ArgsShape::kNodeNames}) {
    ASSERT_EQ(
        Call(*service_, Verb::kExplain, "risk", ExtenderArgsJson(Pod(), Nodes(), shape), out_), 200)
        << out_;
    EXPECT_EQ(json::parse(out_), Document("risk", "NodeLoad", false,
                                          {PassingNode("n1", "NodeLoad", 75, 8, 1, false),
                                           PassingNode("n2", "NodeLoad", 55, 6, 2, false),
                                           PassingNode("n3", "NodeLoad", 50, 5, 3, false),
                                           PassingNode("n4", "NodeLoad", 50, 5, 3, false)},
                                          {"n1", "n2", "n3", "n4"}, shape))
        << out_;
  }
}

}  // namespace
}  // namespace schedext::explain
