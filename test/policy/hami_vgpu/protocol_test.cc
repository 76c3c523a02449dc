#include "policy/builtin/hami_vgpu/protocol.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "testing/model_builders.h"

namespace schedext::policy::hami {
namespace {

TEST(HamiProtocolTest, DecodesTheJsonRegisterForm) {
  const std::string text =
      R"([{"id":"GPU-a","index":0,"count":10,"devmem":32768,"devcore":100,)"
      R"("type":"NVIDIA-Tesla V100","numa":1,"mode":"hami-core","health":true,)"
      R"("migProfiles":[{"name":"1g","placements":[{"start":0,"size":1}]}],"custominfo":{"x":[1,{"y":null}]}},)"
      R"({"ID":"GPU-b","Count":4,"devmem":16384,"type":"NVIDIA-T4"}])";
  NodeDevices out;
  ASSERT_TRUE(DecodeRegister(text, out));
  ASSERT_EQ(out.size, 2);
  const Device& a = out.devices[0];
  EXPECT_EQ(a.uuid, "GPU-a");
  EXPECT_EQ(a.count, 10);
  EXPECT_EQ(a.memory, 32768);
  EXPECT_EQ(a.cores, 100);
  EXPECT_EQ(a.type, "NVIDIA-Tesla V100");
  EXPECT_EQ(a.numa, 1);
  EXPECT_EQ(a.mode, "hami-core");
  EXPECT_TRUE(a.healthy);
  // Go's json matches keys case-insensitively; omitted fields stay zero
  // (health false, mode "").
  const Device& b = out.devices[1];
  EXPECT_EQ(b.uuid, "GPU-b");
  EXPECT_EQ(b.count, 4);
  EXPECT_EQ(b.cores, 0);
  EXPECT_EQ(b.mode, "");
  EXPECT_FALSE(b.healthy);
}

TEST(HamiProtocolTest, DecodesTheTextRegisterForms) {
  NodeDevices out;
  ASSERT_TRUE(DecodeRegister(
      "GPU-0,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true,3,mps:"
      "GPU-1,5,16384,50,NVIDIA-T4,1,False:",
      out));
  ASSERT_EQ(out.size, 2);
  EXPECT_EQ(out.devices[0].index, 3);
  EXPECT_EQ(out.devices[0].mode, "mps");
  EXPECT_TRUE(out.devices[0].healthy);
  // Seven fields: index 0 and hami-core.
  EXPECT_EQ(out.devices[1].uuid, "GPU-1");
  EXPECT_EQ(out.devices[1].count, 5);
  EXPECT_EQ(out.devices[1].cores, 50);
  EXPECT_EQ(out.devices[1].numa, 1);
  EXPECT_EQ(out.devices[1].index, 0);
  EXPECT_EQ(out.devices[1].mode, "hami-core");
  EXPECT_FALSE(out.devices[1].healthy);
}

TEST(HamiProtocolTest, RefusesWhatHamiRefuses) {
  NodeDevices out;
  for (const std::string text : {
           "",
           "GPU-0,10,32768,100,NVIDIA,0,true",            // no ':'
           "GPU-0,10,32768,100,NVIDIA,0,true,1:",         // 8 fields
           "GPU-0,10,32768,100,NVIDIA,0,yes:",            // not a Go bool
           "GPU-0,10,3000000000,100,NVIDIA,0,true:",      // memory beyond int32
           "GPU-0,10,32768,100,NVIDIA,0,true,-1,mps:",    // negative index
           "nothing:",                                    // a segment without ','
           R"([{"id":"GPU-\u0041"}])",                    // escapes are not read
           R"([{"id":"GPU-a","devmem":1.5}])",            // fraction into int32
           R"([{"id":"GPU-a"})",                          // unterminated
       }) {
    EXPECT_FALSE(DecodeRegister(text, out)) << text;
    EXPECT_EQ(out.size, 0) << text;
  }
  std::string many = "[";
  for (int i = 0; i <= kMaxDevices; ++i) {
    many += std::string(i > 0 ? "," : "") + R"({"id":"GPU-)" + std::to_string(i) + R"("})";
  }
  many += "]";
  EXPECT_FALSE(DecodeRegister(many, out));
}

TEST(HamiProtocolTest, HandshakeStaleness) {
  // 2024-01-23 04:30:04 UTC.
  constexpr int64_t kWritten = 1705984204;
  EXPECT_FALSE(HandshakeStale("Requesting_2024-01-23 04:30:04", kWritten + 59));
  EXPECT_TRUE(HandshakeStale("Requesting_2024-01-23 04:30:04", kWritten + 60));
  EXPECT_FALSE(HandshakeStale("Reported_2024-01-23 04:30:04", kWritten + 3600));
  EXPECT_TRUE(HandshakeStale("Deleted_2024-01-23 04:30:04", kWritten));
  EXPECT_FALSE(HandshakeStale("Requesting_yesterday", kWritten + 3600));
}

TEST(HamiProtocolTest, ContainerRequestsAndDefaults) {
  test::TestArena arena;
  const ResourceNames names;
  const auto request = [&](std::initializer_list<std::pair<std::string_view, int64_t>> requests,
                           std::initializer_list<std::pair<std::string_view, int64_t>> limits,
                           const ResourceNames& n) {
    const model::PodInfo pod = test::PodBuilder(arena).Container(requests, limits).Build();
    return RequestOf(pod.containers[0], n);
  };
  // Only the count: the whole memory of each device, no cores.
  ContainerRequest r = request({}, {{"nvidia.com/gpu", 2}}, names);
  EXPECT_EQ(r.nums, 2);
  EXPECT_EQ(r.memory, 0);
  EXPECT_EQ(r.memory_percent, 100);
  EXPECT_EQ(r.cores, 0);
  r = request({}, {{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", 3000}, {"nvidia.com/gpucores", 30}},
              names);
  EXPECT_EQ(r.memory, 3000);
  EXPECT_EQ(r.memory_percent, 101);
  EXPECT_EQ(r.cores, 30);
  r = request({}, {{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem-percentage", 25}}, names);
  EXPECT_EQ(r.memory, 0);
  EXPECT_EQ(r.memory_percent, 25);
  // The limits win over the requests, amount by amount.
  r = request({{"nvidia.com/gpu", 3}, {"nvidia.com/gpumem", 500}}, {{"nvidia.com/gpu", 1}}, names);
  EXPECT_EQ(r.nums, 1);
  EXPECT_EQ(r.memory, 500);
  ResourceNames defaults;
  defaults.default_memory = 2048;
  defaults.default_cores = 10;
  r = request({}, {{"nvidia.com/gpu", 1}}, defaults);
  EXPECT_EQ(r.memory, 2048);
  EXPECT_EQ(r.memory_percent, 101);
  EXPECT_EQ(r.cores, 10);
  // No count: no request, whatever else it names.
  r = request({}, {{"nvidia.com/gpumem", 3000}}, names);
  EXPECT_EQ(r.nums, 0);
}

TEST(HamiProtocolTest, TypeAndUuidRules) {
  test::TestArena arena;
  const model::PodInfo pod = test::PodBuilder(arena)
                                 .Annotation(kUseTypeAnnotation, "a100, v100")
                                 .Annotation(kNoUseUuidAnnotation, " GPU-b ,GPU-c")
                                 .Annotation(kVgpuModeAnnotation, "hami-core")
                                 .Annotation(kNumaBindAnnotation, "true")
                                 .Build();
  const PodRules rules = RulesOf(pod.annotations);
  EXPECT_TRUE(rules.numa_bind);
  Device d;
  d.uuid = "GPU-a";
  d.type = "NVIDIA-Tesla V100-PCIE";
  d.mode = "hami-core";
  EXPECT_TRUE(TypeAllowed(rules, d));
  EXPECT_TRUE(UuidAllowed(rules, d));
  d.type = "NVIDIA-T4";
  EXPECT_FALSE(TypeAllowed(rules, d));
  d.type = "NVIDIA-A100";
  d.mode = "mps";
  EXPECT_FALSE(TypeAllowed(rules, d));
  d.uuid = "GPU-b";
  EXPECT_FALSE(UuidAllowed(rules, d));
}

TEST(HamiProtocolTest, AllocationTextRoundTrip) {
  std::string text;
  const std::vector<ChosenDevice> first = {{"GPU-a", 3000, 30}, {"GPU-b", 3000, 30}};
  AppendContainer(first, text);
  AppendContainer({}, text);
  const std::vector<ChosenDevice> third = {{"GPU-a", 5000, 0}};
  AppendContainer(third, text);
  EXPECT_EQ(text, "GPU-a,NVIDIA,3000,30:GPU-b,NVIDIA,3000,30:;;GPU-a,NVIDIA,5000,0:;");
  std::vector<std::string> seen;
  EXPECT_TRUE(ForEachAllocated(text, [&](const AllocatedDevice& d) {
    seen.push_back(std::string(d.uuid) + "/" + std::to_string(d.memory) + "/" +
                   std::to_string(d.cores));
  }));
  EXPECT_EQ(seen, (std::vector<std::string>{"GPU-a/3000/30", "GPU-b/3000/30", "GPU-a/5000/0"}));
  EXPECT_FALSE(ForEachAllocated("GPU-a,NVIDIA,x,0:", [](const AllocatedDevice&) {}));
}

}  // namespace
}  // namespace schedext::policy::hami
