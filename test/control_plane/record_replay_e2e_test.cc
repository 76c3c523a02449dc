// Issue 14, part 4: the real kube-scheduler v1.26 schedules pods through the
// real schedext binary, which records the traffic (server.record, sample rate
// 1); `schedext replay` (the real binary) then runs the recording through a
// changed configuration and reports exactly the differences worked out below,
// and through the unchanged one, none.
//
// The cluster: three Ready nodes of 16 cpu / 32 Gi, labelled
//   a: tier=gold, example.com/perf=10
//   b:            example.com/perf=30
//   c:            example.com/perf=20, example.com/spot=true
// Three pods of 250m / 256 Mi are scheduled in node-cache mode (schedext
// binds, the shipped configuration), then three in full-node mode (the
// scheduler binds). Every pod fits every node, so each is scheduled at its
// first attempt: one filter (3 nodes, all pass) and one prioritize (3 nodes)
// per pod, 12 records.
//
// Recorded configuration (kRecorded): TaintToleration 1, LeastAllocated 1,
// NodeNumeric(perf, higher) 2, NodeLabel(preferred tier=gold) 1; W = 5.
// Normalised scores: TaintToleration 100 everywhere (no taints), NodeNumeric
// a 0, b 100, c 50, NodeLabel a 100, b 0, c 0. LeastAllocated depends on the
// pods the cache counted, but with at most 6 pods of 250m / 256 Mi on a node
// of 16 cpu / 32 Gi it stays within [89, 99], and every result below holds
// for any LeastAllocated in [80, 100] (final = round half up(10 × Σ w·s /
// (100 × W))):
//   a: (100 + LA + 0 + 100) / 50 in [5.6, 6.0] -> 6
//   b: (100 + LA + 200 + 0) / 50 in [7.6, 8.0] -> 8   (top node)
//   c: (100 + LA + 100 + 0) / 50 in [5.6, 6.0] -> 6
// Changed configuration (kChanged): NodeLabel also forbids example.com/spot
// and weighs 3, NodeNumeric weighs 1; W = 6:
//   filter: c -> unresolvable by NodeLabel "node(s) had forbidden labels"
//   a: (100 + LA + 0 + 300) / 60 in [8.0, 8.33] -> 8   (top node)
//   b: (100 + LA + 100 + 0) / 60 in [4.67, 5.0] -> 5
//   c: (100 + LA + 50 + 0) / 60 in [3.83, 4.17] -> 4
// So: 12 requests replayed, all 12 changed; 6 node decisions changed, all c
// newly rejected by NodeLabel; the top node changes b -> a in all 6
// prioritize requests. Replay compares scores above each request's lowest, as
// kube-scheduler weighs them: recorded a 0, b 2, c 0; changed a 4, b 1, c 0.
// So 12 of 18 scores change (shifts 4 and 1: max 4, total 30, mean 2.50).
#include <gtest/gtest.h>
#include <httplib.h>
#include <stdio.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "control_plane/e2e_suite.h"
#include "control_plane/scheduler_e2e.h"
#include "schedext/record/record_file.h"

namespace schedext::testing::e2e {
namespace {

using nlohmann::json;

constexpr std::string_view kNodeCacheConfig =
    "deploy/scheduler/kube-scheduler-config-nodecache.yaml";
constexpr std::string_view kFullNodesConfig =
    "deploy/scheduler/kube-scheduler-config-fullnodes.yaml";

constexpr std::string_view kRecorded = R"(
profiles:
  - name: default
    policies:
      - name: NodeHealth
      - name: TaintToleration
        weight: 1
      - name: NodeResourcesFit
      - name: LeastAllocated
        weight: 1
      - name: NodeNumeric
        weight: 2
        args:
          key: example.com/perf
          prefer: higher
      - name: NodeLabel
        weight: 1
        args:
          preferred:
            - weight: 1
              matchLabels:
                tier: gold
)";

constexpr std::string_view kChanged = R"(
profiles:
  - name: default
    policies:
      - name: NodeHealth
      - name: TaintToleration
        weight: 1
      - name: NodeResourcesFit
      - name: LeastAllocated
        weight: 1
      - name: NodeNumeric
        weight: 1
        args:
          key: example.com/perf
          prefer: higher
      - name: NodeLabel
        weight: 3
        args:
          forbidden:
            - matchExpressions:
                - {key: example.com/spot, operator: Exists}
          preferred:
            - weight: 1
              matchLabels:
                tier: gold
)";

// deploy/base/schedext.yaml (cluster required, leader election) with
// `profiles` replaced and, when `record_dir` is set, server.record on.
StatusOr<std::string> SchedextConfig(std::string_view profiles, const std::string& record_dir) {
  SCHEDEXT_ASSIGN_OR_RETURN(std::string base, ReadSourceFile("deploy/base/schedext.yaml"));
  SCHEDEXT_ASSIGN_OR_RETURN(std::string config, MergeYaml(base, profiles));
  if (record_dir.empty()) return config;
  return MergeYaml(config,
                   "server:\n  record:\n    dir: \"" + record_dir + "\"\n    sampleRate: 1\n");
}

// Runs the real binary with `args`: its exit status (-1 when it did not
// exit), stdout in `out`, stderr in `err`.
int RunSchedext(const std::string& args, const std::string& err_path, std::string& out,
                std::string& err) {
  const std::string command = std::string(SCHEDEXT_BINARY) + " " + args + " 2>" + err_path;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return -1;
  out.clear();
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe)) out.append(buffer, n);
  const int status = pclose(pipe);
  err = ReadWholeFile(err_path);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class RecordReplayE2eTest : public E2eSuite {
 protected:
  static std::string record_dir() { return shared().dir + "/record"; }

  static void SetUpTestSuite() {
    StartE2e({}, [] { return SchedextConfig(kRecorded, record_dir()); });
  }

  // Until schedext's cache knows every node of `names` (POST /default/explain
  // is not a verb, so it is not recorded).
  bool SchedextKnows(const std::vector<std::string>& names) {
    json body = {{"Pod",
                  {{"metadata", {{"name", "probe"}, {"namespace", ns_}, {"uid", "probe"}}},
                   {"spec", {{"containers", json::array()}}}}},
                 {"Nodes", nullptr},
                 {"NodeNames", names}};
    httplib::Client client("127.0.0.1", schedext().port());
    return WaitFor([&] {
      auto res = client.Post("/default/explain", body.dump(), "application/json");
      if (!res || res->status != 200) return false;
      const json doc = json::parse(res->body, nullptr, false);
      if (!doc.is_object() || !doc.contains("nodes")) return false;
      for (const json& n : doc["nodes"]) {
        if (n.value("verdict", "") != "pass") return false;
      }
      return doc["nodes"].size() == names.size();
    });
  }

  // Creates `names` and waits until every one is bound.
  void Schedule(const std::vector<std::string>& names) {
    for (const std::string& name : names) {
      ASSERT_NO_FATAL_FAILURE(Create(Pod(name, {{"cpu", "250m"}, {"memory", "256Mi"}})));
    }
    const auto bound = WaitForNodeNames(cp(), ns_, names, kScheduleTimeout);
    ASSERT_EQ(bound.size(), names.size()) << ::testing::PrintToString(bound);
    Note("bound: " + ::testing::PrintToString(bound));
  }

  std::string WriteConfig(const std::string& name, std::string_view profiles) {
    StatusOr<std::string> config = SchedextConfig(profiles, "");
    EXPECT_TRUE(config.ok()) << config.status().ToString();
    const std::string path = shared().dir + "/" + name;
    std::ofstream(path, std::ios::binary) << (config.ok() ? *config : "");
    return path;
  }
};

TEST_F(RecordReplayE2eTest, ReplayShowsExactlyTheChangedConfigurationsDifferences) {
  const std::string a = Node("a");
  const std::string b = Node("b");
  const std::string c = Node("c");
  const std::map<std::string, std::string> big = {{"cpu", "16"}, {"memory", "32Gi"}};
  // Nodes before the scheduler starts: its first list has all three, so no
  // pod is ever filtered against fewer.
  ASSERT_NO_FATAL_FAILURE(AddNode("a", big, {{"tier", "gold"}, {"example.com/perf", "10"}}));
  ASSERT_NO_FATAL_FAILURE(AddNode("b", big, {{"example.com/perf", "30"}}));
  ASSERT_NO_FATAL_FAILURE(
      AddNode("c", big, {{"example.com/perf", "20"}, {"example.com/spot", "true"}}));
  ASSERT_TRUE(SchedextKnows({a, b, c})) << FileTail(schedext().log_path());

  ASSERT_NO_FATAL_FAILURE(StartScheduler(kNodeCacheConfig, {}));
  ASSERT_NO_FATAL_FAILURE(Schedule({"nc-0", "nc-1", "nc-2"}));
  ASSERT_NO_FATAL_FAILURE(StartScheduler(kFullNodesConfig, {}));
  ASSERT_NO_FATAL_FAILURE(Schedule({"fn-0", "fn-1", "fn-2"}));
  EXPECT_EQ(RequestCount(schedext().port(), "default", "filter"), 6);
  EXPECT_EQ(RequestCount(schedext().port(), "default", "prioritize"), 6);
  ExpectNothingOverAllocated();
  cp().StopScheduler();
  // A clean stop writes what the recorder still has queued.
  schedext().Stop();
  ASSERT_EQ(schedext().exit_code(), 0) << FileTail(schedext().log_path());

  // The recording itself: 12 records in order, node-cache ones with the three
  // node objects, every one with the usage the cache counted.
  auto files = record::ListRecordFiles(record_dir());
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  std::vector<std::unique_ptr<record::Record>> records;
  for (const std::string& file : *files) {
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
      auto r = record::DecodeRecord(line);
      ASSERT_TRUE(r.ok()) << r.status().ToString() << "\n" << line;
      records.push_back(std::move(r).value());
    }
  }
  ASSERT_EQ(records.size(), 12U);
  for (size_t i = 0; i < records.size(); ++i) {
    const record::Record& r = *records[i];
    SCOPED_TRACE("record " + std::to_string(i));
    EXPECT_EQ(r.verb, i % 2 == 0 ? "filter" : "prioritize");
    EXPECT_EQ(r.profile, "default");
    EXPECT_EQ(r.status, 200);
    const bool node_cache = i < 6;
    EXPECT_EQ(r.has_nodes, node_cache);
    EXPECT_EQ(json::parse(r.request)["NodeNames"].is_array(), node_cache);
    ASSERT_TRUE(r.has_usage);
    EXPECT_EQ(r.usage.size(), 3U);
    if (node_cache) {
      ASSERT_EQ(r.nodes.size(), 3U);
      const model::NodeInfo* gold = r.FindNode(a);
      ASSERT_NE(gold, nullptr);
      EXPECT_EQ(gold->labels.Find("tier").value_or(""), "gold");
    }
  }
  // The first record of each phase: no pod bound yet, then exactly the three
  // node-cache pods (schedext bound them and counted them at once).
  auto pods = [&](const record::Record& r) {
    int64_t n = 0;
    for (const auto& [node, usage] : r.usage) n += usage.pods;
    return n;
  };
  EXPECT_EQ(pods(*records[0]), 0);
  EXPECT_EQ(pods(*records[6]), 3);

  const std::string recorded = WriteConfig("recorded.yaml", kRecorded);
  const std::string changed = WriteConfig("changed.yaml", kChanged);
  const std::string err_path = shared().dir + "/replay.err";
  std::string out;
  std::string err;

  // Unchanged: nothing changes, and --fail-on-change passes.
  EXPECT_EQ(RunSchedext("replay --config " + recorded + " --fail-on-change " + record_dir(),
                        err_path, out, err),
            0)
      << out << err;
  Note("replay, recorded configuration:\n" + out);
  EXPECT_NE(out.find("replayed 12 of 12 recorded request(s)\n"), std::string::npos) << out;
  EXPECT_NE(out.find("changed requests: 0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("scores changed: 0 of 18\n"), std::string::npos) << out;

  // Changed: exactly the differences worked out at the top.
  EXPECT_EQ(RunSchedext("replay --config " + changed + " --fail-on-change --diff " + record_dir(),
                        err_path, out, err),
            3)
      << out << err;
  Note("replay --diff, changed configuration:\n" + out);
  for (const std::string_view line : {
           "replayed 12 of 12 recorded request(s)\n",
           "  filter: 6, 6 changed\n",
           "  prioritize: 6, 6 changed\n",
           "changed requests: 12\n",
           "node decisions changed: 6\n",
           "  newly rejected: 6 (by NodeLabel 6)\n",
           "  newly accepted: 0\n",
           "top node changed: 6 of 6 prioritize request(s)\n",
           "scores changed: 12 of 18 (max shift 4, mean 2.50)\n",
       }) {
    EXPECT_NE(out.find(line), std::string::npos) << line << "\n" << out;
  }

  EXPECT_EQ(RunSchedext("replay --config " + changed + " --output json " + record_dir(), err_path,
                        out, err),
            0)
      << out << err;
  const json doc = json::parse(out, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << out;
  EXPECT_EQ(doc["records"], 12);
  EXPECT_EQ(doc["replayed"], 12);
  EXPECT_EQ(doc["changed"], 12);
  EXPECT_EQ(doc["unreadable"], 0);
  EXPECT_EQ(doc["decisionsChanged"], 6);
  EXPECT_EQ(doc["newlyRejected"], 6);
  EXPECT_EQ(doc["newlyRejectedBy"], json({{"NodeLabel", 6}}));
  EXPECT_EQ(doc["newlyAccepted"], 0);
  EXPECT_EQ(doc["outcomeChanged"], 0);
  EXPECT_EQ(doc["prioritize"], 6);
  EXPECT_EQ(doc["topChanged"], 6);
  EXPECT_EQ(doc["scores"], 18);
  EXPECT_EQ(doc["scoresChanged"], 12);
  EXPECT_EQ(doc["maxShift"], 4);
  ASSERT_EQ(doc["requests"].size(), 12U);
  const std::vector<std::string> filter_diff = {
      c + ": pass -> unresolvable by NodeLabel \"node(s) had forbidden labels\""};
  std::vector<std::string> prioritize_diff = {"top node: " + b + " -> " + a, a + ": score 0 -> 4",
                                              b + ": score 2 -> 1"};
  std::sort(prioritize_diff.begin(), prioritize_diff.end());
  std::multiset<std::string> filtered;
  std::multiset<std::string> prioritized;
  for (const json& r : doc["requests"]) {
    SCOPED_TRACE(r.dump());
    EXPECT_TRUE(r["replayed"].get<bool>());
    EXPECT_TRUE(r["changed"].get<bool>());
    std::vector<std::string> diff = r["diff"].get<std::vector<std::string>>();
    if (r["verb"] == "filter") {
      filtered.insert(r["pod"].get<std::string>());
      EXPECT_EQ(diff, filter_diff);
    } else {
      prioritized.insert(r["pod"].get<std::string>());
      std::sort(diff.begin(), diff.end());
      EXPECT_EQ(diff, prioritize_diff);
    }
  }
  const std::multiset<std::string> all_pods = {ns_ + "/nc-0", ns_ + "/nc-1", ns_ + "/nc-2",
                                               ns_ + "/fn-0", ns_ + "/fn-1", ns_ + "/fn-2"};
  EXPECT_EQ(filtered, all_pods);
  EXPECT_EQ(prioritized, all_pods);
}

}  // namespace
}  // namespace schedext::testing::e2e
