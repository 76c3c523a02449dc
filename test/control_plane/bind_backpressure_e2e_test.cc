// End to end, binds under back-pressure: the real kube-scheduler v1.26 sends a
// burst of binds to the real schedext faster than schedext's API client may
// send them (cluster.qps 4, burst 1), with a short extender httpTimeout (2 s)
// and server.bindDeadlineMillis 500. Binds that cannot go out within their
// deadline are refused unsent, kube-scheduler retries those pods, and in the
// end every pod is bound — once, by schedext, to the node the scheduler asked
// schedext for in the one bind schedext answered with success.
//
// The evidence comes from outside schedext: kube-apiserver's audit log (every
// pods/binding create, whatever its answer) and the pods' spec.nodeName; and
// from schedext's recording of every bind request with its reply
// (server.record, verbs [bind]).
#include <chrono>
#include <cstdint>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "control_plane/e2e_suite.h"
#include "control_plane/scheduler_e2e.h"
#include "schedext/cluster/kube_client.h"
#include "schedext/pipeline/bind_cycle.h"
#include "schedext/record/record_file.h"

namespace schedext::testing::e2e {
namespace {

using nlohmann::json;

constexpr std::string_view kNodeCacheConfig =
    "deploy/scheduler/kube-scheduler-config-nodecache.yaml";
constexpr int kNodes = 4;
constexpr int kPods = 40;

// Every pods/binding create in `ns` that completed: pod -> its answers'
// codes, in order.
std::map<std::string, std::vector<int>> BindingAttempts(const std::string& audit_log,
                                                         std::string_view ns) {
  std::map<std::string, std::vector<int>> attempts;
  std::istringstream lines(ReadWholeFile(audit_log));
  for (std::string line; std::getline(lines, line);) {
    const json e = json::parse(line, nullptr, false);
    if (!e.is_object() || e.value("stage", "") != "ResponseComplete") continue;
    const json ref = e.value("objectRef", json::object());
    if (ref.value("subresource", "") != "binding" || ref.value("namespace", "") != ns) continue;
    attempts[ref.value("name", "")].push_back(
        e.value("responseStatus", json::object()).value("code", 0));
  }
  return attempts;
}

class BindBackpressureE2eTest : public E2eSuite {
 protected:
  static std::string record_dir() { return shared().dir + "/record"; }

  static void SetUpTestSuite() {
    StartE2e({}, []() -> StatusOr<std::string> {
      SCHEDEXT_ASSIGN_OR_RETURN(std::string base, ReadSourceFile("deploy/base/schedext.yaml"));
      return MergeYaml(base, "server:\n"
                             "  bindDeadlineMillis: 500\n"
                             "  record:\n"
                             "    dir: \"" + record_dir() + "\"\n"
                             "    sampleRate: 1\n"
                             "    verbs: [bind]\n"
                             "cluster:\n"
                             "  qps: 4\n"
                             "  burst: 1\n");
    });
  }
};

TEST_F(BindBackpressureE2eTest, ABurstFasterThanTheClientLimitIsBoundOnceEach) {
  SchedulerEdits edits;
  edits.node_cache_capable = true;
  edits.http_timeout = "2s";
  edits.bind = true;
  ASSERT_NO_FATAL_FAILURE(StartScheduler(kNodeCacheConfig, edits));
  for (int i = 0; i < kNodes; ++i) {
    ASSERT_NO_FATAL_FAILURE(AddNode("n" + std::to_string(i), {{"cpu", "32"}, {"memory", "64Gi"}}));
  }
  std::vector<std::string> names;
  for (int i = 0; i < kPods; ++i) {
    names.push_back("p" + std::to_string(i));
    ASSERT_NO_FATAL_FAILURE(Create(Pod(names.back(), {{"cpu", "100m"}, {"memory", "64Mi"}})));
  }

  // No pod left behind: the refused ones come back through the scheduler's
  // backoff (1 s doubling to 10 s) until each is bound.
  const std::map<std::string, std::string> bound =
      WaitForNodeNames(cp(), ns_, names, std::chrono::seconds(180));
  ASSERT_EQ(bound.size(), names.size()) << ::testing::PrintToString(bound);
  ExpectNothingOverAllocated();

  // Bound once: one Binding request per pod ever reached the API server, it
  // succeeded, and it was schedext's. A bind made behind the scheduler's back
  // would show as a second request (409) when the scheduler binds the pod
  // again, or as a Binding whose node the scheduler's own cache disagrees
  // with.
  const std::map<std::string, std::string> users = Binders(names);
  std::map<std::string, std::vector<int>> attempts;
  ASSERT_TRUE(WaitFor([&] {
    attempts = BindingAttempts(shared().audit_log, ns_);
    return attempts.size() >= names.size();
  }));
  for (const std::string& pod : names) {
    EXPECT_EQ(attempts[pod], std::vector<int>{201}) << pod;
    EXPECT_EQ(users.count(pod) ? users.at(pod) : "", cp().schedext_user()) << pod;
  }

  // What the scheduler asked and what schedext answered. A clean stop writes
  // what the recorder still has queued.
  cp().StopScheduler();
  schedext().Stop();
  ASSERT_EQ(schedext().exit_code(), 0) << FileTail(schedext().log_path());
  auto files = record::ListRecordFiles(record_dir());
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  std::map<std::string, std::vector<std::string>> successes;  // pod -> nodes
  int too_late = 0;
  int other_errors = 0;
  for (const std::string& file : *files) {
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
      auto r = record::DecodeRecord(line);
      ASSERT_TRUE(r.ok()) << r.status().ToString() << "\n" << line;
      if ((*r)->verb != "bind") continue;
      const json request = json::parse((*r)->request, nullptr, false);
      const json reply = json::parse((*r)->reply, nullptr, false);
      ASSERT_TRUE(request.is_object() && reply.is_object()) << line;
      if (request.value("PodNamespace", "") != ns_) continue;
      const std::string error = reply.value("Error", "");
      if (error.empty()) {
        successes[request.value("PodName", "")].push_back(request.value("Node", ""));
      } else if (error.find(pipeline::kTooLate) != std::string::npos ||
                 error.find(cluster::kNotSentByDeadline) != std::string::npos) {
        // Refused unsent: in the bind queue, or waiting for the rate limit.
        ++too_late;
      } else {
        ++other_errors;
        ADD_FAILURE() << "unexpected bind error: " << error;
      }
    }
  }
  for (const std::string& pod : names) {
    // Exactly one bind answered success, and the pod is on its node.
    ASSERT_EQ(successes[pod].size(), 1u) << pod << ": " << ::testing::PrintToString(successes[pod]);
    EXPECT_EQ(successes[pod][0], bound.at(pod)) << pod;
  }
  // The burst did outrun the client limit: without refusals this test would
  // prove nothing about them.
  EXPECT_GT(too_late, 0);
  EXPECT_EQ(other_errors, 0);
  Note(std::to_string(kPods) + " pods bound once each; " + std::to_string(too_late) +
       " binds refused unsent past their deadline and retried by the scheduler");
}

}  // namespace
}  // namespace schedext::testing::e2e
