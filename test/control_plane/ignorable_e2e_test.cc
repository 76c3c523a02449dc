// End to end, `ignorable: true`: the real kube-scheduler with the shipped
// node-cache configuration marked ignorable keeps placing pods while schedext
// is stopped. Filter and prioritize errors of an ignorable extender are
// skipped on every minor; a failed bind falls through to kube-scheduler's own
// binder only from 1.30 on (kubernetes#122503): before that the pod waits
// until the extender answers again.
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "control_plane/e2e_suite.h"
#include "control_plane/scheduler_e2e.h"

namespace schedext::testing::e2e {
namespace {

constexpr std::string_view kNodeCacheConfig =
    "deploy/scheduler/kube-scheduler-config-nodecache.yaml";
constexpr std::string_view kSchedulerUser = "system:kube-scheduler";

// One test: it stops the suite's schedext.
class IgnorableE2eTest : public E2eSuite {
 protected:
  static void SetUpTestSuite() {
    StartE2e({}, [] { return ReadSourceFile("deploy/base/schedext.yaml"); });
  }

  static SchedulerEdits Ignorable(bool bind) {
    SchedulerEdits edits;
    edits.ignorable = true;
    edits.bind = bind;
    return edits;
  }
};

TEST_F(IgnorableE2eTest, PodsStillScheduleWithSchedextStopped) {
  ASSERT_NO_FATAL_FAILURE(StartScheduler(kNodeCacheConfig, Ignorable(/*bind=*/true)));
  ASSERT_NO_FATAL_FAILURE(AddNode("a", {{"cpu", "2"}, {"memory", "4Gi"}}));

  // While schedext runs, it filters and binds.
  ASSERT_NO_FATAL_FAILURE(Create(Pod("p0", {{"cpu", "100m"}})));
  ASSERT_EQ(WaitForNodeNames(cp(), ns_, {"p0"}, kScheduleTimeout).count("p0"), 1u);
  EXPECT_EQ(Binders({"p0"})["p0"], cp().schedext_user());
  EXPECT_GE(RequestCount(schedext().port(), "default", "filter"), 1);

  schedext().Stop();
  EXPECT_EQ(schedext().exit_code(), 0) << FileTail(schedext().log_path());

  // Its filter fails (connection refused) and is skipped; its bind fails too.
  ASSERT_NO_FATAL_FAILURE(Create(Pod("p1", {{"cpu", "100m"}})));
  const int minor = KubernetesMinor(cp().scheduler_version());
  if (minor >= 30) {
    ASSERT_EQ(WaitForNodeNames(cp(), ns_, {"p1"}, kScheduleTimeout).count("p1"), 1u)
        << GetPod(cp(), ns_, "p1").dump();
    EXPECT_EQ(Binders({"p1"})["p1"], kSchedulerUser) << "the default binder did not take over";
  } else {
    EXPECT_TRUE(WaitForNodeNames(cp(), ns_, {"p1"}, std::chrono::seconds(5)).empty())
        << "kube-scheduler 1." << minor << " bound past a failed ignorable binder";
  }

  // Without bindVerb the scheduler binds itself: every minor places pods
  // with schedext gone.
  ASSERT_NO_FATAL_FAILURE(StartScheduler(kNodeCacheConfig, Ignorable(/*bind=*/false)));
  ASSERT_NO_FATAL_FAILURE(Create(Pod("p2", {{"cpu", "100m"}})));
  const std::map<std::string, std::string> bound =
      WaitForNodeNames(cp(), ns_, {"p1", "p2"}, kScheduleTimeout);
  ASSERT_EQ(bound.size(), 2u) << ::testing::PrintToString(bound);
  EXPECT_EQ(bound.at("p2"), Node("a"));
  const std::map<std::string, std::string> binders = Binders({"p1", "p2"});
  EXPECT_EQ(binders.at("p1"), kSchedulerUser);
  EXPECT_EQ(binders.at("p2"), kSchedulerUser);
}

}  // namespace
}  // namespace schedext::testing::e2e
