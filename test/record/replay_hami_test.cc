// Replay of HamiVgpu: the device usage the cluster cache counted from the
// pods' hami.io/vgpu-devices-allocated travels in the record (the
// accounting's NodeStateCodec, "HamiVgpu"), so `schedext replay` fits the pod
// on the devices as the live request did. A real ExtenderService + Recorder
// records; `schedext replay`'s path (cli::LoadProfiles, ReplayDirectory)
// decides again.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "explain/explain_fixture.h"
#include "policy/builtin/hami_vgpu/accounting.h"
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
using schedext::testing::ExtenderArgsNamesJson;

constexpr std::string_view kHamiConfig = R"(
profiles:
  - name: hami
    policies:
      - name: HamiVgpu
)";

// Two A100s of 40,000 MiB split 10 ways, in the device plugin's text form.
NodeJson HamiNode(const std::string& name) {
  NodeJson n(name);
  n.Ready().Allocatable("cpu", "8").Allocatable("memory", "32Gi").Allocatable("pods", "110");
  n.Allocatable("nvidia.com/gpu", "20").Capacity("nvidia.com/gpu", "20");
  n.Annotation("hami.io/node-nvidia-register",
               "GPU-" + name + "a,10,40000,100,NVIDIA-A100,0,true,0,hami-core:" + "GPU-" + name +
                   "b,10,40000,100,NVIDIA-A100,0,true,1,hami-core:");
  return n;
}

// A running pod on `node` holding 30,000 MiB and 20 cores of `device`.
PodJson HoldingPod(const std::string& name, const std::string& node, const std::string& device) {
  PodJson pod(name);
  pod.Namespace("ml")
      .Limit("nvidia.com/gpu", "1")
      .Annotation("hami.io/vgpu-devices-allocated", device + ",NVIDIA,30000,20:;")
      .NodeName(node)
      .Phase("Running");
  return pod;
}

std::string AskingPod() {
  PodJson pod = Pod();
  pod.Limit("nvidia.com/gpu", "1").Limit("nvidia.com/gpumem", "20000");
  return pod.Build();
}

class ReplayHamiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    record_dir_ = dir_ + "/record";
    cli::LoadedConfig live = Load(dir_, kHamiConfig);
    cluster::CacheOptions cache_options;
    cache_options.accountings = live.host->accountings();
    cache_options.summaries = live.host->summaries();
    cluster::ClusterCache cache(cache_options);
    // h1: device a holds 30,000 of 40,000 MiB, b is free; h2: both hold
    // 30,000; h3 registers no device.
    NodeJson h3("h3");
    h3.Ready().Allocatable("cpu", "8").Allocatable("memory", "32Gi").Allocatable("pods", "110");
    FeedCache(cache, {HamiNode("h1"), HamiNode("h2"), h3},
              {HoldingPod("a", "h1", "GPU-h1a"), HoldingPod("b", "h2", "GPU-h2a"),
               HoldingPod("c", "h2", "GPU-h2b")});
    ASSERT_TRUE(cache.Synced());
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
    auto call = [&](Verb verb, const std::string& text) {
      wire::RequestBuffer body = wire::RequestBuffer::CopyOf(text);
      return service.Handle(verb, 0, body, scratch, out, summary);
    };
    // 20,000 MiB: only h1's device b has room.
    ASSERT_EQ(call(Verb::kFilter, ExtenderArgsNamesJson(AskingPod(), {"h1", "h2", "h3"})), 200);
    ASSERT_EQ(out, R"({"Nodes":null,"NodeNames":["h1"],)"
                   R"("FailedNodes":{"h2":"Insufficient nvidia.com/gpumem"},)"
                   R"("FailedAndUnresolvableNodes":{"h3":"node(s) have no HAMi vGPU devices"},)"
                   R"("Error":""})");
    (*recorder)->Flush();
    ASSERT_EQ((*recorder)->stats().recorded, 1U);
  }
  void TearDown() override { RemoveDir(dir_); }

  ReplayReport ReplayWithTheSameConfiguration(const std::string& dir) {
    return Replay(dir, Load(dir_, kHamiConfig));
  }

  std::string dir_;
  std::string record_dir_;
};

TEST_F(ReplayHamiTest, TheDeviceUsageIsRecordedPerNode) {
  const std::vector<std::string> lines = RecordLines(record_dir_);
  ASSERT_EQ(lines.size(), 1U);
  const json usage = json::parse(lines[0])["usage"];
  EXPECT_EQ(usage["h1"]["states"],
            json::parse(R"({"HamiVgpu":{"devices":[{"uuid":"GPU-h1a","used":1,"memory":30000,)"
                        R"("cores":20}]}})"));
  EXPECT_EQ(usage["h2"]["states"]["HamiVgpu"]["devices"].size(), 2U);
  EXPECT_EQ(usage["h3"]["states"], json::object());
}

TEST_F(ReplayHamiTest, TheSameConfigurationReplaysTheDecisionExactly) {
  const ReplayReport r = ReplayWithTheSameConfiguration(record_dir_);
  EXPECT_EQ(r.replayed, 1U);
  EXPECT_EQ(r.without_state, 0U);
  EXPECT_EQ(r.changed, 0U) << FormatReplayText(r, true);
  EXPECT_TRUE(r.state_errors.empty());
}

// Without the recorded usage every device is free: h2 would pass. This is
// what the record's state is for.
TEST_F(ReplayHamiTest, WithoutTheRecordedUsageTheFullNodeWouldPass) {
  const std::string old_dir = dir_ + "/old";
  ASSERT_EQ(::mkdir(old_dir.c_str(), 0700), 0);
  {
    std::ofstream out(old_dir + "/records-20261201T000000Z-000000.jsonl");
    for (const std::string& line : RecordLines(record_dir_)) {
      json doc = json::parse(line);
      doc.erase("policyState");  // as an older recorder wrote it
      for (auto& [node, usage] : doc["usage"].items()) {
        usage.erase("states");
      }
      out << doc.dump() << "\n";
    }
  }
  const ReplayReport r = ReplayWithTheSameConfiguration(old_dir);
  EXPECT_EQ(r.without_state, 1U);
  ASSERT_EQ(r.requests.size(), 1U);
  EXPECT_EQ(r.requests[0].diff,
            (std::vector<std::string>{
                "h2: unschedulable \"Insufficient nvidia.com/gpumem\" -> pass"}));
}

TEST(HamiStateCodecTest, RoundTripsAndRejectsWhatItCannotHold) {
  const policy::hami::VgpuAccounting codec;
  EXPECT_EQ(codec.StateName(), "HamiVgpu");
  const std::string text =
      R"({"devices":[{"cores":20,"memory":30000,"used":1,"uuid":"GPU-a"},)"
      R"({"cores":0,"memory":5000,"used":2,"uuid":"GPU-b"}]})";
  auto state = codec.DecodeState(text);
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  ASSERT_NE(*state, nullptr);
  const auto& devices = static_cast<const policy::hami::VgpuNodeState&>(**state).devices;
  ASSERT_EQ(devices.size(), 2U);
  EXPECT_EQ(devices[1].uuid, "GPU-b");
  EXPECT_EQ(devices[1].use.used, 2);
  EXPECT_EQ(devices[1].use.memory, 5000);
  EXPECT_EQ(codec.EncodeState(**state), text);

  // Nothing counted: no state, as the accounting keeps it.
  auto empty = codec.DecodeState(R"({"devices":[{"uuid":"GPU-a","used":0,"memory":0,"cores":0}]})");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, nullptr);

  const auto error = [&](const std::string& json_text) {
    auto s = codec.DecodeState(json_text);
    return s.ok() ? std::string("ok") : std::string(s.status().message());
  };
  EXPECT_EQ(error("[]"), R"(HamiVgpu state: expected {"devices": [...]})");
  EXPECT_EQ(error(R"({"devices":[{"uuid":"GPU-a","used":"1","memory":0,"cores":0}]})"),
            "HamiVgpu state: each device needs uuid (a string), used, memory and cores "
            "(integers)");
  EXPECT_EQ(error(R"({"devices":[{"uuid":"","used":1,"memory":0,"cores":0}]})"),
            "HamiVgpu state: a device's uuid is empty or longer than 256 bytes");
  EXPECT_EQ(error(R"({"devices":[{"uuid":")" + std::string(257, 'x') +
                  R"(","used":1,"memory":0,"cores":0}]})"),
            "HamiVgpu state: a device's uuid is empty or longer than 256 bytes");
  EXPECT_EQ(error(R"({"devices":[{"uuid":"GPU-a","used":1,"memory":0,"cores":0},)"
                  R"({"uuid":"GPU-a","used":1,"memory":0,"cores":0}]})"),
            "HamiVgpu state: device GPU-a is listed twice");
  json many = {{"devices", json::array()}};
  for (size_t i = 0; i <= policy::hami::kMaxRecordedDevices; ++i) {
    many["devices"].push_back(
        {{"uuid", "GPU-" + std::to_string(i)}, {"used", 1}, {"memory", 0}, {"cores", 0}});
  }
  EXPECT_EQ(error(many.dump()), "HamiVgpu state: more than 64 devices");
}

}  // namespace
}  // namespace schedext::record
