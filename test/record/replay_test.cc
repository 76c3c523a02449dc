// schedext replay: traffic recorded by a real ExtenderService + Recorder under
// one configuration, replayed under a changed one, shows exactly the expected
// differences; under the same configuration, none. Also the `schedext
// explain` and `schedext replay` subcommands of the real binary.
#include "schedext/record/replay.h"

#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "explain/explain_fixture.h"
#include "schedext/record/record_file.h"
#include "schedext/record/recorder.h"
#include "schedext/server/service.h"

namespace schedext::record {
namespace {

using nlohmann::json;
using server::Verb;
using namespace explain_testing;  // NOLINT: test vocabulary
using schedext::testing::ArgsShape;
using schedext::testing::ExtenderArgsJson;
using schedext::testing::ExtenderArgsNamesJson;

// kConfig changed: "all" drops TaintToleration, requires zone a and allows a
// load up to 100; "packing" prefers emptier nodes in RequestedToCapacityRatio.
constexpr std::string_view kChanged = R"(
profiles:
  - name: all
    policies:
      - name: NodeHealth
      - name: NodeLabel
        weight: 2
        args:
          required:
            - matchLabels:
                zone: a
          forbidden:
            - matchLabels:
                example.com/spot: "true"
          preferred:
            - weight: 3
              matchLabels:
                zone: a
      - name: NodeNumeric
        args:
          key: example.com/load
          prefer: lower
          max: 100
      - name: NodeResourcesFit
      - name: LeastAllocated
        weight: 2
      - name: BalancedAllocation
  - name: packing
    policies:
      - name: MostAllocated
      - name: RequestedToCapacityRatio
        args:
          shape:
            - utilization: 0
              score: 10
            - utilization: 100
              score: 0
)";

class ReplayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/schedext-replay-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    // Record real exchanges under kConfig.
    auto cache = CacheWith(Nodes(), {BoundPod()});
    auto profiles = BuildProfiles(kConfig);
    RecorderOptions options;
    options.config.dir = dir_ + "/record";
    auto recorder = Recorder::Start(options);
    ASSERT_TRUE(recorder.ok()) << recorder.status().ToString();
    server::ExtenderService service(profiles, 0, cache.get(), nullptr, nullptr);
    service.SetObserver(recorder->get());
    server::Scratch scratch;
    std::string out;
    server::RequestSummary summary;
    auto call = [&](Verb verb, size_t profile, const std::string& text) {
      wire::RequestBuffer body = wire::RequestBuffer::CopyOf(text);
      return service.Handle(verb, profile, body, scratch, out, summary);
    };
    ASSERT_EQ(
        call(Verb::kFilter, 0, ExtenderArgsNamesJson(Pod().Build(), {"n1", "n2", "n3", "n4"})),
        200);
    ASSERT_EQ(out, R"({"Nodes":null,"NodeNames":["n1","n2"],"FailedNodes":{},)"
                   R"("FailedAndUnresolvableNodes":{"n3":"node(s) had untolerated taint",)"
                   R"("n4":"node(s) were not ready"},"Error":""})");
    ASSERT_EQ(call(Verb::kPrioritize, 0, ExtenderArgsNamesJson(Pod().Build(), {"n1", "n2"})), 200);
    // 9 and 3, less the lowest: kube-scheduler scores a host left out 0.
    ASSERT_EQ(out, R"([{"Host":"n1","Score":6}])");
    ASSERT_EQ(call(Verb::kPrioritize, 1, ExtenderArgsJson(Pod(), Nodes(), ArgsShape::kFullNodes)),
              200);
    // 3, 5, 5, 3 less 3.
    ASSERT_EQ(out, R"([{"Host":"n2","Score":2},{"Host":"n3","Score":2}])");
    ASSERT_EQ(call(Verb::kPreempt, 0,
                   schedext::testing::PreemptionArgsJson(Pod(), {{"n2", {BoundPod()}, 0}},
                                                         ArgsShape::kNodeNames)),
              200);
    (*recorder)->Flush();
    ASSERT_EQ((*recorder)->stats().recorded, 4U);
  }
  void TearDown() override {
    const std::string command = "rm -rf '" + dir_ + "'";
    EXPECT_EQ(std::system(command.c_str()), 0);
  }

  std::string dir_;
};

TEST_F(ReplayTest, TheSameConfigurationChangesNothing) {
  auto report = ReplayDirectory(dir_ + "/record", BuildProfiles(kConfig));
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->records, 4U);
  EXPECT_EQ(report->replayed, 4U);
  EXPECT_EQ(report->preempt_nodes, 1U);
  EXPECT_EQ(report->preempt_nodes_changed, 0U);
  EXPECT_EQ(report->changed, 0U) << FormatReplayText(*report, true);
  EXPECT_EQ(report->scores, 6U);
  EXPECT_EQ(report->scores_changed, 0U);
}

// Worked out from the policies' formulas (see explain_test.cc for kConfig):
//   filter (all, n1..n4): n2 (zone b) now fails NodeLabel's required zone a;
//     n3 had only TaintToleration against it (and a load of 90 < 100): passes.
//   prioritize (all, n1 n2): without TaintToleration the total weight is 6:
//     n1 200 + 100 + 150 + 100 = 550 → round(9.17) = 9, n2 0 + 0 + 100 + 100
//     → round(3.33) = 3: unchanged.
//   prioritize (packing, n1..n4): RequestedToCapacityRatio is now 100 - u:
//     n1 25 + 75, n2 50 + 50, n3 50 + 50, n4 25 + 75 → all 100 / 20 = 5, so
//     n1 and n4 go 3 → 5 and every node is now a top node.
//   preempt (all, n2 with victim db-1): n2 is in zone b, which NodeLabel now
//     rejects, and eviction cannot help a label: the node is dropped.
TEST_F(ReplayTest, AChangedConfigurationShowsExactlyItsDifferences) {
  auto report = ReplayDirectory(dir_ + "/record", BuildProfiles(kChanged));
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const ReplayReport& r = *report;
  EXPECT_EQ(r.records, 4U);
  EXPECT_EQ(r.replayed, 4U);
  EXPECT_TRUE(r.skipped.empty());
  EXPECT_EQ(r.by_verb,
            (std::map<std::string, size_t>{{"filter", 1}, {"preempt", 1}, {"prioritize", 2}}));
  EXPECT_EQ(r.changed, 3U);
  EXPECT_EQ(r.preempt, 1U);
  EXPECT_EQ(r.preempt_nodes_changed, 1U);
  EXPECT_EQ(r.decisions_changed, 2U);
  EXPECT_EQ(r.newly_rejected, 1U);
  EXPECT_EQ(r.newly_rejected_by, (std::map<std::string, size_t>{{"NodeLabel", 1}}));
  EXPECT_EQ(r.newly_accepted, 1U);
  EXPECT_EQ(r.newly_accepted_from,
            (std::map<std::string, size_t>{{"node(s) had untolerated taint", 1}}));
  EXPECT_EQ(r.prioritize, 2U);
  EXPECT_EQ(r.top_changed, 1U);
  EXPECT_EQ(r.scores, 6U);
  EXPECT_EQ(r.scores_changed, 2U);
  EXPECT_EQ(r.max_shift, 2);
  EXPECT_EQ(r.total_shift, 4);
  ASSERT_EQ(r.requests.size(), 4U);
  EXPECT_EQ(r.requests[0].diff,
            (std::vector<std::string>{
                "n2: pass -> unresolvable by NodeLabel \"node(s) didn't match required labels\"",
                "n3: unresolvable \"node(s) had untolerated taint\" -> pass"}));
  EXPECT_EQ(r.requests[0].pod, "shop/web-1");
  EXPECT_FALSE(r.requests[1].changed);
  EXPECT_EQ(r.requests[2].diff, (std::vector<std::string>{"top node: n2,n3 -> n1,n2,n3,n4",
                                                          "n2: score 2 -> 0", "n3: score 2 -> 0"}));
  EXPECT_EQ(r.requests[3].diff, (std::vector<std::string>{"n2: victims uid-db-1 -> dropped"}));

  const std::string text = FormatReplayText(r, /*diff=*/true);
  EXPECT_NE(text.find("changed requests: 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("preempt: victims changed on 1 of 1 candidate node(s) in 1 request(s)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  newly rejected: 1 (by NodeLabel 1)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  newly accepted: 1 (were \"node(s) had untolerated taint\" 1)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("top node changed: 1 of 2 prioritize request(s)\n"), std::string::npos);
  EXPECT_NE(text.find("scores changed: 2 of 6 (max shift 2, mean 2.00)\n"), std::string::npos);
  EXPECT_NE(text.find(" filter shop/web-1 (profile all)\n  n2: pass -> unresolvable by NodeLabel"),
            std::string::npos)
      << text;
}

TEST_F(ReplayTest, AMissingProfileAndUnreadableLinesAreReported) {
  {
    auto files = ListRecordFiles(dir_ + "/record");
    ASSERT_TRUE(files.ok());
    std::ofstream(files->back(), std::ios::app) << "not a record\n";
  }
  auto report = ReplayDirectory(dir_ + "/record", BuildProfiles(R"(
profiles:
  - name: all
    policies:
      - name: NodeHealth
)"));
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->unreadable, 1U);
  EXPECT_EQ(report->requests[2].diff,
            (std::vector<std::string>{"profile \"packing\" is not in the new configuration"}));
  EXPECT_FALSE(ReplayDirectory(dir_ + "/nowhere", BuildProfiles(kConfig)).ok());
}

// Runs the real binary: exit status and stdout.
int RunSchedext(const std::string& args, std::string& out) {
  const std::string command = std::string(SCHEDEXT_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    return -1;
  }
  out.clear();
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe)) {
    out.append(buffer, n);
  }
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void WriteFile(const std::string& path, std::string_view text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST_F(ReplayTest, TheSubcommands) {
  WriteFile(dir_ + "/old.yaml", kConfig);
  WriteFile(dir_ + "/new.yaml", kChanged);
  std::string out;
  EXPECT_EQ(RunSchedext("replay --config " + dir_ + "/old.yaml --fail-on-change " + dir_ + "/record", out),
            0)
      << out;
  EXPECT_NE(out.find("changed requests: 0\n"), std::string::npos) << out;
  EXPECT_EQ(
      RunSchedext("replay --config " + dir_ + "/new.yaml --fail-on-change --diff " + dir_ + "/record", out),
      3)
      << out;
  EXPECT_NE(out.find("  n3: unresolvable \"node(s) had untolerated taint\" -> pass\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(RunSchedext("replay --config " + dir_ + "/new.yaml --output json " + dir_ + "/record", out), 0);
  EXPECT_EQ(json::parse(out)["changed"], 3) << out;
  EXPECT_EQ(RunSchedext("replay " + dir_ + "/record", out), 2);

  // explain offline: the nodes and pods as kubectl prints them.
  std::vector<std::string> items;
  for (const NodeJson& n : Nodes()) {
    items.push_back(n.Build());
  }
  WriteFile(dir_ + "/nodes.json", R"({"kind":"List","items":)" + testing::JsonArray(items) + "}");
  WriteFile(dir_ + "/pods.json", "[" + BoundPod().Build() + "]");
  WriteFile(dir_ + "/request.json",
            ExtenderArgsNamesJson(Pod().Build(), {"n1", "n2", "ghost", "n3", "n4"}));
  EXPECT_EQ(
      RunSchedext("explain --config " + dir_ + "/old.yaml --profile all --nodes " + dir_ +
              "/nodes.json --pods " + dir_ + "/pods.json --output json " + dir_ + "/request.json",
          out),
      0)
      << out;
  const json doc = json::parse(out);
  EXPECT_EQ(doc["ranking"], json::array({"n1", "n2"}));
  EXPECT_EQ(doc["nodes"][1]["score"], 3);  // db-1's usage from --pods
  EXPECT_EQ(doc["nodes"][2]["reason"], "node(s) unknown to schedext");
  EXPECT_EQ(RunSchedext("explain --config " + dir_ + "/old.yaml --profile all --nodes " + dir_ +
                    "/nodes.json " + dir_ + "/request.json",
                out),
            0)
      << out;
  EXPECT_NE(out.find("ranking: n1 > n2\n"), std::string::npos) << out;
  // Node-cache mode without --nodes cannot be explained.
  EXPECT_EQ(RunSchedext("explain --config " + dir_ + "/old.yaml " + dir_ + "/request.json", out), 2);
  EXPECT_NE(out.find("--nodes"), std::string::npos) << out;
}

}  // namespace
}  // namespace schedext::record
