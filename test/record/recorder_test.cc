// server.record: what ExtenderService records, in both node modes; sampling;
// rotation within maxBytes / maxFiles; drops (and their counters) when the
// writer falls behind, without delaying a request; the config keys.
#include "schedext/record/recorder.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "explain/explain_fixture.h"
#include "schedext/explain/explain.h"
#include "schedext/record/record_file.h"
#include "schedext/server/service.h"

namespace schedext::record {
namespace {

using nlohmann::json;
using server::Verb;
using namespace explain_testing;  // NOLINT: test vocabulary
using schedext::testing::ArgsShape;
using schedext::testing::ExtenderArgsJson;
using schedext::testing::ExtenderArgsNamesJson;

// A fresh directory under $TMPDIR, removed with its files at the end.
class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp") + std::string("/schedext-record-XXXXXX");
    path_ = mkdtemp(pattern.data()) != nullptr ? pattern : "";
  }
  ~TempDir() {
    for (const std::string& f : Files()) {
      std::remove(f.c_str());
    }
    rmdir(path_.c_str());
  }
  const std::string& path() const { return path_; }
  std::vector<std::string> Files() const {
    auto files = ListRecordFiles(path_);
    return files.ok() ? *files : std::vector<std::string>{};
  }
  // Every record of every file, oldest first.
  std::vector<json> Records() const {
    std::vector<json> out;
    for (const std::string& f : Files()) {
      std::ifstream in(f);
      for (std::string line; std::getline(in, line);) {
        out.push_back(json::parse(line));
      }
    }
    return out;
  }

 private:
  std::string path_;
};

class RecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    cache_ = CacheWith(Nodes(), {BoundPod()});
    profiles_ = BuildProfiles(kConfig);
    ASSERT_EQ(profiles_.size(), 2U);
  }

  void Start(RecorderOptions options) {
    options.config.dir = dir_.path();
    // A fixed clock: file names and time stamps do not depend on when the
    // test runs.
    options.now = [] {
      return std::chrono::system_clock::time_point(std::chrono::seconds(1764597600));
    };
    auto started = Recorder::Start(std::move(options));
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    recorder_ = std::move(started).value();
    service_ =
        std::make_unique<server::ExtenderService>(profiles_, 0, cache_.get(), nullptr, nullptr);
    service_->SetExplain(&explain_verb_);
    service_->SetObserver(recorder_.get());
  }

  int Call(Verb verb, std::string_view profile, const std::string& body) {
    wire::RequestBuffer buffer = wire::RequestBuffer::CopyOf(body);
    server::RequestSummary summary;
    return service_->Handle(verb, static_cast<size_t>(service_->FindProfile(profile)), buffer,
                            scratch_, out_, summary);
  }

  TempDir dir_;
  std::unique_ptr<cluster::ClusterCache> cache_;
  std::vector<std::shared_ptr<const pipeline::Profile>> profiles_;
  std::unique_ptr<Recorder> recorder_;
  const explain::ExplainVerb explain_verb_;
  std::unique_ptr<server::ExtenderService> service_;
  server::Scratch scratch_;
  std::string out_;
};

TEST_F(RecorderTest, RecordsTheVerbsWithWhatTheCacheLent) {
  Start({});
  const std::string names = ExtenderArgsNamesJson(Pod().Build(), {"n1", "ghost", "n2"});
  ASSERT_EQ(Call(Verb::kFilter, "all", names), 200);
  const std::string filter_reply = out_;
  const std::string full = ExtenderArgsJson(Pod(), Nodes(), ArgsShape::kFullNodes);
  ASSERT_EQ(Call(Verb::kPrioritize, "packing", full), 200);
  const std::string prioritize_reply = out_;
  // Neither explain nor (by default) bind is recorded, nor a body that does
  // not decode.
  ASSERT_EQ(Call(Verb::kExplain, "all", names), 200);
  Call(Verb::kBind, "all", R"({"PodName":"p","PodNamespace":"ns","PodUID":"u","Node":"n1"})");
  ASSERT_EQ(Call(Verb::kFilter, "all", "{"), 400);
  recorder_->Flush();

  const std::vector<json> records = dir_.Records();
  ASSERT_EQ(records.size(), 2U);
  EXPECT_EQ(dir_.Files().size(), 1U);
  const json& f = records[0];
  EXPECT_EQ(f["version"], 1);
  EXPECT_EQ(f["time"], "2025-12-01T14:00:00.000000Z");
  EXPECT_EQ(f["verb"], "filter");
  EXPECT_EQ(f["profile"], "all");
  EXPECT_EQ(f["status"], 200);
  EXPECT_GE(f["latencyMicros"].get<int64_t>(), 0);
  EXPECT_EQ(f["request"], names);
  EXPECT_EQ(f["reply"], filter_reply);
  // Node-cache mode: the two known nodes as the cache had them, and their usage
  // (db-1 on n2).
  ASSERT_EQ(f["nodes"].size(), 2U);
  EXPECT_EQ(f["nodes"][0]["metadata"]["name"], "n1");
  EXPECT_EQ(f["nodes"][1]["metadata"]["labels"], json({{"zone", "b"}, {"example.com/load", "60"}}));
  EXPECT_EQ(f["nodes"][1]["spec"]["taints"],
            json::parse(R"([{"key":"soft","value":"x","effect":"PreferNoSchedule"}])"));
  EXPECT_EQ(f["nodes"][1]["status"]["allocatable"],
            json({{"cpu", "4000m"}, {"memory", "8589934592"}, {"pods", "110"}}));
  EXPECT_EQ(f["nodes"][1]["status"]["conditions"],
            json::parse(R"([{"type":"Ready","status":"True"}])"));
  // Usage counts requests per resource and pods apart (as kube-scheduler's
  // NodeInfo does); no policy of these profiles keeps state of its own.
  EXPECT_EQ(f["usage"]["n2"], json::parse(R"({"requested":{"cpu":"1000m","memory":"2147483648"},
    "scoringRequested":{"cpu":"1000m","memory":"2147483648"},"pods":1,"states":{}})"))
      << f["usage"].dump();
  EXPECT_EQ(f["policyState"], json::object());
  EXPECT_EQ(f["usage"]["n1"]["pods"], 0);

  const json& p = records[1];
  EXPECT_EQ(p["verb"], "prioritize");
  EXPECT_EQ(p["profile"], "packing");
  EXPECT_EQ(p["request"], full);
  EXPECT_EQ(p["reply"], prioritize_reply);
  EXPECT_TRUE(p["nodes"].is_null());  // full mode: the nodes are in the request
  EXPECT_EQ(p["usage"].size(), 4U);
  EXPECT_EQ(p["usage"]["n2"]["pods"], 1);

  // The record reads back into the same model: the node, and the usage.
  std::ifstream in(dir_.Files()[0]);
  std::string line;
  std::getline(in, line);
  auto decoded = DecodeRecord(line);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  const model::NodeInfo* n2 = (*decoded)->FindNode("n2");
  ASSERT_NE(n2, nullptr);
  EXPECT_EQ(n2->allocatable.milli_cpu, 4000);
  EXPECT_EQ(n2->allocatable.memory, int64_t{8} << 30);
  ASSERT_EQ(n2->taints.size(), 1U);
  EXPECT_EQ(n2->taints[0].effect, model::TaintEffect::kPreferNoSchedule);
  EXPECT_EQ(n2->labels.Find("zone").value_or(""), "b");
  const model::NodeUsage* usage = (*decoded)->FindUsage("n2");
  ASSERT_NE(usage, nullptr);
  EXPECT_EQ(usage->requested.milli_cpu, 1000);
  EXPECT_EQ(usage->scoring_requested.memory, int64_t{2} << 30);
  EXPECT_EQ(usage->pods, 1);
  EXPECT_EQ((*decoded)->FindNode("ghost"), nullptr);

  EXPECT_EQ(recorder_->stats().recorded, 2U);
  std::string metrics;
  recorder_->AppendMetrics(metrics);
  EXPECT_NE(metrics.find("schedext_record_requests_total 2\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("schedext_record_dropped_total{reason=\"queue_full\"} 0\n"),
            std::string::npos);
}

TEST_F(RecorderTest, SampleRateAndVerbs) {
  RecorderOptions options;
  options.config.sample_rate = 0.25;
  options.config.verbs = {"prioritize"};
  Start(options);
  const std::string body = ExtenderArgsNamesJson(Pod().Build(), {"n1", "n2"});
  for (int i = 0; i < 8; ++i) {
    ASSERT_EQ(Call(Verb::kPrioritize, "all", body), 200);
    ASSERT_EQ(Call(Verb::kFilter, "all", body), 200);  // not a recorded verb
  }
  recorder_->Flush();
  // floor(8 × 0.25) = 2 of the 8 prioritize requests, none of the filters.
  const std::vector<json> records = dir_.Records();
  ASSERT_EQ(records.size(), 2U);
  EXPECT_EQ(records[0]["verb"], "prioritize");
  EXPECT_EQ(records[1]["verb"], "prioritize");
}

TEST_F(RecorderTest, NothingAtSampleRateZero) {
  RecorderOptions options;
  options.config.sample_rate = 0;
  Start(options);
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(Call(Verb::kFilter, "all", ExtenderArgsNamesJson(Pod().Build(), {"n1"})), 200);
  }
  recorder_->Flush();
  EXPECT_TRUE(dir_.Records().empty());
  EXPECT_TRUE(dir_.Files().empty());
}

TEST_F(RecorderTest, RotatesWithinMaxBytesAndMaxFiles) {
  const std::string body = ExtenderArgsNamesJson(Pod().Build(), {"n1"});
  // Measure one record's line first (every record here is the same size but
  // for the latency digits).
  size_t line_bytes = 0;
  {
    Start({});
    ASSERT_EQ(Call(Verb::kFilter, "all", body), 200);
    recorder_->Flush();
    line_bytes = recorder_->stats().bytes_written;
    recorder_.reset();
    for (const std::string& f : dir_.Files()) {
      std::remove(f.c_str());
    }
  }
  ASSERT_GT(line_bytes, 500U);
  RecorderOptions options;
  // Two records fit in a file (with room for a few more latency digits), three do not.
  options.config.max_bytes = 2 * line_bytes + 20;
  options.config.max_files = 2;
  Start(options);
  for (int i = 0; i < 7; ++i) {
    ASSERT_EQ(Call(Verb::kFilter, "all", body), 200);
  }
  recorder_->Flush();
  // 7 records → files of 2, 2, 2, 1; only the newest two files are kept.
  const std::vector<std::string> files = dir_.Files();
  ASSERT_EQ(files.size(), 2U);
  EXPECT_EQ(dir_.Records().size(), 3U);
  EXPECT_NE(files[0].find("records-20251201T140000Z-000002.jsonl"), std::string::npos) << files[0];
  EXPECT_NE(files[1].find("records-20251201T140000Z-000003.jsonl"), std::string::npos) << files[1];
  const RecorderStats stats = recorder_->stats();
  EXPECT_EQ(stats.recorded, 7U);
  EXPECT_EQ(stats.files_deleted, 2U);
  for (const std::string& f : files) {
    std::ifstream in(f, std::ios::binary | std::ios::ate);
    EXPECT_LE(static_cast<size_t>(in.tellg()), options.config.max_bytes) << f;
  }
}

// A record above maxBytes is dropped and counted. When the request and reply
// bodies alone exceed it, the request thread refuses it before copying them:
// it never reaches the queue or the writer; otherwise the writer drops it once
// encoded (the node objects of node-cache mode, escaping).
TEST_F(RecorderTest, DropsARecordAboveMaxBytes) {
  RecorderOptions options;
  options.config.max_bytes = 4096;
  // Exchanges the writer took from the queue (shared: the writer thread may
  // outlive an early return).
  auto written = std::make_shared<std::atomic<int>>(0);
  options.before_write = [written] { ++*written; };
  Start(options);
  ASSERT_EQ(Call(Verb::kFilter, "all", ExtenderArgsNamesJson(Pod().Build(), {"n1"})), 200);
  // Four full nodes: the bodies fit, the record (the reply echoes the passing
  // nodes, and every quote is escaped) does not.
  const std::string full = ExtenderArgsJson(Pod(), Nodes(), ArgsShape::kFullNodes);
  ASSERT_EQ(Call(Verb::kFilter, "all", full), 200);
  ASSERT_LE(full.size() + out_.size(), 4096U);
  recorder_->Flush();
  EXPECT_EQ(*written, 2);
  EXPECT_EQ(recorder_->stats().dropped_too_large, 1U);
  // Six realistic full nodes: the request alone is above maxBytes.
  std::vector<NodeJson> big;
  for (const char* name : {"r1", "r2", "r3", "r4", "r5", "r6"}) {
    big.push_back(NodeJson(name).Realistic());
  }
  const std::string large = ExtenderArgsJson(Pod(), big, ArgsShape::kFullNodes);
  ASSERT_GT(large.size(), 4096U);
  ASSERT_EQ(Call(Verb::kFilter, "all", large), 200);
  recorder_->Flush();
  EXPECT_EQ(*written, 2);  // never queued
  EXPECT_EQ(recorder_->stats().dropped_too_large, 2U);
  EXPECT_EQ(recorder_->stats().dropped_queue_full, 0U);
  EXPECT_EQ(dir_.Records().size(), 1U);
  // The bound is on request + reply together, inclusive.
  EXPECT_FALSE(recorder_->Sample("filter", 4097));
  EXPECT_TRUE(recorder_->Sample("filter", 4096));
  EXPECT_EQ(recorder_->stats().dropped_too_large, 3U);
  std::string metrics;
  recorder_->AppendMetrics(metrics);
  EXPECT_NE(metrics.find("schedext_record_dropped_total{reason=\"too_large\"} 3\n"),
            std::string::npos)
      << metrics;
}

// The writer is held inside its first write; the queue (2 entries) fills and
// further sampled requests are dropped and counted, while every request is
// still answered at once.
TEST_F(RecorderTest, DropsAndCountsWhenTheWriterFallsBehind) {
  std::promise<void> entered;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  bool first = true;
  RecorderOptions options;
  options.queue_entries = 2;
  options.before_write = [&, released] {
    if (first) {
      first = false;
      entered.set_value();
      released.wait();
    }
  };
  Start(options);
  const std::string body = ExtenderArgsNamesJson(Pod().Build(), {"n1", "n2"});
  ASSERT_EQ(Call(Verb::kFilter, "all", body), 200);
  ASSERT_EQ(entered.get_future().wait_for(std::chrono::seconds(60)), std::future_status::ready);
  for (int i = 0; i < 6; ++i) {
    ASSERT_EQ(Call(Verb::kFilter, "all", body), 200);  // answered with the writer stuck
  }
  EXPECT_EQ(recorder_->stats().dropped_queue_full, 4U);
  EXPECT_EQ(recorder_->stats().recorded, 0U);
  release.set_value();
  recorder_->Flush();
  EXPECT_EQ(recorder_->stats().recorded, 3U);
  EXPECT_EQ(dir_.Records().size(), 3U);
  std::string metrics;
  recorder_->AppendMetrics(metrics);
  EXPECT_NE(metrics.find("schedext_record_dropped_total{reason=\"queue_full\"} 4\n"),
            std::string::npos)
      << metrics;
}

// Bodies that cannot fit in the queue's bytes are refused before the copy
// too (queue_full), and so are those that do not fit beside what is queued.
TEST_F(RecorderTest, DropsBeforeCopyingWhenTheQueueBytesAreFull) {
  // Shared with the writer thread, which may outlive an early return.
  struct Hold {
    std::promise<void> entered;
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    std::atomic<int> written{0};
  };
  auto hold = std::make_shared<Hold>();
  // Released on every way out, so the writer (and the fixture's teardown)
  // never waits forever.
  std::unique_ptr<Hold, void (*)(Hold*)> releaser(hold.get(),
                                                  [](Hold* h) { h->release.set_value(); });
  RecorderOptions options;
  const std::string body = ExtenderArgsNamesJson(Pod().Build(), {"n1", "n2"});
  const std::string reply = R"({"Nodes":null,"NodeNames":["n1","n2"],"FailedNodes":{},)"
                            R"("FailedAndUnresolvableNodes":{},"Error":""})";
  // Room for two such exchanges, not three.
  const size_t exchange = body.size() + reply.size();
  options.queue_bytes = 2 * exchange + exchange / 2;
  options.before_write = [hold] {
    if (hold->written++ == 0) {
      hold->entered.set_value();
      hold->released.wait();
    }
  };
  Start(options);
  EXPECT_FALSE(recorder_->Sample("filter", options.queue_bytes + 1));
  EXPECT_EQ(recorder_->stats().dropped_queue_full, 1U);
  // The first is taken by the (held) writer; the next two fill the queue's
  // bytes; the fourth does not fit beside them.
  ASSERT_EQ(Call(Verb::kFilter, "all", body), 200);
  ASSERT_EQ(out_, reply);
  ASSERT_EQ(hold->entered.get_future().wait_for(std::chrono::seconds(60)),
            std::future_status::ready);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(Call(Verb::kFilter, "all", body), 200);
  }
  EXPECT_EQ(recorder_->stats().dropped_queue_full, 2U);
  EXPECT_EQ(recorder_->stats().dropped_too_large, 0U);
  releaser.reset();
  recorder_->Flush();
  EXPECT_EQ(hold->written, 3);
  EXPECT_EQ(recorder_->stats().recorded, 3U);
}

TEST(RecordConfigTest, KeysDefaultsAndErrors) {
  auto config =
      config::LoadConfigText("profiles: [{name: a, policies: [{name: NodeHealth}]}]\n", "t");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_FALSE(config->server.record.enabled());  // nothing recorded by default
  EXPECT_EQ(config->server.record.verbs,
            (std::vector<std::string>{"filter", "prioritize", "preempt"}));
  config = config::LoadConfigText(R"(server:
  record:
    dir: /var/lib/schedext/record
    sampleRate: 0.05
    maxBytes: 1048576
    maxFiles: 3
    verbs: [filter, bind]
profiles: [{name: a, policies: [{name: NodeHealth}]}]
)",
                                  "t");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_TRUE(config->server.record.enabled());
  EXPECT_EQ(config->server.record.dir, "/var/lib/schedext/record");
  EXPECT_DOUBLE_EQ(config->server.record.sample_rate, 0.05);
  EXPECT_EQ(config->server.record.max_bytes, 1048576U);
  EXPECT_EQ(config->server.record.max_files, 3);
  EXPECT_EQ(config->server.record.verbs, (std::vector<std::string>{"filter", "bind"}));
  struct Case {
    std::string yaml;
    std::string error;
  };
  for (const Case& c : std::vector<Case>{
           {"sampleRate: 1.5", "t:3:17: server.record.sampleRate: must be a number from 0 to 1"},
           {"sampleRate: x", "server.record.sampleRate: must be a number from 0 to 1"},
           {"verbs: [filter, explain]",
            "server.record.verbs: must be a list of filter, prioritize, preempt, bind (got "
            "\"explain\")"},
           {"maxFiles: 0", "server.record.maxFiles: must be an integer from 1 to 100000"},
           {"maxBytes: 10", "server.record.maxBytes: must be an integer of at least 4096"},
           {"dirr: x", "server.record.dirr: unknown field"}}) {
    SCOPED_TRACE(c.yaml);
    auto bad =
        config::LoadConfigText("server:\n  record:\n    " + c.yaml +
                                   "\nprofiles: [{name: a, policies: [{name: NodeHealth}]}]\n",
                               "t");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find(c.error), std::string::npos) << bad.status().message();
  }
}

}  // namespace
}  // namespace schedext::record
