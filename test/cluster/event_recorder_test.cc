// EventRecorder: the exact Event it POSTs, and its series deduplication with
// a fake clock (wall times passed in) over a scripted KubeClient.
#include "schedext/cluster/event_recorder.h"

#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <string>
#include <vector>

#include "schedext/cluster/http_kube_client.h"
#include "testing/fake_api_server.h"

namespace schedext::cluster {
namespace {

using std::chrono::seconds;

class ScriptedClient final : public KubeClient {
 public:
  struct Call {
    std::string method, path, body, content_type;
  };
  StatusOr<HttpResult> Get(std::string_view) override { return HttpResult{404, "{}"}; }
  StatusOr<HttpResult> Post(std::string_view path, std::string_view body) override {
    calls.push_back({"POST", std::string(path), std::string(body), ""});
    return Next(201);
  }
  StatusOr<HttpResult> Patch(std::string_view path, std::string_view body,
                             std::string_view content_type) override {
    calls.push_back(
        {"PATCH", std::string(path), std::string(body), std::string(content_type)});
    return Next(200);
  }
  Status Watch(std::string_view, const std::function<bool(std::string_view)>&) override {
    return OkStatus();
  }
  void CancelWatches() override {}

  std::vector<Call> calls;
  std::deque<int> statuses;  // scripted answers; default 201 / 200

 private:
  HttpResult Next(int fallback) {
    if (statuses.empty()) return {fallback, "{}"};
    const int s = statuses.front();
    statuses.pop_front();
    return {s, "{\"kind\":\"Status\",\"message\":\"scripted\"}"};
  }
};

class EventRecorderTest : public ::testing::Test {
 protected:
  EventRecorderTest() : recorder_(client_, Options()) {}
  static EventRecorderOptions Options() {
    EventRecorderOptions o;
    o.reporting_instance = "schedext-7d9f-abcde";
    o.update_interval = seconds(30);
    o.series_window = seconds(360);
    o.max_pods = 3;
    return o;
  }
  static EventPod PodRef(std::string name = "big") { return {"team-a", std::move(name), "u-1"}; }

  ScriptedClient client_;
  EventRecorder recorder_;
  // 2026-12-06T15:00:00.123456Z
  EventRecorder::WallTime t0_ =
      EventRecorder::WallTime(std::chrono::microseconds(1796569200123456));
};

TEST_F(EventRecorderTest, TheFirstOccurrencePostsThisEvent) {
  ASSERT_EQ(recorder_.Record(PodRef(), "0/3 nodes fit profile gpu.", t0_), EventWrite::kCreated);
  ASSERT_EQ(client_.calls.size(), 1u);
  EXPECT_EQ(client_.calls[0].method, "POST");
  EXPECT_EQ(client_.calls[0].path, "/apis/events.k8s.io/v1/namespaces/team-a/events");
  EXPECT_EQ(client_.calls[0].body,
            R"({"apiVersion":"events.k8s.io/v1","kind":"Event",)"
            R"("metadata":{"name":"big.18eeb22b3bc42a00","namespace":"team-a"},)"
            R"("eventTime":"2026-12-06T15:00:00.123456Z","reportingController":"schedext",)"
            R"("reportingInstance":"schedext-7d9f-abcde","action":"Scheduling",)"
            R"("reason":"SchedextUnschedulable","regarding":{"apiVersion":"v1","kind":"Pod",)"
            R"("namespace":"team-a","name":"big","uid":"u-1"},)"
            R"("note":"0/3 nodes fit profile gpu.","type":"Warning"})");
}

TEST_F(EventRecorderTest, RepeatsMakeOneSeriesUpdatedAtMostOncePerInterval) {
  const std::string note = "0/3 nodes fit profile gpu.";
  ASSERT_EQ(recorder_.Record(PodRef(), note, t0_), EventWrite::kCreated);
  // 100 retries a second apart: one Event, a series PATCH every 30 s.
  int updates = 0;
  for (int i = 1; i <= 100; ++i) {
    const EventWrite w = recorder_.Record(PodRef(), note, t0_ + seconds(i));
    ASSERT_TRUE(w == EventWrite::kCounted || w == EventWrite::kUpdated) << i;
    updates += w == EventWrite::kUpdated ? 1 : 0;
  }
  EXPECT_EQ(updates, 3);  // at 30, 60, 90 s
  size_t posts = 0;
  for (const auto& c : client_.calls) posts += c.method == "POST" ? 1 : 0;
  EXPECT_EQ(posts, 1u);
  const ScriptedClient::Call& last = client_.calls.back();
  EXPECT_EQ(last.method, "PATCH");
  EXPECT_EQ(last.path, "/apis/events.k8s.io/v1/namespaces/team-a/events/big.18eeb22b3bc42a00");
  EXPECT_EQ(last.content_type, "application/merge-patch+json");
  EXPECT_EQ(last.body,
            R"({"series":{"count":91,"lastObservedTime":"2026-12-06T15:01:30.123456Z"}})");
  // The 10 counted since go out with the flush once the interval has passed.
  EXPECT_EQ(recorder_.Flush(t0_ + seconds(110)), 0u);
  EXPECT_EQ(recorder_.Flush(t0_ + seconds(120)), 1u);
  EXPECT_EQ(client_.calls.back().body,
            R"({"series":{"count":101,"lastObservedTime":"2026-12-06T15:01:40.123456Z"}})");
  EXPECT_EQ(recorder_.Flush(t0_ + seconds(200)), 0u);  // nothing new
}

TEST_F(EventRecorderTest, ANewNoteIsANewEventButNotWithinTheInterval) {
  ASSERT_EQ(recorder_.Record(PodRef(), "short by 2 GiB", t0_), EventWrite::kCreated);
  EXPECT_EQ(recorder_.Record(PodRef(), "short by 1 GiB", t0_ + seconds(5)),
            EventWrite::kRateLimited);
  EXPECT_EQ(recorder_.Record(PodRef(), "short by 1 GiB", t0_ + seconds(31)),
            EventWrite::kCreated);
  EXPECT_EQ(client_.calls.size(), 2u);
  // Another pod (or the same name with a new uid) has its own Event.
  EXPECT_EQ(recorder_.Record({"team-a", "big", "u-2"}, "short by 1 GiB", t0_ + seconds(32)),
            EventWrite::kCreated);
}

TEST_F(EventRecorderTest, QuietPodsAndTheLeastRecentBeyondMaxPodsAreForgotten) {
  ASSERT_EQ(recorder_.Record(PodRef("a"), "n", t0_), EventWrite::kCreated);
  ASSERT_EQ(recorder_.Record(PodRef("b"), "n", t0_), EventWrite::kCreated);
  ASSERT_EQ(recorder_.Record(PodRef("c"), "n", t0_), EventWrite::kCreated);
  ASSERT_EQ(recorder_.Record(PodRef("a"), "n", t0_ + seconds(1)), EventWrite::kCounted);
  ASSERT_EQ(recorder_.Record(PodRef("d"), "n", t0_ + seconds(2)), EventWrite::kCreated);
  EXPECT_EQ(recorder_.tracked(), 3u);  // b, the least recently seen, went
  EXPECT_EQ(recorder_.Record(PodRef("b"), "n", t0_ + seconds(3)), EventWrite::kCreated);
  EXPECT_EQ(recorder_.Record(PodRef("a"), "n", t0_ + seconds(4)), EventWrite::kCounted);
  // After series_window without an occurrence a pod starts over.
  recorder_.Flush(t0_ + seconds(400));
  EXPECT_EQ(recorder_.tracked(), 0u);
  EXPECT_EQ(recorder_.Record(PodRef("a"), "n", t0_ + seconds(401)), EventWrite::kCreated);
}

TEST_F(EventRecorderTest, AnExpiredEventIsCreatedAgainAndRefusalsAreReported) {
  ASSERT_EQ(recorder_.Record(PodRef(), "n", t0_), EventWrite::kCreated);
  client_.statuses = {404};  // the PATCH: the Event's TTL ran out
  EXPECT_EQ(recorder_.Record(PodRef(), "n", t0_ + seconds(40)), EventWrite::kCreated);
  EXPECT_EQ(client_.calls.back().method, "POST");
  client_.statuses = {403};
  Status error;
  EXPECT_EQ(recorder_.Record(PodRef("other"), "n", t0_ + seconds(41), &error),
            EventWrite::kFailed);
  EXPECT_EQ(error.code(), StatusCode::kFailedPrecondition) << error.ToString();
  EXPECT_NE(error.message().find("403"), std::string::npos) << error.ToString();
}

TEST_F(EventRecorderTest, NotesAreCutToTheApiLimitOnACharacterBoundary) {
  std::string note(1023, 'x');
  note += "\xc3\xa9";  // é across the limit
  ASSERT_EQ(recorder_.Record(PodRef(), note, t0_), EventWrite::kCreated);
  const std::string& body = client_.calls[0].body;
  EXPECT_NE(body.find("\"note\":\"" + std::string(1023, 'x') + "\""), std::string::npos);
  EXPECT_EQ(EventRecorder::EventName(std::string(300, 'p'), t0_).size(), 253u);
}

// Over HTTP: what reaches an API server is exactly the Event above, then
// the series as a JSON merge patch.
TEST(EventRecorderHttpTest, TheApiServerReceivesTheEventAndItsSeriesPatch) {
  testing::FakeApiServer api;
  ASSERT_TRUE(api.Start()) << api.error();
  ClientConfig c;
  c.server = api.url();
  c.ca_pem = api.ca_pem();
  c.token = api.token();
  c.qps = 0;
  c.timeout = std::chrono::seconds(2);
  StatusOr<std::unique_ptr<KubeClient>> client = NewHttpKubeClient(c);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  api.QueueResponse("POST", "/apis/events.k8s.io/v1/namespaces/team-a/events", 201, "{}");
  api.QueueResponse("PATCH", "/apis/events.k8s.io/v1/namespaces/team-a/events/", 200, "{}");
  EventRecorderOptions options;
  options.reporting_instance = "schedext-0";
  EventRecorder recorder(**client, options);
  const EventRecorder::WallTime t0(std::chrono::microseconds(1796569200123456));
  const EventPod pod{"team-a", "big", "u-1"};
  Status error;
  ASSERT_EQ(recorder.Record(pod, "0/3 nodes fit profile gpu.", t0, &error), EventWrite::kCreated)
      << error.ToString();
  ASSERT_EQ(recorder.Record(pod, "0/3 nodes fit profile gpu.", t0 + seconds(31), &error),
            EventWrite::kUpdated)
      << error.ToString();
  const std::vector<testing::RecordedRequest> got = api.requests();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].method, "POST");
  EXPECT_EQ(got[0].target, "/apis/events.k8s.io/v1/namespaces/team-a/events");
  EXPECT_EQ(got[0].authorization, "Bearer " + api.token());
  EXPECT_EQ(got[0].content_type, "application/json");
  EXPECT_EQ(got[0].body,
            R"({"apiVersion":"events.k8s.io/v1","kind":"Event",)"
            R"("metadata":{"name":"big.18eeb22b3bc42a00","namespace":"team-a"},)"
            R"("eventTime":"2026-12-06T15:00:00.123456Z","reportingController":"schedext",)"
            R"("reportingInstance":"schedext-0","action":"Scheduling",)"
            R"("reason":"SchedextUnschedulable","regarding":{"apiVersion":"v1","kind":"Pod",)"
            R"("namespace":"team-a","name":"big","uid":"u-1"},)"
            R"("note":"0/3 nodes fit profile gpu.","type":"Warning"})");
  EXPECT_EQ(got[1].method, "PATCH");
  EXPECT_EQ(got[1].target, "/apis/events.k8s.io/v1/namespaces/team-a/events/big.18eeb22b3bc42a00");
  EXPECT_EQ(got[1].content_type, "application/merge-patch+json");
  EXPECT_EQ(got[1].body,
            R"({"series":{"count":2,"lastObservedTime":"2026-12-06T15:00:31.123456Z"}})");
}

}  // namespace
}  // namespace schedext::cluster
