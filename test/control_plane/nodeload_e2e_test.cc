// End to end, load-aware placement: the real kube-scheduler (the shipped
// node-cache configuration, bindVerb on, in-tree scoring off) places pods
// through the real schedext running NodeLoad in TargetLoadPacking mode, fed by
// a real Prometheus (testing/prometheus.h) that scrapes node_exporter-style
// series the test serves (testing/fake_node_exporter.h), one target per node
// labelled instance="<node>:9100" as NodeLoad's default mapping expects.
//
// Three nodes of equal size run at clearly different CPU loads. The node each
// pod must land on is worked out from TargetLoadPacking's formula (docs/
// nodeload.md), counting the pods schedext bound since the sample (its bind
// ledger), and checked against spec.nodeName. Then the loads change and the
// next pods follow; a pod that can only go to a node above hotCpuPercent
// stays Pending with NodeLoad's reason.
//
// Deterministic on a loaded machine: the scenario's margins are checked by the
// test itself against a measurement error of ±kNoisePercent (scrape jitter on
// a 5 s rate window); every wait is on a condition, bounded; a pod is created
// only once NodeLoad has counted the previous bind. kube-scheduler's own
// scoring is off, so only the extender ranks the nodes (it could not outweigh
// a bucket anyway: identical nodes, identical 100m pods).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "control_plane/e2e_suite.h"
#include "control_plane/scheduler_e2e.h"
#include "testing/eventually.h"
#include "testing/fake_node_exporter.h"
#include "testing/loopback.h"
#include "testing/prometheus.h"

namespace schedext::testing::e2e {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr std::string_view kNodeCacheConfig =
    "deploy/scheduler/kube-scheduler-config-nodecache.yaml";
constexpr std::string_view kProfile = "nodeload";

// Nodes of 4 CPUs; each pod's CPU limit (100m) is what TargetLoadPacking
// predicts for it: 2.5 % of a node.
constexpr double kPodPercent = 2.5;
constexpr double kTarget = 40;  // targetUtilization (Trimaran's default)
constexpr double kHotCpu = 90;  // hotCpuPercent
// How far a measured load may be off the exporter's setting.
constexpr double kNoisePercent = 5;

// NodeLoad the only scorer. rate() over 5 s and a poll every second: a
// changed load shows within seconds. maxAge is generous (a loaded machine may
// delay polls; a stale sample would score neutrally), and bindSettleSeconds
// keeps its default 60: every bind of the test counts. Prometheus's url is
// added last.
constexpr std::string_view kProfileYaml =
    "defaultProfile: nodeload\n"
    "profiles:\n"
    "  - name: nodeload\n"
    "    policies:\n"
    "      - name: NodeHealth\n"
    "      - name: NodeResourcesFit\n"
    "      - name: NodeLoad\n"
    "        weight: 1\n"
    "        args:\n"
    "          queries:\n"
    "            cpu: '100 * (1 - avg by (instance) (rate("
    "node_cpu_seconds_total{mode=\"idle\"}[5s])))'\n"
    "          pollIntervalSeconds: 1\n"
    "          maxAgeSeconds: 30\n"
    "          hotCpuPercent: 90\n";

const std::vector<std::string> kNodes = {"load-a", "load-b", "load-c"};
using Loads = std::map<std::string, double>;  // node -> CPU busy, percent

// Phase 1: "load-b" is the one a pod brings closest to the target from below;
// the idle "load-a" is not the best fit. Phase 2: "load-b" runs hot,
// "load-a" becomes the best fit.
const Loads kPhase1 = {{"load-a", 0}, {"load-b", 25}, {"load-c", 70}};
const Loads kPhase2 = {{"load-a", 25}, {"load-b", 98}, {"load-c", 60}};

// TargetLoadPacking's score of a node at `u` percent predicted CPU
// (docs/nodeload.md): best fit around the target.
int64_t TargetLoadPacking(double u) {
  if (u > 100) return 0;
  if (u > kTarget) return std::llround(kTarget * (100 - u) / (100 - kTarget));
  return std::llround((100 - kTarget) * u / kTarget + kTarget);
}

// The profile's only scorer, mapped onto the extender's 0..10, rounded half up.
int64_t ExtenderBucket(int64_t score) { return (score + 5) / 10; }

// The bucket a node gets for the next pod at measured `load`, with `binds`
// pods bound there since the sample.
int64_t Bucket(double load, int binds) {
  return ExtenderBucket(TargetLoadPacking(load + kPodPercent * (binds + 1)));
}

// The lowest and highest bucket while the measured load is anywhere within
// ±kNoisePercent of `load`.
std::pair<int64_t, int64_t> BucketRange(double load, int binds) {
  int64_t low = 10;
  int64_t high = 0;
  for (double d = -kNoisePercent; d <= kNoisePercent + 1e-9; d += 0.05) {
    const int64_t b = Bucket(load + d, binds);
    low = std::min(low, b);
    high = std::max(high, b);
  }
  return {low, high};
}

// The node the formula sends the next pod to. Fails the test unless that node
// wins for every measurement within the noise: its lowest bucket above every
// other node's highest, so that kube-scheduler's random choice among equal
// scores never comes in.
std::string ExpectedNode(const Loads& loads, const std::map<std::string, int>& binds) {
  std::string best;
  for (const std::string& n : kNodes) {
    const int b = binds.count(n) ? binds.at(n) : 0;
    if (best.empty() ||
        Bucket(loads.at(n), b) > Bucket(loads.at(best), binds.count(best) ? binds.at(best) : 0)) {
      best = n;
    }
  }
  const int best_binds = binds.count(best) ? binds.at(best) : 0;
  for (const std::string& n : kNodes) {
    if (n == best) continue;
    EXPECT_GT(BucketRange(loads.at(best), best_binds).first,
              BucketRange(loads.at(n), binds.count(n) ? binds.at(n) : 0).second)
        << "the scenario has no safe margin between " << best << " and " << n;
  }
  return best;
}

// The value of the first series of `family` in a Prometheus text exposition
// (-1 when absent).
double MetricValue(const std::string& text, std::string_view family) {
  const std::string prefix = "\n" + std::string(family) + "{";
  const size_t at = text.find(prefix);
  if (at == std::string::npos) return -1;
  const size_t space = text.find("} ", at);
  if (space == std::string::npos) return -1;
  return std::strtod(text.c_str() + space + 2, nullptr);
}

class NodeLoadE2eTest : public E2eSuite {
 protected:
  struct Load {
    std::unique_ptr<FakeNodeExporter> exporter;
    std::unique_ptr<PrometheusServer> prometheus;
    Status setup = OkStatus();
  };
  static Load& load() {
    static Load l;
    return l;
  }

  static void SetUpTestSuite() {
    Load& l = load();
    l = Load{};
    if (!FindPrometheusBinary().has_value()) return;  // SetUp says so
    // The phase-1 loads from the start: the first rate() Prometheus computes
    // is already the right one.
    l.exporter = std::make_unique<FakeNodeExporter>();
    PrometheusOptions options;
    for (const std::string& n : kNodes) {
      l.exporter->Set(n, kPhase1.at(n) / 100, 0.30);
      options.targets.push_back({n,
                                 "127.0.0.1:" + std::to_string(l.exporter->port()),
                                 "/metrics/" + n,
                                 {{"instance", n + ":9100"}}});
    }
    StatusOr<std::unique_ptr<PrometheusServer>> started = PrometheusServer::Start(options);
    if (!started.ok()) {
      l.setup = started.status();
      return;
    }
    l.prometheus = std::move(started).value();
    const std::string url = l.prometheus->url();
    StartE2e({}, [url]() -> StatusOr<std::string> {
      SCHEDEXT_ASSIGN_OR_RETURN(std::string base, ReadSourceFile("deploy/base/schedext.yaml"));
      return MergeYaml(
          base, std::string(kProfileYaml) + "          prometheus: {url: \"" + url + "\"}\n");
    });
  }

  static void TearDownTestSuite() {
    E2eSuite::TearDownTestSuite();
    Load& l = load();
    if (l.prometheus) l.prometheus->Stop();
    l = Load{};
  }

  void SetUp() override {
    if (!FindPrometheusBinary().has_value()) {
      if (PrometheusRequired()) FAIL() << "CI=true and no prometheus (apt-get install prometheus)";
      GTEST_SKIP() << "no prometheus (apt-get install prometheus)";
    }
    ASSERT_TRUE(load().setup.ok()) << load().setup.ToString();
    base_set_up_ = true;
    E2eSuite::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (cp().scheduler().pid <= 0) {
      SchedulerEdits edits;
      edits.disable_in_tree_scoring = true;
      ASSERT_NO_FATAL_FAILURE(StartScheduler(kNodeCacheConfig, edits, "/nodeload"));
    }
    for (const std::string& n : kNodes) {
      // The exporter's names, not AddNode's <ns>-<suffix>: Prometheus's
      // targets were fixed before the namespace existed.
      nodes_.push_back(n);
      NodeSpec node;
      node.name = n;
      node.capacity = {{"cpu", "4"}, {"memory", "8Gi"}};
      node.labels = {{std::string(kTestLabel), ns_}, {std::string(kNodeLabel), n}};
      const Status s = CreateReadyNode(cp(), node);
      ASSERT_TRUE(s.ok()) << s.ToString();
    }
  }

  void TearDown() override {
    // E2eSuite's TearDown reads the control plane's logs on failure: only
    // once its SetUp ran.
    if (base_set_up_) E2eSuite::TearDown();
  }

  static PodSpec LoadPod(const PodSpec& base) {
    PodSpec p = base;
    p.requests = {{"cpu", "100m"}, {"memory", "64Mi"}};
    p.limits = {{"cpu", "100m"}, {"memory", "64Mi"}};
    return p;
  }

  // schedext's priorities for a pod like the test's, as kube-scheduler would
  // read them: node -> its score above the request's lowest, 0 for a node the
  // reply leaves out (empty when it did not answer 200).
  std::map<std::string, int64_t> Priorities() const {
    const json body = {{"Pod", json::parse(PodJson(LoadPod(Pod("probe", {}))))},
                       {"Nodes", nullptr},
                       {"NodeNames", kNodes}};
    const HttpReply reply =
        Exchange(schedext().port(),
                 BuildRequest("POST", "/" + std::string(kProfile) + "/prioritize", body.dump()));
    std::map<std::string, int64_t> out;
    const json list = json::parse(reply.body, nullptr, false);
    if (reply.status != 200 || !list.is_array()) return out;
    for (const std::string& n : kNodes) out[n] = 0;
    for (const json& h : list) out[h.value("Host", "")] = h.value("Score", int64_t{-1});
    return out;
  }

  // schedext's filter answer for `pod` over the test's nodes, as
  // kube-scheduler would get it (no object when it did not answer 200).
  json Verdicts(const PodSpec& pod) const {
    const json body = {
        {"Pod", json::parse(PodJson(pod))}, {"Nodes", nullptr}, {"NodeNames", kNodes}};
    const HttpReply reply =
        Exchange(schedext().port(),
                 BuildRequest("POST", "/" + std::string(kProfile) + "/filter", body.dump()));
    return reply.status == 200 ? json::parse(reply.body, nullptr, false) : json();
  }

  // Waits until schedext's priorities are within one bucket of what `loads`
  // give (the scheduler then sees the same sample, or a later one closer to
  // `loads`).
  void WaitForLoads(const Loads& loads, const std::map<std::string, int>& binds) {
    std::map<std::string, int64_t> want;
    int64_t lowest = std::numeric_limits<int64_t>::max();
    for (const std::string& n : kNodes) {
      want[n] = Bucket(loads.at(n), binds.count(n) ? binds.at(n) : 0);
      lowest = std::min(lowest, want[n]);
    }
    for (auto& [n, w] : want) w -= lowest;
    std::map<std::string, int64_t> got;
    const bool seen = Eventually(
        [&] {
          got = Priorities();
          if (got.size() != want.size()) return false;
          for (const auto& [n, w] : want) {
            if (!got.count(n) || std::llabs(got.at(n) - w) > 1) return false;
          }
          return true;
        },
        seconds(90), milliseconds(200));
    ASSERT_TRUE(seen) << "priorities " << ::testing::PrintToString(got) << ", want "
                      << ::testing::PrintToString(want) << "\n"
                      << load().prometheus->LogTail();
    Note("priorities " + ::testing::PrintToString(got));
  }

  // The pods NodeLoad counts as bound since the sample (its gauge).
  double RecentBinds() const {
    return MetricValue(HttpGet(schedext().port(), "/metrics").second,
                       "schedext_nodeload_recent_binds");
  }

  // Creates `name`, waits for its node, checks it is `want`, then waits until
  // NodeLoad has counted the bind, so the next pod's expectation holds.
  void PlaceAndExpect(const std::string& name, const std::string& want,
                      std::map<std::string, int>& binds) {
    ASSERT_NO_FATAL_FAILURE(Create(LoadPod(Pod(name, {}))));
    const auto bound = WaitForNodeNames(cp(), ns_, {name}, kScheduleTimeout);
    ASSERT_EQ(bound.count(name), 1u) << name << " not bound";
    EXPECT_EQ(bound.at(name), want) << name;
    ++binds[bound.at(name)];
    ++total_binds_;
    ASSERT_TRUE(
        Eventually([&] { return RecentBinds() == total_binds_; }, seconds(30), milliseconds(50)))
        << "NodeLoad counts " << RecentBinds() << " recent binds, want " << total_binds_;
  }

  bool base_set_up_ = false;
  int total_binds_ = 0;
};

TEST_F(NodeLoadE2eTest, PodsGoWhereTargetLoadPackingSaysAndFollowTheLoad) {
  std::map<std::string, int> binds;  // node -> pods schedext bound there

  // Phase 1: a 0 %, b 25 %, c 70 %. First pod: a 2.5 % → 43.75, bucket 4;
  // b 27.5 % → 81.25, bucket 8; c 72.5 % → 18.3, bucket 2. With b's own
  // binds counted (+2.5 % each) b stays below the target: 85 → 9, 88.75 → 9.
  ASSERT_NO_FATAL_FAILURE(WaitForLoads(kPhase1, binds));
  for (int i = 0; i < 3; ++i) {
    const std::string want = ExpectedNode(kPhase1, binds);
    EXPECT_EQ(want, "load-b");
    ASSERT_NO_FATAL_FAILURE(PlaceAndExpect("one-" + std::to_string(i), want, binds));
  }

  // Phase 2: a 25 %, b 98 % (+7.5 % of its three pods: 108 → 0), c 60 %
  // (62.5 → 25, bucket 3). a: 27.5 → 81.25, 30 → 85, 32.5 → 88.75: 8, 9, 9.
  for (const std::string& n : kNodes) load().exporter->Set(n, kPhase2.at(n) / 100, 0.30);
  ASSERT_NO_FATAL_FAILURE(WaitForLoads(kPhase2, binds));
  for (int i = 0; i < 3; ++i) {
    const std::string want = ExpectedNode(kPhase2, binds);
    EXPECT_EQ(want, "load-a");
    ASSERT_NO_FATAL_FAILURE(PlaceAndExpect("two-" + std::to_string(i), want, binds));
  }

  // b is above hotCpuPercent (98 % measured, even at -kNoisePercent): a pod
  // that may only go there is refused by NodeLoad's filter and stays Pending.
  ASSERT_GT(kPhase2.at("load-b") - kNoisePercent, kHotCpu);
  PodSpec pinned = LoadPod(Pod("pinned-to-b", {}));
  pinned.node_selector[std::string(kNodeLabel)] = "load-b";
  // The rate window may still be catching up with b's new load: first until
  // schedext's filter refuses b for such a pod (the load only rises from
  // here), then through kube-scheduler.
  json refused;
  ASSERT_TRUE(Eventually(
      [&] {
        const json verdicts = Verdicts(pinned);
        if (!verdicts.is_object()) return false;
        refused = verdicts.value("FailedAndUnresolvableNodes", json::object());
        return refused.is_object() && refused.contains("load-b");
      },
      seconds(90), milliseconds(200)))
      << refused.dump();
  EXPECT_EQ(refused.value("load-b", ""), "node(s) were too hot: CPU use above 90%");
  ASSERT_NO_FATAL_FAILURE(Create(pinned));
  const auto message = WaitUnschedulable(cp(), ns_, "pinned-to-b", kScheduleTimeout);
  ASSERT_TRUE(message.has_value()) << GetPod(cp(), ns_, "pinned-to-b").dump();
  Note("pinned pod: " + *message);
  EXPECT_NE(message->find("node(s) were too hot: CPU use above 90%"), std::string::npos)
      << *message;
}

}  // namespace
}  // namespace schedext::testing::e2e
