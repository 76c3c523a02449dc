#include "schedext/cluster/leader_election.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "testing/fake_lease_api.h"

namespace schedext::cluster {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::FakeLeaseClient;
using testing::FakeLeaseStore;

// Drives both clocks of the elector: monotonic for expiry and deadlines, and
// a wall clock that moves with it for renewTime.
class FakeClock {
 public:
  std::chrono::steady_clock::time_point Now() const {
    return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(ns_.load()));
  }
  std::chrono::system_clock::time_point Wall() const {
    // 2026-01-01T00:00:00Z plus the elapsed fake time.
    return std::chrono::system_clock::time_point(seconds(1767225600)) +
           std::chrono::duration_cast<std::chrono::system_clock::duration>(
               std::chrono::nanoseconds(ns_.load() - kStart));
  }
  void Advance(milliseconds d) { ns_ += std::chrono::nanoseconds(d).count(); }

 private:
  static constexpr int64_t kStart = 1'000'000'000'000;
  std::atomic<int64_t> ns_{kStart};
};

LeaderElectionOptions Options(std::string identity, FakeClock* clock) {
  LeaderElectionOptions o;
  o.lease_namespace = "schedext-system";
  o.lease_name = "schedext";
  o.identity = std::move(identity);
  if (clock != nullptr) {
    o.now = [clock] { return clock->Now(); };
    o.wall_now = [clock] { return clock->Wall(); };
  }
  return o;
}

class LeaderElectionTest : public ::testing::Test {
 protected:
  FakeClock clock_;
  FakeLeaseStore store_{"schedext-system", "schedext"};
  FakeLeaseClient client_a_{store_};
  FakeLeaseClient client_b_{store_};
};

TEST_F(LeaderElectionTest, AcquiresAnAbsentLeaseByCreatingIt) {
  LeaderElector a(client_a_, Options("a", &clock_));
  EXPECT_FALSE(a.IsLeader());
  ASSERT_TRUE(a.TryAcquireOrRenew().ok());
  EXPECT_TRUE(a.IsLeader());
  EXPECT_EQ(*a.holder(), "a");
  EXPECT_EQ(a.transitions(), 1u);

  const std::vector<FakeLeaseStore::Request> requests = store_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].method, "GET");
  EXPECT_EQ(requests[0].path,
            "/apis/coordination.k8s.io/v1/namespaces/schedext-system/leases/"
            "schedext");
  EXPECT_EQ(requests[1].method, "POST");
  EXPECT_EQ(requests[1].path, "/apis/coordination.k8s.io/v1/namespaces/schedext-system/leases");
  EXPECT_EQ(requests[1].body,
            R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":)"
            R"("schedext","namespace":"schedext-system"},"spec":{"holderIdentity":"a",)"
            R"("leaseDurationSeconds":15,"acquireTime":"2026-01-01T00:00:00.000000Z",)"
            R"("renewTime":"2026-01-01T00:00:00.000000Z","leaseTransitions":0}})");
  EXPECT_EQ(store_.holder(), "a");
}

TEST_F(LeaderElectionTest, RenewsWithAResourceVersionPreconditionAndKeepsAcquireTime) {
  LeaderElector a(client_a_, Options("a", &clock_));
  ASSERT_TRUE(a.TryAcquireOrRenew().ok());
  const std::string rv = store_.lease()->at("metadata").at("resourceVersion");
  clock_.Advance(milliseconds(2500));
  ASSERT_TRUE(a.TryAcquireOrRenew().ok());

  const std::vector<FakeLeaseStore::Request> requests = store_.requests();
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[3].method, "PATCH");
  EXPECT_EQ(requests[3].content_type, "application/merge-patch+json");
  const json patch = json::parse(requests[3].body);
  EXPECT_EQ(patch["metadata"]["resourceVersion"], rv);
  const json spec = store_.spec();
  EXPECT_EQ(spec["holderIdentity"], "a");
  EXPECT_EQ(spec["acquireTime"], "2026-01-01T00:00:00.000000Z");
  EXPECT_EQ(spec["renewTime"], "2026-01-01T00:00:02.500000Z");
  EXPECT_EQ(spec["leaseTransitions"], 0);
  EXPECT_EQ(a.transitions(), 1u);  // renewals are no transitions

  // Serving lasts renewDeadline (10 s) from the start of the last renewal.
  clock_.Advance(milliseconds(9999));
  EXPECT_TRUE(a.IsLeader());
  clock_.Advance(milliseconds(1));
  EXPECT_FALSE(a.IsLeader());
}

TEST_F(LeaderElectionTest, FollowerWaitsLeaseDurationFromItsOwnObservationNotRenewTime) {
  // A holder whose renewTime is years old: the follower cannot know whether
  // that clock is right, so it waits a whole lease duration from the moment
  // it first saw this record.
  store_.WriteSpec({{"holderIdentity", "elsewhere"},
                    {"leaseDurationSeconds", 15},
                    {"renewTime", "2001-01-01T00:00:00.000000Z"},
                    {"acquireTime", "2001-01-01T00:00:00.000000Z"},
                    {"leaseTransitions", 4}});
  LeaderElector b(client_b_, Options("b", &clock_));
  Status s = b.TryAcquireOrRenew();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "lease schedext-system/schedext is held by elsewhere");
  EXPECT_FALSE(b.IsLeader());
  EXPECT_EQ(b.FollowerReason(), "lease schedext-system/schedext is held by elsewhere");

  clock_.Advance(milliseconds(14999));
  EXPECT_EQ(b.TryAcquireOrRenew().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_.holder(), "elsewhere");
  clock_.Advance(milliseconds(1));
  ASSERT_TRUE(b.TryAcquireOrRenew().ok());
  EXPECT_TRUE(b.IsLeader());
  const json spec = store_.spec();
  EXPECT_EQ(spec["holderIdentity"], "b");
  EXPECT_EQ(spec["leaseTransitions"], 5);  // a change of holder
  EXPECT_EQ(spec["acquireTime"], "2026-01-01T00:00:15.000000Z");
}

TEST_F(LeaderElectionTest, AChangedRecordRestartsTheFollowersWait) {
  LeaderElector a(client_a_, Options("a", &clock_));
  LeaderElector b(client_b_, Options("b", &clock_));
  ASSERT_TRUE(a.TryAcquireOrRenew().ok());
  EXPECT_FALSE(b.TryAcquireOrRenew().ok());  // b sees a's record at t=0
  clock_.Advance(seconds(10));
  ASSERT_TRUE(a.TryAcquireOrRenew().ok());  // a renews at t=10, then goes silent
  clock_.Advance(seconds(2));
  EXPECT_FALSE(b.TryAcquireOrRenew().ok());  // b sees the change at t=12
  clock_.Advance(milliseconds(14999));       // t=26.999: 15 s since t=12 not yet over
  EXPECT_FALSE(b.TryAcquireOrRenew().ok());
  EXPECT_FALSE(b.IsLeader());
  clock_.Advance(milliseconds(1));
  ASSERT_TRUE(b.TryAcquireOrRenew().ok());
  EXPECT_TRUE(b.IsLeader());
  EXPECT_FALSE(a.IsLeader());  // its deadline (t=20) passed long ago
}

TEST_F(LeaderElectionTest, LosesAtOnceToAnotherHolder) {
  LeaderElector a(client_a_, Options("a", &clock_));
  ASSERT_TRUE(a.TryAcquireOrRenew().ok());
  EXPECT_TRUE(a.IsLeader());
  store_.WriteSpec({{"holderIdentity", "intruder"}});  // e.g. kubectl edit
  Status s = a.TryAcquireOrRenew();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_FALSE(a.IsLeader());  // well before its renew deadline
  EXPECT_EQ(a.transitions(), 2u);
  EXPECT_EQ(*a.holder(), "intruder");
  EXPECT_EQ(store_.holder(), "intruder");
}

TEST_F(LeaderElectionTest, OnlyOneOfTwoRacingCandidatesWinsAnExpiredLease) {
  store_.WriteSpec({{"holderIdentity", "gone"}, {"leaseTransitions", 0}});
  LeaderElector b(client_b_, Options("b", &clock_));
  LeaderElector c(client_a_, Options("c", &clock_));
  EXPECT_FALSE(b.TryAcquireOrRenew().ok());
  EXPECT_FALSE(c.TryAcquireOrRenew().ok());
  clock_.Advance(seconds(16));
  // Both read the expired record; c's write lands between b's read and b's
  // write, so b's resourceVersion is stale and the API server answers 409.
  bool c_wrote = false;
  client_b_.SetHook([&](std::string_view method) {
    if (method == "PATCH" && !c_wrote) {
      c_wrote = true;
      ASSERT_TRUE(c.TryAcquireOrRenew().ok());
    }
  });
  Status s = b.TryAcquireOrRenew();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("409 Conflict"), std::string::npos) << s.message();
  EXPECT_FALSE(b.IsLeader());
  EXPECT_TRUE(c.IsLeader());
  EXPECT_EQ(store_.holder(), "c");
  EXPECT_EQ(store_.spec()["leaseTransitions"], 1);
}

TEST_F(LeaderElectionTest, LosingTheCreateRaceIsAConflict) {
  LeaderElector b(client_b_, Options("b", &clock_));
  client_b_.SetHook([&](std::string_view method) {
    if (method == "POST") {
      store_.WriteSpec({{"holderIdentity", "first"}});
    }
  });
  Status s = b.TryAcquireOrRenew();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("409"), std::string::npos) << s.message();
  EXPECT_FALSE(b.IsLeader());
  client_b_.SetHook(nullptr);
  EXPECT_EQ(b.TryAcquireOrRenew().message(), "lease schedext-system/schedext is held by first");
}

TEST_F(LeaderElectionTest, FailingRenewalsStopServingBeforeAnyoneElseCanAcquire) {
  std::vector<std::string> changes;
  LeaderElectionOptions options = Options("a", &clock_);
  options.on_change = [&](bool leading) { changes.push_back(leading ? "lead" : "follow"); };
  LeaderElector a(client_a_, options);
  LeaderElector b(client_b_, Options("b", &clock_));
  ASSERT_TRUE(a.TryAcquireOrRenew().ok());
  ASSERT_FALSE(b.TryAcquireOrRenew().ok());
  client_a_.SetCutOff(true);  // a can no longer reach the API server; b can

  int64_t a_stopped_ms = -1;
  int64_t b_started_ms = -1;
  for (int64_t t = 0; t <= 20000; t += 100) {
    if (t % 2000 == 0 && t > 0) {  // both retry every 2 s
      Status renew = a.TryAcquireOrRenew();
      EXPECT_EQ(renew.code(), StatusCode::kUnavailable);
      (void)b.TryAcquireOrRenew();
    }
    ASSERT_FALSE(a.IsLeader() && b.IsLeader()) << "two leaders at t=" << t << " ms";
    if (a_stopped_ms < 0 && !a.IsLeader()) {
      a_stopped_ms = t;
    }
    if (b_started_ms < 0 && b.IsLeader()) {
      b_started_ms = t;
    }
    clock_.Advance(milliseconds(100));
  }
  EXPECT_EQ(a_stopped_ms, 10000);  // renewDeadline after the last renewal's start
  EXPECT_EQ(b_started_ms, 16000);  // the first retry after leaseDuration (15 s)
  EXPECT_EQ(changes, (std::vector<std::string>{"lead", "follow"}));
  // Cut off, a never saw b's write: it only knows it could not renew.
  EXPECT_EQ(a.FollowerReason(),
            "lease schedext-system/schedext could not be renewed within "
            "renewDeadline");
  EXPECT_EQ(store_.holder(), "b");
}

TEST_F(LeaderElectionTest, ASlowRenewalCountsFromItsStart) {
  LeaderElector a(client_a_, Options("a", &clock_));
  ASSERT_TRUE(a.TryAcquireOrRenew().ok());
  clock_.Advance(seconds(2));
  // The renewal's GET takes 11 s to answer (a hung API server): its write
  // lands at t=13, but the deadline runs from t=2, so a must not serve.
  client_a_.SetHook([&](std::string_view method) {
    if (method == "GET") {
      clock_.Advance(seconds(11));
    }
  });
  ASSERT_TRUE(a.TryAcquireOrRenew().ok());
  EXPECT_FALSE(a.IsLeader());
  EXPECT_EQ(a.FollowerReason(),
            "lease schedext-system/schedext could not be renewed within "
            "renewDeadline");
  client_a_.SetHook(nullptr);
  ASSERT_TRUE(a.TryAcquireOrRenew().ok());  // a prompt renewal serves again
  EXPECT_TRUE(a.IsLeader());
}

TEST_F(LeaderElectionTest, ReleaseLetsAFollowerTakeOverAtOnce) {
  LeaderElector a(client_a_, Options("a", &clock_));
  LeaderElector b(client_b_, Options("b", &clock_));
  ASSERT_TRUE(a.TryAcquireOrRenew().ok());
  ASSERT_FALSE(b.TryAcquireOrRenew().ok());
  clock_.Advance(seconds(1));
  ASSERT_TRUE(a.Release().ok());
  EXPECT_FALSE(a.IsLeader());
  const json released = store_.spec();
  EXPECT_EQ(released["holderIdentity"], "");
  EXPECT_EQ(released["leaseDurationSeconds"], 1);
  EXPECT_EQ(released["leaseTransitions"], 0);
  EXPECT_EQ(released["renewTime"], "2026-01-01T00:00:01.000000Z");
  // No waiting for the lease duration: an empty holder may be taken.
  ASSERT_TRUE(b.TryAcquireOrRenew().ok());
  EXPECT_TRUE(b.IsLeader());
  EXPECT_EQ(store_.spec()["leaseTransitions"], 1);
  // Releasing a lease one does not hold writes nothing.
  const size_t writes = store_.writes();
  ASSERT_TRUE(a.Release().ok());
  EXPECT_EQ(store_.writes(), writes);
  EXPECT_EQ(store_.holder(), "b");
}

TEST_F(LeaderElectionTest, StopServingRefusesAtOnceButKeepsTheLeaseUntilReleased) {
  LeaderElector a(client_a_, Options("a", &clock_));
  LeaderElector b(client_b_, Options("b", &clock_));
  ASSERT_TRUE(a.TryAcquireOrRenew().ok());
  ASSERT_FALSE(b.TryAcquireOrRenew().ok());
  a.StopServing();
  EXPECT_FALSE(a.IsLeader());
  // While a drains, it still renews: nobody else may serve meanwhile.
  for (int i = 0; i < 10; ++i) {
    clock_.Advance(seconds(2));
    ASSERT_TRUE(a.TryAcquireOrRenew().ok());
    EXPECT_FALSE(a.IsLeader());
    EXPECT_FALSE(b.TryAcquireOrRenew().ok());
    EXPECT_FALSE(b.IsLeader());
  }
  ASSERT_TRUE(a.Release().ok());
  ASSERT_TRUE(b.TryAcquireOrRenew().ok());
  EXPECT_TRUE(b.IsLeader());
}

TEST_F(LeaderElectionTest, ReleaseRetriesOnceAfterAConflict) {
  LeaderElector a(client_a_, Options("a", &clock_));
  ASSERT_TRUE(a.TryAcquireOrRenew().ok());
  bool bumped = false;
  client_a_.SetHook([&](std::string_view method) {
    if (method == "PATCH" && !bumped) {
      bumped = true;
      store_.WriteSpec({{"renewTime", "2026-01-01T00:00:00.500000Z"}});  // still a's
    }
  });
  ASSERT_TRUE(a.Release().ok());
  EXPECT_EQ(store_.holder(), "");
  EXPECT_EQ(store_.spec()["leaseDurationSeconds"], 1);
}

TEST(LeaderElectionOptionsTest, ValidatesAsClientGo) {
  LeaderElectionOptions o = Options("a", nullptr);
  EXPECT_TRUE(ValidateLeaderElectionOptions(o).ok());
  struct Case {
    std::string name;
    std::function<void(LeaderElectionOptions&)> change;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"no identity", [](auto& x) { x.identity.clear(); },
       "leader election: identity must not be empty"},
      {"no name", [](auto& x) { x.lease_name.clear(); },
       "leader election: lease name and namespace must not be empty"},
      {"zero retry", [](auto& x) { x.retry_period = milliseconds(0); },
       "leader election: durations must be positive"},
      {"lease = renew", [](auto& x) { x.lease_duration = x.renew_deadline; },
       "leader election: leaseDuration must be greater than renewDeadline"},
      {"renew = 1.2 retry",
       [](auto& x) {
         x.renew_deadline = milliseconds(1200);
         x.retry_period = milliseconds(1000);
       },
       "leader election: renewDeadline must be greater than 1.2 × retryPeriod"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    LeaderElectionOptions changed = o;
    c.change(changed);
    Status s = ValidateLeaderElectionOptions(changed);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(), c.want);
  }
}

TEST(LeaderElectionDefaultsTest, NamespaceFromEnvThenServiceAccountThenDefault) {
  char dir[] = "/tmp/schedext-le-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string file = std::string(dir) + "/namespace";
  EXPECT_EQ(DefaultLeaseNamespace("from-env", file), "from-env");
  EXPECT_EQ(DefaultLeaseNamespace(nullptr, file), "default");  // no file
  {
    std::ofstream out(file);
    out << "from-file\n";
  }
  EXPECT_EQ(DefaultLeaseNamespace("", file), "from-file");
  EXPECT_EQ(DefaultLeaseNamespace("from-env", file), "from-env");
  std::remove(file.c_str());
  rmdir(dir);

  const std::string identity = DefaultLeaderIdentity();
  const std::string suffix = "_" + std::to_string(getpid());
  ASSERT_GT(identity.size(), suffix.size());
  EXPECT_EQ(identity.substr(identity.size() - suffix.size()), suffix);
}

// The real thread, on the real clock, with short periods: one leader at a
// time, and Stop() hands the lease over through a release.
TEST_F(LeaderElectionTest, ThreadsElectOneLeaderAndHandOverOnStop) {
  auto fast = [](std::string id) {
    LeaderElectionOptions o = Options(std::move(id), nullptr);
    o.lease_duration = milliseconds(3000);
    o.renew_deadline = milliseconds(2000);
    o.retry_period = milliseconds(50);
    return o;
  };
  auto a = std::make_unique<LeaderElector>(client_a_, fast("a"));
  LeaderElector b(client_b_, fast("b"));
  a->Start();
  b.Start();
  const auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (!a->IsLeader() && !b.IsLeader() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  ASSERT_TRUE(a->IsLeader() || b.IsLeader());
  // Watch for a while: never both.
  for (int i = 0; i < 100; ++i) {
    ASSERT_FALSE(a->IsLeader() && b.IsLeader());
    std::this_thread::sleep_for(milliseconds(5));
  }
  LeaderElector* leader = a->IsLeader() ? a.get() : &b;
  LeaderElector* follower = leader == a.get() ? &b : a.get();
  const std::string follower_id = follower->options().identity;
  const auto stop_at = std::chrono::steady_clock::now();
  leader->Stop();
  EXPECT_FALSE(leader->IsLeader());
  // Released: the follower takes over within about one retry period, far
  // sooner than the 3 s lease duration.
  while (!follower->IsLeader() && std::chrono::steady_clock::now() < stop_at + seconds(2)) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_TRUE(follower->IsLeader());
  EXPECT_EQ(store_.holder(), follower_id);
  follower->Stop();
  EXPECT_EQ(store_.holder(), "");
  a.reset();
}

}  // namespace
}  // namespace schedext::cluster
