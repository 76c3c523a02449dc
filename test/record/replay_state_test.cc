// Replay of the stateful policies: a real ExtenderService + Recorder records
// GpuShare (per-device memory from its NodeAccounting in the cluster cache)
// and NodeLoad (a Prometheus snapshot and recent binds) decisions, and
// `schedext replay`'s path (cli::LoadProfiles, ReplayDirectory) decides them
// again. Unchanged configuration: nothing changes; a changed one: exactly the
// nodes the change moves; a record without state (an older recorder's):
// replayed against empty state and said so.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "explain/explain_fixture.h"
#include "policy/builtin/gpushare/accounting.h"
#include "policy/builtin/nodeload/bind_ledger.h"
#include "policy/builtin/nodeload/load_poller.h"
#include "policy/builtin/nodeload/nodeload.h"
#include "record/replay_testing.h"
#include "schedext/cli/commands.h"
#include "schedext/policy/policy_host.h"
#include "schedext/record/record_file.h"
#include "schedext/record/recorder.h"
#include "schedext/record/replay.h"
#include "schedext/server/service.h"

namespace schedext::record {
namespace {

using nlohmann::json;
using server::Verb;
using namespace explain_testing;  // NOLINT: test vocabulary
using namespace replay_testing;   // NOLINT: test vocabulary
using schedext::testing::ArgsShape;
using schedext::testing::ExtenderArgsJson;
using schedext::testing::ExtenderArgsNamesJson;
using schedext::testing::PreemptionArgsJson;

// ---------------------------------------------------------------- GpuShare

// g1: a 6 GiB on device 0, b 3 GiB on device 1; g2: c 7 and e 1 GiB on
// device 0 (full).
std::vector<PodJson> GpuPods() {
  return {GpuPodOn("a", "g1", "6", "0"), GpuPodOn("b", "g1", "3", "1"),
          GpuPodOn("c", "g2", "7", "0"), GpuPodOn("e", "g2", "1", "0")};
}

PodJson GpuPodAsking(std::string memory) {
  PodJson pod = Pod();
  pod.Limit("aliyun.com/gpu-mem", std::move(memory));
  return pod;
}

// binpack now scores as spread.
constexpr std::string_view kGpuChanged = R"(
profiles:
  - name: binpack
    policies:
      - name: GpuShare
        args:
          scoring: spread
  - name: spread
    policies:
      - name: GpuShare
        args:
          scoring: spread
)";

class ReplayGpuShareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    record_dir_ = dir_ + "/record";
    // Recorded as main runs it: the cache with GpuShare's accounting and
    // watch from the host, the recorder with the host's accountings.
    cli::LoadedConfig live = Load(dir_, kGpuConfig);
    ASSERT_EQ(live.profiles.size(), 2U);
    cluster::CacheOptions cache_options;
    cache_options.accountings = live.host->accountings();
    cache_options.summaries = live.host->summaries();
    ASSERT_EQ(live.host->watches().size(), 1U);
    cache_options.watches.push_back(live.host->watches()[0].handler);
    cluster::ClusterCache cache(cache_options);
    ASSERT_NO_FATAL_FAILURE(Feed(cache));
    RecorderOptions options;
    options.config.dir = record_dir_;
    options.accountings = live.host->accountings();
    auto recorder = Recorder::Start(options);
    ASSERT_TRUE(recorder.ok()) << recorder.status().ToString();
    server::ExtenderService service(live.profiles, 0, &cache, nullptr, nullptr);
    service.SetObserver(recorder->get());
    server::Scratch scratch;
    std::string out;
    server::RequestSummary summary;
    auto call = [&](Verb verb, size_t profile, const std::string& text) {
      wire::RequestBuffer body = wire::RequestBuffer::CopyOf(text);
      return service.Handle(verb, profile, body, scratch, out, summary);
    };
    // 5 GiB: g1 fits on device 1 (5 free), g2 has no room on its healthy
    // device 0 (0 free), g3's device is too small, cpu has none.
    ASSERT_EQ(
        call(Verb::kFilter, 0,
             ExtenderArgsNamesJson(GpuPodAsking("5").Build(), {"g1", "g2", "g3", "g4", "cpu"})),
        200);
    ASSERT_EQ(out, R"({"Nodes":null,"NodeNames":["g1","g4"],)"
                   R"x("FailedNodes":{"g2":"Insufficient aliyun.com/gpu-mem on any one GPU"},)x"
                   R"("FailedAndUnresolvableNodes":{"g3":"node(s) had no healthy GPU large )"
                   R"(enough for the pod's aliyun.com/gpu-mem",)"
                   R"("cpu":"node(s) had no shared GPU"},"Error":""})");
    // binpack: g1 device 1 full afterwards 100 → 10; g4 62 → 6.
    ASSERT_EQ(
        call(Verb::kPrioritize, 0, ExtenderArgsNamesJson(GpuPodAsking("5").Build(), {"g1", "g4"})),
        200);
    // Less the lowest, 6: only g1 is listed.
    ASSERT_EQ(out, R"([{"Host":"g1","Score":4}])");
    // spread, full-node mode: g1 100 × (23 - 5) / 32 = 56 → 6, g4 68 → 7,
    // the rest cannot take it: 0.
    ASSERT_EQ(call(Verb::kPrioritize, 1,
                   ExtenderArgsJson(GpuPodAsking("5"), GpuNodes(), ArgsShape::kFullNodes)),
              200);
    ASSERT_EQ(out, R"([{"Host":"g1","Score":6},{"Host":"g4","Score":7}])");
    // 8 GiB preempting c from g2: e stays on device 0, device 1 is
    // unhealthy: dropped. g1's devices 2 and 3 are free: a stays listed
    // (a hook that needs no victim leaves the scheduler's list).
    ASSERT_EQ(call(Verb::kPreempt, 0,
                   PreemptionArgsJson(GpuPodAsking("8"),
                                      {{"g2", {GpuPods()[2]}, 0}, {"g1", {GpuPods()[0]}, 0}},
                                      ArgsShape::kNodeNames)),
              200);
    ASSERT_EQ(out, R"({"NodeNameToMetaVictims":{"g1":{"Pods":[{"UID":"uid-a"}],)"
                   R"("NumPDBViolations":0}}})");
    (*recorder)->Flush();
    ASSERT_EQ((*recorder)->stats().recorded, 4U);
  }
  void TearDown() override { RemoveDir(dir_); }

  // The nodes and pods through the real object decoder, and g2's
  // unhealthy-GPU ConfigMap through GpuShare's watch.
  static void Feed(cluster::ClusterCache& cache) {
    FeedGpuCluster(cache, GpuPods());
    ASSERT_TRUE(cache.Synced());
  }

  std::string dir_;
  std::string record_dir_;
};

// The state as the writer wrote it and the reader reads it back, decoded by
// the codec of a freshly built GpuShare into the device usage the cache had.
TEST_F(ReplayGpuShareTest, TheStateRoundTripsThroughTheRecording) {
  const std::vector<std::string> lines = RecordLines(record_dir_);
  ASSERT_EQ(lines.size(), 4U);
  const json filter = json::parse(lines[0]);
  EXPECT_EQ(
      filter["usage"]["g1"]["states"],
      json::parse(R"({"GpuShare":{"used":[6,3],"pods":[1,1],"unassigned":0,"unhealthy":0}})"));
  EXPECT_EQ(filter["usage"]["g2"]["states"],
            json::parse(R"({"GpuShare":{"used":[8],"pods":[2],"unassigned":0,"unhealthy":2}})"));
  EXPECT_EQ(filter["usage"]["g4"]["states"], json::object());  // nothing counted
  EXPECT_EQ(filter["policyState"], json::object());            // GpuShare keeps none per request
  // Full-node mode: the usage per request node, states included.
  EXPECT_EQ(json::parse(lines[2])["usage"]["g2"]["states"]["GpuShare"]["used"], json::array({8}));

  auto record = DecodeRecord(lines[0]);
  ASSERT_TRUE(record.ok()) << record.status().ToString();
  EXPECT_TRUE((*record)->has_state);
  ASSERT_EQ((*record)->node_states.size(), 2U);
  EXPECT_EQ((*record)->node_states[1].node, "g2");
  EXPECT_EQ((*record)->node_states[1].name, "GpuShare");
  cli::LoadedConfig fresh = Load(dir_, kGpuConfig);
  ASSERT_EQ(fresh.host->accountings().size(), 1U);
  const policy::NodeStateCodec* codec = policy::AsNodeStateCodec(*fresh.host->accountings()[0]);
  ASSERT_NE(codec, nullptr);
  EXPECT_EQ(codec->StateName(), "GpuShare");
  auto state = codec->DecodeState((*record)->node_states[1].json);
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  const auto& gpu = static_cast<const policy::gpushare::GpuNodeState&>(**state).gpu;
  EXPECT_EQ(gpu.used, (std::vector<int64_t>{8}));
  EXPECT_EQ(gpu.pods, (std::vector<int32_t>{2}));
  EXPECT_EQ(gpu.unhealthy, 2U);
  EXPECT_EQ(codec->EncodeState(**state), (*record)->node_states[1].json);
  EXPECT_FALSE(codec->DecodeState(R"({"used":[1],"pods":[]})").ok());
  auto empty = codec->DecodeState(R"({"used":[],"pods":[],"unassigned":0,"unhealthy":0})");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, nullptr);

  // preempt: the candidates' nodes and the victim the cache resolved, with
  // what GpuShare reads of it.
  auto preempt = DecodeRecord(lines[3]);
  ASSERT_TRUE(preempt.ok()) << preempt.status().ToString();
  ASSERT_EQ((*preempt)->nodes.size(), 2U);
  ASSERT_EQ((*preempt)->victims.size(), 2U);
  const model::PodInfo* c = (*preempt)->FindVictim("uid-c");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->name, "c");
  EXPECT_EQ(c->node_name, "g2");
  EXPECT_EQ(c->annotations.Find("ALIYUN_COM_GPU_MEM_IDX").value_or(""), "0");
  EXPECT_EQ(c->requests.milli_cpu, 100);
  EXPECT_NE((*preempt)->FindUsage("g2"), nullptr);
}

TEST_F(ReplayGpuShareTest, TheSameConfigurationReplaysEveryDecisionExactly) {
  cli::LoadedConfig config = Load(dir_, kGpuConfig);
  const ReplayReport r = Replay(record_dir_, config);
  EXPECT_EQ(r.records, 4U);
  EXPECT_EQ(r.replayed, 4U);
  EXPECT_EQ(r.by_verb,
            (std::map<std::string, size_t>{{"filter", 1}, {"preempt", 1}, {"prioritize", 2}}));
  EXPECT_EQ(r.changed, 0U) << FormatReplayText(r, true);
  EXPECT_EQ(r.without_state, 0U);
  EXPECT_EQ(r.scores, 7U);
  EXPECT_EQ(r.preempt, 1U);
  EXPECT_EQ(r.preempt_nodes, 2U);
  EXPECT_EQ(r.preempt_nodes_changed, 0U);
  EXPECT_TRUE(r.state_errors.empty());
}

// binpack → spread (gpushare.h): g1 100 × (23 - 5) / 32 = 56.25 → 6 (was
// 10), g4 100 × 11 / 16 = 68.75 → 7 (was 6). Filter and preempt do not
// depend on the scoring; the spread profile is unchanged.
TEST_F(ReplayGpuShareTest, AChangedGpuSharePolicyChangesExactlyItsScores) {
  cli::LoadedConfig config = Load(dir_, kGpuChanged);
  const ReplayReport r = Replay(record_dir_, config);
  EXPECT_EQ(r.replayed, 4U);
  EXPECT_EQ(r.changed, 1U) << FormatReplayText(r, true);
  EXPECT_EQ(r.changed_by_verb, (std::map<std::string, size_t>{{"prioritize", 1}}));
  EXPECT_EQ(r.top_changed, 1U);
  EXPECT_EQ(r.scores_changed, 2U);
  ASSERT_EQ(r.requests.size(), 4U);
  EXPECT_EQ(r.requests[1].diff, (std::vector<std::string>{"top node: g1 -> g4", "g1: score 4 -> 0",
                                                          "g4: score 0 -> 1"}));
}

// A record of an older recorder has no "states" and no "policyState": the
// same configuration then decides against empty device usage (every device
// free, g2's device 1 healthy), which the report says.
//   filter: g2 now has room.  binpack: g1 device 0 → 3 left, 62 → 6, a tie
//   with g4.  spread: g1 100 × 27 / 32 = 84 → 8, g2 100 × 11 / 16 = 68 → 7.
//   preempt: g2 holds 8 GiB on either device: kept, with its victim.
TEST_F(ReplayGpuShareTest, ARecordWithoutStateReplaysAgainstEmptyStateAndSaysSo) {
  const std::string old_dir = dir_ + "/old";
  ASSERT_EQ(::mkdir(old_dir.c_str(), 0700), 0);
  {
    std::ofstream out(old_dir + "/records-20261201T000000Z-000000.jsonl");
    for (const std::string& line : RecordLines(record_dir_)) {
      json doc = json::parse(line);
      doc.erase("policyState");
      if (doc["usage"].is_object()) {
        for (auto& [node, usage] : doc["usage"].items()) {
          usage.erase("states");
        }
      }
      out << doc.dump() << "\n";
    }
  }
  cli::LoadedConfig config = Load(dir_, kGpuConfig);
  const ReplayReport r = Replay(old_dir, config);
  EXPECT_EQ(r.replayed, 4U);
  EXPECT_EQ(r.without_state, 4U);
  ASSERT_EQ(r.requests.size(), 4U);
  EXPECT_FALSE(r.requests[0].state_recorded);
  EXPECT_EQ(r.requests[0].diff,
            (std::vector<std::string>{
                "g2: unschedulable \"Insufficient aliyun.com/gpu-mem on any one GPU\" -> pass"}));
  EXPECT_EQ(r.requests[1].diff,
            (std::vector<std::string>{"top node: g1 -> g1,g4", "g1: score 4 -> 0"}));
  EXPECT_EQ(r.requests[2].diff, (std::vector<std::string>{"top node: g4 -> g1", "g1: score 6 -> 8",
                                                          "g2: score 0 -> 7"}));
  EXPECT_EQ(r.requests[3].diff, (std::vector<std::string>{"g2: dropped -> victims uid-c"}));
  const std::string text = FormatReplayText(r, false);
  EXPECT_NE(text.find("state not recorded: 4 request(s)"), std::string::npos) << text;
}

// A recorded state the new configuration's codec cannot read skips the
// record, says why and where, and leaves the others replayed.
TEST_F(ReplayGpuShareTest, AStateThatDoesNotDecodeSkipsItsRecord) {
  const std::string bad_dir = dir_ + "/bad";
  ASSERT_EQ(::mkdir(bad_dir.c_str(), 0700), 0);
  {
    std::ofstream out(bad_dir + "/records-20261201T000000Z-000000.jsonl");
    const std::vector<std::string> lines = RecordLines(record_dir_);
    ASSERT_EQ(lines.size(), 4U);
    json first = json::parse(lines[0]);
    first["usage"]["g2"]["states"]["GpuShare"]["used"] = json::array({"eight"});
    out << first.dump() << "\n" << lines[1] << "\n";
  }
  cli::LoadedConfig config = Load(dir_, kGpuConfig);
  const ReplayReport r = Replay(bad_dir, config);
  EXPECT_EQ(r.records, 2U);
  EXPECT_EQ(r.replayed, 1U);
  EXPECT_EQ(r.changed, 0U);
  EXPECT_EQ(r.skipped, (std::map<std::string, size_t>{{"the recorded state does not decode", 1}}));
  EXPECT_EQ(r.state_errors,
            (std::vector<std::string>{"records-20261201T000000Z-000000.jsonl:1: node g2: "
                                      "GpuShare state: used and pods: expected integers"}));
}

// ---------------------------------------------------------------- NodeLoad

using policy::nodeload::BindLedger;
using policy::nodeload::Clock;
using policy::nodeload::LoadSnapshot;
using policy::nodeload::LoadSources;
using policy::nodeload::NodeLoadSample;

constexpr std::string_view kLoadRecorded = R"(
profiles:
  - name: tlp
    policies:
      - name: NodeLoad
        args:
          prometheus: {url: "http://127.0.0.1:1"}
          hotCpuPercent: 80
)";

constexpr std::string_view kLoadTarget60 = R"(
profiles:
  - name: tlp
    policies:
      - name: NodeLoad
        args:
          prometheus: {url: "http://127.0.0.1:1"}
          hotCpuPercent: 80
          targetUtilization: 60
)";

// A sample of 30 s is stale under a maxAge of 20 s.
constexpr std::string_view kLoadMaxAge20 = R"(
profiles:
  - name: tlp
    policies:
      - name: NodeLoad
        args:
          prometheus: {url: "http://127.0.0.1:1"}
          hotCpuPercent: 80
          maxAgeSeconds: 20
)";

NodeLoadSample CpuSample(double cpu) {
  NodeLoadSample s;
  s.cpu = cpu;
  s.memory = 30;
  return s;
}

class ReplayNodeLoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    record_dir_ = dir_ + "/record";
    // Live: the built-in NodeLoad over a fixed snapshot taken 30 s before
    // the requests, and a ledger with a pod of 1500m bound on n2 5 s after
    // the sample (so the sample cannot show it).
    const Clock::time_point taken = Clock::time_point() + std::chrono::hours(2);
    const Clock::time_point now = taken + std::chrono::seconds(30);
    auto snapshot = std::make_shared<const LoadSnapshot>(
        std::vector<std::pair<std::string, NodeLoadSample>>{
            {"n1", CpuSample(10)}, {"n2", CpuSample(50)}, {"n3", CpuSample(85)}},
        taken);
    auto ledger = std::make_shared<BindLedger>(std::chrono::minutes(10), [now] { return now; });
    ledger->Add("n2", "uid-recent", 1500, 0, taken + std::chrono::seconds(5));
    ledger->Add("n9", "uid-elsewhere", 700, 0, taken + std::chrono::seconds(6));
    policy::Registry registry;
    ASSERT_TRUE(registry
                    .Register("NodeLoad",
                              [snapshot, now, ledger](const nlohmann::json& args,
                                                      const policy::PolicyContext& context)
                                  -> StatusOr<std::unique_ptr<policy::Policy>> {
                                SCHEDEXT_ASSIGN_OR_RETURN(
                                    policy::nodeload::NodeLoadSpec spec,
                                    policy::nodeload::ParseNodeLoadArgs(args, context));
                                LoadSources sources;
                                sources.snapshot = [snapshot] { return snapshot; };
                                sources.now = [now] { return now; };
                                return policy::nodeload::MakeNodeLoad(
                                    std::move(spec), std::move(sources), ledger, nullptr);
                              })
                    .ok());
    auto config = config::LoadConfigText(kLoadRecorded, "test");
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    auto profile = pipeline::Profile::Build(config->profiles[0], registry, "profiles[0]");
    ASSERT_TRUE(profile.ok()) << profile.status().ToString();
    auto cache = CacheWith(Nodes(), {});
    RecorderOptions options;
    options.config.dir = record_dir_;
    auto recorder = Recorder::Start(options);
    ASSERT_TRUE(recorder.ok()) << recorder.status().ToString();
    server::ExtenderService service({*profile}, 0, cache.get(), nullptr, nullptr);
    service.SetObserver(recorder->get());
    server::Scratch scratch;
    std::string out;
    server::RequestSummary summary;
    auto call = [&](Verb verb, const std::string& text) {
      wire::RequestBuffer body = wire::RequestBuffer::CopyOf(text);
      return service.Handle(verb, 0, body, scratch, out, summary);
    };
    // filter (hot above 80 %, measured plus recent binds): n2 50 % + 1500m
    // of 4000m = 87.5 %; n3 85 %; n4 has no data.
    ASSERT_EQ(call(Verb::kFilter, ExtenderArgsNamesJson(Pod().Build(), {"n1", "n2", "n3", "n4"})),
              200);
    ASSERT_EQ(out, R"({"Nodes":null,"NodeNames":["n1","n4"],"FailedNodes":{},)"
                   R"("FailedAndUnresolvableNodes":{"n2":"node(s) were too hot: CPU use above )"
                   R"(80%","n3":"node(s) were too hot: CPU use above 80%"},"Error":""})");
    // TargetLoadPacking, target 40, the pod predicted at 1500m:
    //   n1 (400 + 1500) / 4000 = 47.5 % → 40 × 52.5 / 60 = 35 → 4
    //   n2 (2000 + 1500 + 1500) / 4000 = 125 % → 0
    //   n4 neutral 50 → 5
    ASSERT_EQ(call(Verb::kPrioritize, ExtenderArgsNamesJson(Pod().Build(), {"n1", "n2", "n4"})),
              200);
    ASSERT_EQ(out, R"([{"Host":"n1","Score":4},{"Host":"n4","Score":5}])");
    (*recorder)->Flush();
    ASSERT_EQ((*recorder)->stats().recorded, 2U);
  }
  void TearDown() override { RemoveDir(dir_); }

  std::string dir_;
  std::string record_dir_;
};

// What the request saw, limited to its nodes, ages relative to the request.
TEST_F(ReplayNodeLoadTest, TheRecordCarriesTheSnapshotAndTheLedgerAsTheRequestSawThem) {
  const std::vector<std::string> lines = RecordLines(record_dir_);
  ASSERT_EQ(lines.size(), 2U);
  EXPECT_EQ(json::parse(lines[0])["policyState"], json::parse(R"({"NodeLoad":{
      "sampleAgeNanos": 30000000000,
      "nodes": {
        "n1": {"cpu": 10.0, "cpuStddev": null, "memory": 30.0, "memoryStddev": null},
        "n2": {"cpu": 50.0, "cpuStddev": null, "memory": 30.0, "memoryStddev": null},
        "n3": {"cpu": 85.0, "cpuStddev": null, "memory": 30.0, "memoryStddev": null}},
      "binds": [{"node": "n2", "cpuMillis": 1500, "memoryBytes": 0,
                 "boundNanosAgo": 25000000000}]}})"));
  EXPECT_EQ(json::parse(lines[1])["policyState"]["NodeLoad"]["nodes"].size(), 2U);  // n1 n2
}

TEST_F(ReplayNodeLoadTest, TheSameConfigurationReplaysEveryDecisionExactly) {
  // The built-in NodeLoad, whose poller never runs here: without the
  // recorded state it would see no sample at all.
  cli::LoadedConfig config = Load(dir_, kLoadRecorded);
  const ReplayReport r = Replay(record_dir_, config);
  EXPECT_EQ(r.replayed, 2U);
  EXPECT_EQ(r.changed, 0U) << FormatReplayText(r, true);
  EXPECT_EQ(r.scores, 3U);
  EXPECT_EQ(r.without_state, 0U);
}

// target 60: n1's 47.5 % is now below the target: 40 × 47.5 / 60 + 60 =
// 91.67 → 92 → 9 (was 4), and n1 outranks n4. n2 stays above 100 %: 0.
TEST_F(ReplayNodeLoadTest, AChangedTargetMovesExactlyTheNodeItShould) {
  cli::LoadedConfig config = Load(dir_, kLoadTarget60);
  const ReplayReport r = Replay(record_dir_, config);
  EXPECT_EQ(r.changed, 1U) << FormatReplayText(r, true);
  ASSERT_EQ(r.requests.size(), 2U);
  EXPECT_FALSE(r.requests[0].changed);
  EXPECT_EQ(r.requests[1].diff,
            (std::vector<std::string>{"top node: n4 -> n1", "n1: score 4 -> 9"}));
}

// maxAge 20 s: the recorded 30 s old sample is stale: no node is too hot and
// every node scores neutral 50 → 5.
TEST_F(ReplayNodeLoadTest, AShorterMaxAgeSeesTheRecordedSampleAsStale) {
  cli::LoadedConfig config = Load(dir_, kLoadMaxAge20);
  const ReplayReport r = Replay(record_dir_, config);
  EXPECT_EQ(r.changed, 2U) << FormatReplayText(r, true);
  EXPECT_EQ(r.newly_accepted, 2U);
  EXPECT_EQ(r.newly_accepted_from,
            (std::map<std::string, size_t>{{"node(s) were too hot: CPU use above 80%", 2}}));
  ASSERT_EQ(r.requests.size(), 2U);
  EXPECT_EQ(r.requests[1].diff, (std::vector<std::string>{"top node: n4 -> n1,n2,n4",
                                                          "n1: score 4 -> 0", "n4: score 5 -> 0"}));
}

}  // namespace
}  // namespace schedext::record
